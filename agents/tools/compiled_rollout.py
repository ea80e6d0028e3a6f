"""Many steps of a policy on a batch of environments in one session call.

On a batch of environments written in TensorFlow operations (such as
`agents.environments.InGraphTaskBatch`) the policy, a set of pure functions,
and the environments step together in one `tf.while_loop` inside one
`tf.function(jit_compile=True)`: XLA compiles the whole rollout, which then
runs as a single operation of the TF1 graph, without the per-operation cost
of the graph (about 1-3 us per node) at every step. On Python or C
environments behind the numpy_function bridge the same loop runs as plain
graph ops, one session call instead of one per step (see
`tools.rollout_env`). Summaries, checks that raise and variable writes stay
outside the loop.

The environments stop at the first step whose actions, observations or
rewards are not finite; the rollout's result then fails as the checks of
the one-step path fail (`observ : Tensor had NaN values`, and so on) and no
variable is written.
"""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import nested
from agents.tools import rollout_env
from agents.tools import compiled_ops


class Policy:
    """The interface of a policy that a compiled rollout calls.

    Everything is a pure function of tensors, since it runs inside the
    compiled loop: the policy may read variables (its weights, normalizer
    statistics) but must not write them, and random numbers must come from
    stateless operations keyed by the given key.
    """

    def initial_state(self, batch_size):
        """The per-environment state at the beginning of episodes.

        Args:
            batch_size: Python int of the environments.

        Returns:
            Nested structure of tensors `[batch_size, ...]`, or None for a
            policy without state.
        """
        raise NotImplementedError

    def step(self, observ, state, key):
        """The actions of all environments and their next state.

        Args:
            observ: float32 tensor of the batch of observations.
            state: The nested per-environment state, or None.
            key: int64 tensor `[2]`, the seed of stateless random ops,
                different at every step.

        Returns:
            Tuple of the action batch and the next state (None without
            state).
        """
        raise NotImplementedError


def first_episodes(batch_env, policy, num_steps, key_offset=0):
    """Begin all episodes anew and run `num_steps` steps in one session call.

    Every environment begins an episode, steps under the policy's actions,
    and begins a new episode on the step after one ends, as `tools.simulate`
    does on a batch reset at the first step; the first episode of each
    environment is scored. The batch's variables are then set as that many
    steps of `tools.simulate` would have left them (observations, flags and
    outcome of the last step, and on an in-graph task its states, step
    counts and random counter), so that a rollout here and the one-step
    path draw the same initial states and give the same scores for the same
    actions.

    On an in-graph task the loop is one XLA-compiled call, elsewhere a plain
    graph loop (see the module's docstring, also for non-finite values).

    Args:
        batch_env: An in-graph task (`InGraphTaskBatch`) or a
            `tools.InGraphBatchEnv`; the variables `observ`, `done`, and
            where it has them `action`, `reward` and `truncated`, receive
            those of the last step.
        policy: `Policy`.
        num_steps: Python int of the steps, at least 1.
        key_offset: Integer added to the random key of the policy, so that
            rollouts of different purposes draw different numbers.

    Returns:
        Tuple of the bool tensor `[batch]` of the environments whose first
        episode ended, and the float32 tensor `[batch]` of those episodes'
        scores (the running score of episodes that did not end), both
        available once the variables were written.

    Raises:
        ValueError: When `num_steps` is not a positive Python int, or the
            batch is neither kind.
    """
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or (
            num_steps < 1):
        raise ValueError(
            f'num_steps must be a positive Python int, got {num_steps!r}.')
    env = rollout_env.rollout_env(batch_env)
    if env is None:
        raise ValueError(
            f'first_episodes needs an in-graph task or a '
            f'tools.InGraphBatchEnv, got {type(batch_env).__name__}.')
    size = len(batch_env)

    def _rollout(seed, env_state):
        zeros = tf.zeros([size], tf.float32)
        flags = tf.zeros([size], tf.bool)
        observ = tf.zeros_like(batch_env.observ)
        action = tf.zeros_like(batch_env.action)
        carry = _Carry(
            index=tf.constant(0), env=env_state, observ=observ,
            done=tf.ones([size], tf.bool), action=action, reward=zeros,
            truncated=flags, policy_state=_initial_state(policy, size),
            score=zeros, first_done=flags, first_score=zeros,
            bad=no_failure(observ, action))

        def _running(carry):
            return tf.logical_and(
                carry.index < num_steps, tf.logical_not(carry.bad.failed))

        def _step(carry):
            return [_rollout_step(
                env, policy, carry, size,
                lambda env_state: tf.stack([
                    seed, key_offset + env.resets(env_state) * num_steps +
                    tf.cast(carry.index, tf.int64)]))]

        carry = tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]
        # Episodes that did not end report their running score.
        first_score = compiled_ops.where(
            carry.first_done, carry.first_score, carry.score)
        return carry._replace(first_score=first_score, policy_state=())

    with tf.name_scope('compiled_rollout'):
        if env.jit_compile:
            _rollout = compiled_ops.compiled_function(_rollout)
        carry = _rollout(env.rollout_seed(), env.initial())
        with tf.control_dependencies(failure_checks(carry.bad)):
            writes = env.assign(carry.env) + [
                batch_env.observ.assign(carry.observ),
                batch_env.done.assign(carry.done)]
            for name in ('action', 'reward', 'truncated'):
                variable = getattr(batch_env, name, None)
                if variable is not None:
                    writes.append(variable.assign(getattr(carry, name)))
        with tf.control_dependencies(writes):
            return tf.identity(carry.first_done), tf.identity(
                carry.first_score)


def _initial_state(policy, size):
    """The policy's initial state; an empty tuple stands for none."""
    state = policy.initial_state(size)
    return () if state is None else state


def _rollout_step(env, policy, carry, size, key_of):
    """One step of a rollout: begin episodes where the last ended, act,
    step, and score the first episodes.

    Args:
        env: `rollout_env` of the batch.
        policy: `Policy`.
        carry: `_Carry` before the step.
        size: Python int, the environments of the batch.
        key_of: Function from the env state after the resets to the random
            key of the policy's step.

    Returns:
        `_Carry` after the step.
    """
    begin = carry.done
    env_state, observ = env.begin(carry.env, begin, carry.observ)
    policy_state = _where_nested(
        begin, _initial_state(policy, size), carry.policy_state)
    score = compiled_ops.where(begin, tf.zeros_like(carry.score), carry.score)
    action, policy_state = policy.step(
        observ, _none_if_empty(policy_state), key_of(env_state))
    policy_state = () if policy_state is None else policy_state
    action = tf.cast(action, carry.action.dtype)
    env_state, observ, reward, done, truncated, _ = env.step(
        env_state, action)
    score = score + reward
    ended_first = tf.logical_and(done, tf.logical_not(carry.first_done))
    return _Carry(
        index=carry.index + 1, env=env_state, observ=observ,
        done=done, action=action, reward=reward, truncated=truncated,
        policy_state=policy_state, score=score,
        first_done=tf.logical_or(carry.first_done, done),
        first_score=compiled_ops.where(ended_first, score, carry.first_score),
        bad=first_failure(carry.bad, action, observ, reward))


def _none_if_empty(state):
    """None for the empty tuple that stands for no state, else the state."""
    if isinstance(state, tuple) and not state:
        return None
    return state


def no_failure(observ, action):
    """The `Failure` record of a loop that has not failed.

    A compiled loop carries the record from step to step (`first_failure`)
    and stops where it failed; outside the compiled call, `failure_checks`
    fail the session run as the one-step path's checks would.

    Args:
        observ: Tensor of a batch of observations, for the shape.
        action: Tensor of a batch of actions, for the shape.

    Returns:
        `Failure` of zeros, not failed.
    """
    return Failure(
        failed=tf.constant(False), action=tf.zeros_like(action),
        observ=tf.zeros_like(observ),
        reward=tf.zeros([observ.shape[0]], tf.float32))


def first_failure(failure, action, observ, reward):
    """The record after a step: the values of the first step not finite.

    Args:
        failure: `Failure` before the step.
        action: The step's actions (checked where floating point).
        observ: The step's observations.
        reward: The step's rewards.

    Returns:
        `Failure`.
    """
    checked = [observ, reward]
    if action.dtype.is_floating:
        checked.append(action)
    finite = compiled_ops.all_finite(checked)
    fails = tf.logical_and(tf.logical_not(finite), tf.logical_not(
        failure.failed))
    return Failure(
        failed=tf.logical_or(failure.failed, fails),
        action=compiled_ops.where(fails, action, failure.action),
        observ=compiled_ops.where(fails, observ, failure.observ),
        reward=compiled_ops.where(fails, reward, failure.reward))


def failure_checks(failure):
    """Checks that fail as the one-step path does where a step failed.

    In the order of the one-step path's checks, actions first: for example
    `action : Tensor had NaN values`.

    Args:
        failure: `Failure` after a compiled loop.

    Returns:
        List of the last check's tensor; run after the earlier ones.
    """
    checks = []
    for name in ('action', 'observ', 'reward'):
        value = getattr(failure, name)
        if value.dtype.is_floating:
            with tf.control_dependencies(checks):
                checks = [tf.debugging.check_numerics(value, name)]
    return checks


def _where_nested(condition, new, old):
    """Per environment, the nested `new` where `condition`, else `old`."""
    # With a condition of rank 1, `where` selects whole rows.
    return nested.map(
        lambda new, old: compiled_ops.where(condition, new, old), new, old)


# The loop state of a rollout: the batch's loop state (see
# `tools.rollout_env`) and variables, the policy's state,
# the scores, and the record of the first step that was not finite.
_Carry = collections.namedtuple('_Carry', (
    'index, env, observ, done, action, reward, truncated, policy_state, '
    'score, first_done, first_score, bad'))

# Whether a step of a compiled loop was not finite, and the actions,
# observations and rewards of the first such step.
Failure = collections.namedtuple('Failure', 'failed, action, observ, reward')
