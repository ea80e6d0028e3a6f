"""One graph operation that steps a batch of environments and an algorithm,
whose methods run in control blocks in turn: their results must depend on
their side effects, since they order the next stage."""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import in_graph_env
from agents.tools import streaming_mean


def simulate(batch_env, algo, log=True, reset=False):
    """Define one step of the environments and the algorithm: the bool
    tensor of the episodes that ended, the float32 one of their scores and
    the summary string.

    The step resets and begins the episodes that are done (all with
    `reset`), asks for actions, steps the environments, hands the
    transition to the algorithm and ends the episodes that ended, whose
    scores and lengths enter running means. Episodes cut short by `reset`
    or a restart (`batch_env.restarted`) are not ended nor done.

    Args:
        batch_env: In-graph batch like `tools.InGraphBatchEnv`.
        algo: Algorithm with `begin_episode(agent_indices)`,
            `perform(agent_indices, observ)` (actions and a summary),
            `experience(agent_indices, observ, action, reward, done,
            nextob)` and `end_episode(agent_indices)`, returning summaries.
        log: Bool or bool tensor: include the mean score and length of the
            episodes ended since the last logged step, and restart them.
        reset: Bool or bool tensor: begin all episodes anew first.
    """
    size = len(batch_env)
    with tf.variable_scope('simulate_temporary'):
        tallies = _Tallies(
            in_graph_env.define_variable('score', (size,), tf.float32),
            in_graph_env.define_variable('length', (size,), tf.int32),
            streaming_mean.StreamingMean((), tf.float32, 'mean_score'),
            streaming_mean.StreamingMean((), tf.float32, 'mean_length'))
    with tf.name_scope('simulate'):
        log = tf.convert_to_tensor(log, tf.bool)
        reset = tf.convert_to_tensor(reset, tf.bool)
        begin_indices = tf.cond(
            reset, lambda: tf.range(size),
            lambda: _done_indices(batch_env.done))
        begin_episode = tf.cond(
            tf.size(begin_indices) > 0,
            lambda: _begin_episode(batch_env, algo, tallies, begin_indices),
            str)
        step_summary, done, new_score, new_length = _step(
            batch_env, algo, tallies, begin_episode)
        with tf.control_dependencies([step_summary]):
            end_indices = _done_indices(done)
        end_episode = tf.cond(
            tf.size(end_indices) > 0,
            lambda: _end_episode(
                algo, tallies, end_indices, new_score, new_length),
            str)
        with tf.control_dependencies([end_episode]):
            summaries = _summaries(tallies, log)
        summary = tf.summary.merge(
            [begin_episode, step_summary, end_episode, summaries])
        return (identity_after([summary], done),
                identity_after([summary], new_score), summary)


# The running episodes' scores and lengths, the means of the ended ones.
_Tallies = collections.namedtuple(
    '_Tallies', 'score, length, mean_score, mean_length')


def _begin_episode(batch_env, algo, tallies, agent_indices):
    """Reset environments and their tallies, then begin their episodes."""
    observ = batch_env.reset(agent_indices)
    reset_score = tf.scatter_update(
        tallies.score, agent_indices, tf.zeros_like(agent_indices, tf.float32))
    reset_length = tf.scatter_update(
        tallies.length, agent_indices, tf.zeros_like(agent_indices))
    resets = [observ, reset_score, reset_length]
    with tf.control_dependencies(resets):
        summary = algo.begin_episode(agent_indices)
    return identity_after(resets, summary)


def _step(batch_env, algo, tallies, begin_episode):
    """Act, step and experience: summary, ended flags, scores, lengths."""
    agent_indices = tf.range(len(batch_env))
    restarted = getattr(batch_env, 'restarted', None)
    with tf.control_dependencies([begin_episode]):
        # A snapshot of the observations before the step overwrites them.
        observ = tf.identity(batch_env.observ)
    # A block of its own: ops and conditionals whose inputs come from
    # outside it get its control inputs (see `identity_after`).
    with tf.control_dependencies([begin_episode]):
        action, perform_summary = algo.perform(agent_indices, observ)
    with tf.control_dependencies([observ, perform_summary]):
        step = batch_env.simulate(action)
    # The outcome, read once for every consumer.
    with tf.control_dependencies([step]):
        action = tf.identity(batch_env.action)
        reward = tf.identity(batch_env.reward)
        done = tf.identity(batch_env.done)
        nextob = tf.identity(batch_env.observ)
        ones = tf.ones_like(agent_indices)
        ended = done
        if restarted is not None:
            # An episode interrupted by a failure has no result.
            ended = tf.logical_and(
                done, tf.logical_not(tf.identity(restarted)))
    new_score = tf.identity(tallies.score.assign_add(reward))
    new_length = tf.identity(tallies.length.assign_add(ones))
    with tf.control_dependencies([step]):
        # A block of its own again, as for perform.
        experience_summary = algo.experience(
            agent_indices, observ, action, reward, done, nextob)
    summary = tf.summary.merge([perform_summary, experience_summary])
    return summary, ended, new_score, new_length


def _end_episode(algo, tallies, agent_indices, new_score, new_length):
    """Submit the ended episodes' scores and lengths, then end them."""
    episode_score = tf.gather(new_score, agent_indices)
    episode_length = tf.cast(tf.gather(new_length, agent_indices), tf.float32)
    submits = [
        tallies.mean_score.submit(episode_score),
        tallies.mean_length.submit(episode_length)]
    with tf.control_dependencies(submits):
        summary = algo.end_episode(agent_indices)
    return identity_after(submits, summary)


def _summaries(tallies, log):
    """The mean score and length since the last logged step, where logged."""
    # tf.cond(pred, fn, str): a summary where the predicate holds, else ''
    # (the empty summary); one around both spares unlogged steps the rest.

    def _mean(name, mean):
        return tf.cond(
            mean.count > 0, lambda: tf.summary.scalar(name, mean.clear()), str)

    def _define():
        return tf.summary.merge([
            _mean('mean_score', tallies.mean_score),
            _mean('mean_length', tallies.mean_length)])

    return tf.cond(log, _define, str)


def _done_indices(done):
    """The int32 indices where `done` is true."""
    return tf.cast(tf.where(done)[:, 0], tf.int32)


def identity_after(dependencies, tensor):
    """A copy of a tensor (or variable, or string) available after the
    dependencies: an op made in a `tf.control_dependencies` block gets no
    control inputs where an input was made in the block, and a `tf.cond`
    made there need not wait for them; one whose predicate is such a copy
    waits in both branches."""
    tensor = tf.convert_to_tensor(tensor)
    with tf.control_dependencies(dependencies):
        return tf.identity(tensor)
