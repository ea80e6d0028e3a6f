"""Tests for simulate on worker processes of mock environments."""

import collections
import functools
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.tools import batch_env
from agents.tools import external_process
from agents.tools import in_graph_batch_env
from agents.testing import mock_algorithm
from agents.testing import mock_environment
from agents.tools.simulate import simulate


@pytest.fixture(name='env')
def fixture_env():
    """In-graph batch of workers with episodes of 2, 3 and 5 steps."""
    envs = [
            external_process.ExternalProcess(functools.partial(
                    mock_environment.MockEnvironment, durations=(duration,)))
            for duration in (2, 3, 5)]
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, blocking=False))
        try:
            yield env
        finally:
            env.close()


def _summary_values(summary):
    """Return the scalar values of a serialized summary by tag."""
    return {value.tag: value.simple_value
            for value in tf.Summary.FromString(summary).value}


# Done flags and scores of the first three steps after every environment of
# the fixture began an episode.
_FROM_RESET = [
        ([False, False, False], [1, 1, 1]),
        ([True, False, False], [3, 3, 3]),
        ([False, True, False], [1, 6, 6])]


def _run(sess, tensors, count, feed=None):
    """Run the simulation several times, returning done and score lists."""
    trace = []
    for _ in range(count):
        done, score, _ = sess.run(tensors, feed)
        trace.append((done.tolist(), score.tolist()))
    return trace


def _run_algorithm(env, count):
    """Simulate a mock algorithm for `count` steps; return the algorithm."""
    algo = mock_algorithm.MockAlgorithm(env)
    tensors = simulate(env, algo)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _run(sess, tensors, count)
    return algo


def test_done_scores_and_episodes_step_by_step(env):
    """Episodes of different lengths end and restart independently."""
    algo = mock_algorithm.MockAlgorithm(env)
    done, score, summary = simulate(env, algo, log=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        trace = _run(sess, (done, score, summary), 11)
    assert trace == _FROM_RESET + [
            ([True, False, False], [3, 1, 10]),
            ([False, False, True], [1, 3, 15]),
            ([True, True, False], [3, 6, 1]),
            ([False, False, False], [1, 1, 3]),
            ([True, False, False], [3, 3, 6]),
            ([False, True, False], [1, 6, 10]),
            ([True, False, True], [3, 1, 15]),
            ([False, False, False], [1, 3, 1])]
    # Finished and running episodes of every worker, by their step counts.
    assert [env[index].steps for index in range(3)] == [
            [2, 2, 2, 2, 2, 1], [3, 3, 3, 2], [5, 5, 1]]


def test_algorithm_calls(env):
    """The algorithm sees each stage with the right agent indices."""
    algo = _run_algorithm(env, 6)
    everyone = [0, 1, 2]
    step = [('perform', everyone), ('experience', everyone)]
    assert algo.calls == (
            [('begin_episode', everyone)] + step +
            step + [('end_episode', [0])] +
            [('begin_episode', [0])] + step + [('end_episode', [1])] +
            [('begin_episode', [1])] + step + [('end_episode', [0])] +
            [('begin_episode', [0])] + step + [('end_episode', [2])] +
            [('begin_episode', [2])] + step + [('end_episode', [0, 1])])


def test_experience_transitions(env):
    """Transitions hold the observations before and after each step."""
    algo = _run_algorithm(env, 3)
    observs = [
            [[[0, 0]] * 3, [[1, 1]] * 3],
            [[[1, 1]] * 3, [[2, 2]] * 3],
            [[[0, 0], [2, 2], [2, 2]], [[1, 1], [3, 3], [3, 3]]]]
    rewards = [[1, 1, 1], [2, 2, 2], [1, 3, 3]]
    dones = [[False] * 3, [True, False, False], [False, True, False]]
    assert len(algo.transitions) == 3
    for transition, observ, reward, done in zip(
            algo.transitions, observs, rewards, dones):
        assert transition.agent_indices == [0, 1, 2]
        assert transition.observ.tolist() == observ[0]
        assert transition.nextob.tolist() == observ[1]
        assert transition.action.tolist() == [[0, 0, 0]] * 3
        assert transition.reward.tolist() == reward
        assert transition.done.tolist() == done


def test_reset_begins_every_episode(env):
    """Feeding reset restarts all episodes, also unfinished ones."""
    algo = mock_algorithm.MockAlgorithm(env)
    reset = tf.placeholder(tf.bool, ())
    tensors = simulate(env, algo, log=False, reset=reset)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        trace = _run(sess, tensors, 3, {reset: False})
        algo.calls.clear()
        trace += _run(sess, tensors, 1, {reset: True})
        assert algo.calls == [
                ('begin_episode', [0, 1, 2]),
                ('perform', [0, 1, 2]),
                ('experience', [0, 1, 2])]
        trace += _run(sess, tensors, 2, {reset: False})
        trace += _run(sess, tensors, 1, {reset: True})
    assert trace == _FROM_RESET * 2 + _FROM_RESET[:1]
    # Reset episodes stop where they were cut short.
    assert [env[index].steps for index in range(3)] == [
            [2, 1, 2, 1, 1], [3, 3, 1], [3, 3, 1]]


def test_mean_summaries(env):
    """Logged summaries hold the means of the episodes since the last log."""
    algo = mock_algorithm.MockAlgorithm(env)
    log = tf.placeholder(tf.bool, ())
    tensors = simulate(env, algo, log=log)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        summaries = []
        for should_log in [True, True, False, False, False, True, True, True]:
            _, _, summary = sess.run(tensors, {log: should_log})
            summaries.append(_summary_values(summary))
    # Episodes end at steps 2 (score 3), 3 (6), 4 (3), 5 (15), 6 (3 and 6),
    # and 8 (3), with lengths of 2, 3, 2, 5, 2 and 3, and 2 steps.
    assert summaries == [
            {},
            {'mean_score': 3, 'mean_length': 2},
            {}, {}, {},
            {'mean_score': pytest.approx(33 / 5), 'mean_length': 3},
            {},
            {'mean_score': 3, 'mean_length': 2}]


def test_python_bools_and_variables(env):
    """Python bools work; state lives in temporary, untrained variables."""
    algo = mock_algorithm.MockAlgorithm(env)
    tensors = simulate(env, algo, log=True, reset=True)
    names = [var.name for var in tf.global_variables()]
    assert [name for name in names if name.startswith('simulate')] == [
            'simulate_temporary/score:0', 'simulate_temporary/length:0',
            'simulate_temporary/mean_score/sum:0',
            'simulate_temporary/mean_score/count:0',
            'simulate_temporary/mean_length/sum:0',
            'simulate_temporary/mean_length/count:0']
    assert not tf.trainable_variables()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        trace = _run(sess, tensors, 3)
    assert trace == [([False, False, False], [1, 1, 1])] * 3
    assert algo.calls[::3] == [('begin_episode', [0, 1, 2])] * 3


def test_truncated_episodes():
    """An algorithm can read which episodes were truncated."""
    envs = [
            mock_environment.MockEnvironment(durations=(1,), truncate=True),
            mock_environment.MockEnvironment(durations=(2,))]
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, True))
        algo = mock_algorithm.MockAlgorithm(env, action=0.5)
        done, _, _ = simulate(env, algo)
        with tf.control_dependencies([done]):
            truncated = tf.identity(env.truncated)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            trace = [tuple(x.tolist() for x in sess.run((done, truncated)))
                     for _ in range(2)]
    assert trace == [
            ([True, False], [True, False]), ([True, True], [True, False])]
    assert np.array(envs[1].actions).tolist() == [[0.5] * 3] * 2


class ConditionalAlgorithm:
    """Algorithm that, like PPO, works inside conditionals.

    Each method reads the environment's variables inside a `tf.cond` on
    `is_training`, records them, and returns a nested `tf.cond` on
    `should_log` built inside a control block after the recording. The
    nested conditional captures a tensor created in that block, so it gets
    no control inputs, and when logging is off its output does not wait for
    the recording. Simulate must not rely on such outputs for ordering.

    The outer conditionals capture only the arguments and the variables, so
    the control inputs simulate puts around each call reach them; a
    conditional that captures a tensor the method created first would get
    none, and its reads of variables would be unordered.
    """

    def __init__(self, env, is_training, should_log):
        self._batch_env = env
        self._is_training = is_training
        self._should_log = should_log
        self.reads = []

    def begin_episode(self, agent_indices):
        """Record the observations after the reset."""
        return self._define_branch(
                'begin_episode', agent_indices, self._batch_env.observ)

    def perform(self, agent_indices, observ):
        """Record the given and the stored observations; act with zeros.

        The actions come out of the conditional after the recording, as
        PPO's come out of its sampling conditional.
        """

        def branch():
            record = self._define_record(
                    'perform', agent_indices, observ, self._batch_env.observ)
            with tf.control_dependencies([record]):
                return tf.zeros_like(self._batch_env.action)

        action = tf.cond(
                self._is_training, branch,
                lambda: tf.zeros_like(self._batch_env.action))
        return action, tf.constant('')

    def experience(
            self, agent_indices, observ, action, reward, done, nextob):
        """Record the transition and the stored outcome of the step."""
        del observ, action
        env = self._batch_env
        return self._define_branch(
                'experience', agent_indices, reward, env.reward, done,
                env.done, nextob, env.observ)

    def end_episode(self, agent_indices):
        """Record the stored done flags."""
        return self._define_branch(
                'end_episode', agent_indices, self._batch_env.done)

    def _define_record(self, name, agent_indices, *tensors):
        return tf.numpy_function(
                lambda *values: self._record(name, *values),
                [agent_indices] + [tf.convert_to_tensor(x) for x in tensors],
                [])

    def _define_branch(self, name, agent_indices, *tensors):

        def branch():
            record = self._define_record(name, agent_indices, *tensors)
            with tf.control_dependencies([record]):
                count = tf.size(agent_indices)
                summary = tf.cond(
                        self._should_log,
                        lambda: tf.summary.scalar(name, count), str)
            # As PPO does, hand the summary out through an identity built in
            # its own block, so that it waits for the recording; otherwise
            # the begin_episode read may run after the step under load.
            with tf.control_dependencies([record]):
                return tf.identity(summary)

        return tf.cond(self._is_training, branch, str)

    def _record(self, name, agent_indices, *values):
        self.reads.append(
                (name, agent_indices.tolist()) +
                tuple(np.array(value).tolist() for value in values))


def test_ordering_with_conditional_algorithm(env):
    """Reads and scores follow the step even behind conditionals."""
    is_training = tf.placeholder(tf.bool, ())
    should_log = tf.placeholder(tf.bool, ())
    algo = ConditionalAlgorithm(env, is_training, should_log)
    tensors = simulate(env, algo, log=should_log)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        trace, summaries = [], []
        for _ in range(3):
            done, score, summary = sess.run(
                    tensors, {is_training: True, should_log: False})
            trace.append((done.tolist(), score.tolist()))
            summaries.append(_summary_values(summary))
        _, _, summary = sess.run(
                tensors, {is_training: True, should_log: True})
    assert trace == [
            ([False, False, False], [1, 1, 1]),
            ([True, False, False], [3, 3, 3]),
            ([False, True, False], [1, 6, 6])]
    assert summaries == [{}] * 3
    # The fourth step ends the first episode of agent 0 again.
    assert _summary_values(summary) == {
            'mean_score': pytest.approx(4),
            'mean_length': pytest.approx(7 / 3),
            'begin_episode': 1, 'experience': 3, 'end_episode': 1}
    # The algorithm's methods may run in any order among themselves, since
    # their summaries do not wait for their recordings; each reads the
    # environment's variables after the stage simulate calls it in.
    reads = collections.defaultdict(list)
    for name, *values in algo.reads:
        reads[name].append(values)
    start = [[0, 0], [2, 2], [2, 2]]
    later = [[1, 1], [0, 0], [3, 3]]
    assert reads['begin_episode'] == [
            [[0, 1, 2], [[0, 0]] * 3], [[0], start], [[1], later]]
    assert reads['perform'] == [
            [[0, 1, 2], observ, observ]
            for observ in ([[0, 0]] * 3, [[1, 1]] * 3, start, later)]
    assert reads['experience'] == [
            [[0, 1, 2], reward, reward, done, done, nextob, nextob]
            for reward, done, nextob in (
                    ([1, 1, 1], [False] * 3, [[1, 1]] * 3),
                    ([2, 2, 2], [True, False, False], [[2, 2]] * 3),
                    ([1, 3, 3], [False, True, False],
                     [[1, 1], [3, 3], [3, 3]]),
                    ([2, 1, 4], [True, False, False],
                     [[2, 2], [1, 1], [4, 4]]))]
    assert reads['end_episode'] == [
            [[0], [True, False, False]], [[1], [False, True, False]],
            [[0], [True, False, False]]]


class _DyingEnvironment(mock_environment.MockEnvironment):
    """MockEnvironment whose worker process dies on its second step."""

    def step(self, action):
        """Exit the process on the second step of the first episode."""
        if self.steps == [1]:
            os._exit(3)  # pylint: disable=protected-access
        return super().step(action)


def test_restarted_environment_drops_its_episode():
    """A replaced worker's episode is dropped and a new one begins."""
    envs = [
            external_process.ExternalProcess(functools.partial(
                    mock_environment.MockEnvironment, durations=(5,))),
            external_process.ExternalProcess(functools.partial(
                    _DyingEnvironment, durations=(5,)))]
    replacements = []

    def restart(index):
        replacements.append(index)
        return external_process.ExternalProcess(functools.partial(
                mock_environment.MockEnvironment, durations=(5,)))

    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, blocking=False, restart=restart))
        try:
            algo = mock_algorithm.MockAlgorithm(env)
            done, score, _ = simulate(env, algo, log=False)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                trace = []
                for _ in range(4):
                    outcome = sess.run([done, score])
                    outcome += sess.run([env.restarted, env.restarts])
                    trace.append([value.tolist() for value in outcome])
            assert replacements == [1]
            assert trace == [
                    [[False, False], [1, 1], [False, False], 0],
                    [[False, False], [3, 1], [False, True], 1],
                    [[False, False], [6, 1], [False, False], 1],
                    [[False, False], [10, 3], [False, False], 1]]
            step = [('perform', [0, 1]), ('experience', [0, 1])]
            assert algo.calls == (
                    [('begin_episode', [0, 1])] + step + step +
                    [('begin_episode', [1])] + step + step)
            # The replacement was reset in the failed step, then began the
            # new episode.
            assert env[1].steps == [0, 2]
        finally:
            env.close()
