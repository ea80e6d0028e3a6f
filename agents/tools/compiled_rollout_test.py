"""Tests of the compiled rollout against the one-step path of `simulate`."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.environments import in_graph_task
from agents.scripts import configs
from agents.environments import graph_env
from agents.tools import compiled_rollout
from agents.tools.simulate import simulate


class _LinearPolicy:
    """Actions from fixed weights; with `counts`, a state of episode steps.

    The state counts the steps since the episode began and adds them to the
    observations, so that a state not reset at an episode's beginning
    changes the actions. Discrete tasks take the sign of the first output.
    """

    def __init__(self, batch_env, counts=False, noise=False):
        self._discrete = batch_env.action.dtype.base_dtype.is_integer
        size = batch_env.observ.shape.as_list()[1]
        self._weights = tf.constant(
            np.linspace(-1.0, 1.0, size)[:, None], tf.float32)
        self._counts = counts
        self._noise = noise

    def initial_state(self, batch_size):
        """The step counts at the start of episodes, or None."""
        if not self._counts:
            return None
        return tf.zeros([batch_size], tf.float32)

    def step(self, observ, state, key):
        """The actions and the counts after the step."""
        features = observ if state is None else observ + state[:, None] / 10
        output = tf.matmul(features, self._weights)
        if self._noise:
            output += tf.random.stateless_normal(tf.shape(output), key)
        if self._discrete:
            action = tf.cast(output[:, 0] > 0, tf.int32)
        else:
            action = tf.clip_by_value(output, -2.0, 2.0)
        return action, None if state is None else state + 1


class _OneStepAlgorithm:
    """The algorithm interface of `simulate` around a `_LinearPolicy`."""

    def __init__(self, policy, size):
        self._policy = policy
        initial = policy.initial_state(size)
        self._state = None if initial is None else tf.Variable(initial)

    def begin_episode(self, agent_indices):
        """Reset the step counts of the agents."""
        if self._state is None:
            return tf.constant('')
        reset = tf.scatter_update(
            self._state, agent_indices,
            tf.zeros_like(agent_indices, tf.float32))
        with tf.control_dependencies([reset]):
            return tf.constant('')

    def perform(self, unused_agent_indices, observ):
        """The policy's actions, with an unchanging key."""
        state = None if self._state is None else self._state.read_value()
        action, state = self._policy.step(observ, state, tf.constant(
            [0, 0], tf.int64))
        if state is None:
            return action, tf.constant('')
        with tf.control_dependencies([self._state.assign(state)]):
            return tf.identity(action), tf.constant('')

    def experience(self, *unused_transition):
        """Collect nothing."""
        return tf.constant('')

    def end_episode(self, unused_agent_indices):
        """Train on nothing."""
        return tf.constant('')


def _variables(batch):
    return [batch.state, batch.steps, batch.counter, batch.observ,
            batch.done, batch.action, batch.reward, batch.truncated]


def _one_step_path(task, num_envs, max_length, num_steps, counts):
    """First-episode scores and the variables after `simulate` steps."""
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
            task, num_envs, seed=7, max_length=max_length)
        policy = _LinearPolicy(batch, counts)
        reset = tf.placeholder(tf.bool, [])
        done, score, _ = simulate(
            batch, _OneStepAlgorithm(policy, num_envs), False, reset)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first_done = np.zeros(num_envs, bool)
            first_score = np.zeros(num_envs, np.float32)
            running = None
            for index in range(num_steps):
                ended, running = sess.run([done, score], {reset: index == 0})
                first_score[ended & ~first_done] = running[ended & ~first_done]
                first_done |= ended
            first_score[~first_done] = running[~first_done]
            return first_done, first_score, sess.run(_variables(batch))


def _compiled_path(task, num_envs, max_length, num_steps, counts):
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
            task, num_envs, seed=7, max_length=max_length)
        outputs = compiled_rollout.first_episodes(
            batch, _LinearPolicy(batch, counts), num_steps)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first_done, first_score = sess.run(outputs)
            return first_done, first_score, sess.run(_variables(batch))


# XLA computes functions such as sine with other roundings than
# TensorFlow's kernels; CartPole's states, unstable under a poor policy,
# grow those differences over an episode, while the flags, step counts and
# scores stay exact.
@pytest.mark.parametrize('task, max_length, num_steps, counts, atol', [
    (environments.Pendulum, 20, 20, False, 1e-4),
    # Several episodes per environment: restarts draw from the counter.
    (environments.Pendulum, 15, 50, True, 1e-4),
    # Episodes that terminate at different steps.
    (environments.CartPole, 200, 120, True, 2e-2),
    (environments.Acrobot, 30, 45, False, 1e-4),
])
def test_equals_the_one_step_path(task, max_length, num_steps, counts, atol):
    expected = _one_step_path(task, 5, max_length, num_steps, counts)
    got = _compiled_path(task, 5, max_length, num_steps, counts)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-4)
    for value, expected_value in zip(got[2], expected[2]):
        if np.asarray(expected_value).dtype.kind == 'f':
            np.testing.assert_allclose(value, expected_value, atol=atol)
        else:
            np.testing.assert_array_equal(value, expected_value)


def test_cartpole_case_covers_terminations_and_running_episodes():
    # In the case above, some first episodes terminate before the time
    # limit, at different steps, and others still run at the end.
    first_done, unused_score, variables = _compiled_path(
        environments.CartPole, 5, 200, 120, True)
    assert first_done.any() and not first_done.all()
    assert len(set(variables[1].tolist())) > 2


def test_stochastic_policy_is_keyed_per_step_and_reproducible():
    def run():
        with tf.Graph().as_default():
            batch = in_graph_task.InGraphTaskBatch(
                environments.Pendulum, 3, seed=2, max_length=10)
            outputs = compiled_rollout.first_episodes(
                batch, _LinearPolicy(batch, noise=True), 10)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                return sess.run(outputs)[1], sess.run(outputs)[1]

    first, second = run()
    again_first, again_second = run()
    np.testing.assert_array_equal(first, again_first)
    np.testing.assert_array_equal(second, again_second)
    # A second rollout draws other initial states and other noise.
    assert not np.allclose(first, second)


class _NanPolicy(_LinearPolicy):
    """A policy whose actions turn NaN once observations pass a bound."""

    def step(self, observ, state, key):
        action, state = super().step(observ, state, key)
        return tf.where(observ[:, :1] > -2.0, action * np.nan, action), state


def test_non_finite_actions_fail_and_write_nothing():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
            environments.Pendulum, 2, seed=0, max_length=10)
        outputs = compiled_rollout.first_episodes(
            batch, _NanPolicy(batch), 10)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(_variables(batch))
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(outputs)
            assert 'action : Tensor had NaN values' in str(info.value)
            for value, old in zip(sess.run(_variables(batch)), before):
                np.testing.assert_array_equal(value, old)


@pytest.mark.parametrize('num_steps', [0, 2.0, True, None])
def test_bad_num_steps(num_steps):
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(environments.Pendulum, 2, 0)
        with pytest.raises(ValueError) as info:
            compiled_rollout.first_episodes(
                batch, _LinearPolicy(batch), num_steps)
        assert str(info.value) == (
            f'num_steps must be a positive Python int, got {num_steps!r}.')


def _bridge_batch():
    """Three gymnasium Pendulums of 15 steps behind the numpy_function."""
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(num_agents=3, eval_episodes=3, max_length=15)
    return graph_env.define_in_graph_batch(
        config, 5, 'inprocess', evaluation=True)


def _bridge_variables(batch):
    return [batch.observ, batch.done, batch.action, batch.reward,
            batch.truncated]


def _bridge_path(loop, num_steps):
    """First-episode scores and the variables after a bridge rollout: in
    one call of the loop, or in `simulate` steps."""
    with tf.Graph().as_default():
        batch = _bridge_batch()
        policy = _LinearPolicy(batch)
        try:
            if loop:
                outputs = compiled_rollout.first_episodes(
                    batch, policy, num_steps)
                with tf.Session() as sess:
                    sess.run(tf.global_variables_initializer())
                    first_done, first_score = sess.run(outputs)
                    return first_done, first_score, sess.run(
                        _bridge_variables(batch))
            reset = tf.placeholder(tf.bool, [])
            done, score, _ = simulate(
                batch, _OneStepAlgorithm(policy, 3), False, reset)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                first_done = np.zeros(3, bool)
                first_score = np.zeros(3, np.float32)
                for index in range(num_steps):
                    ended, running = sess.run(
                        [done, score], {reset: index == 0})
                    new = ended & ~first_done
                    first_score[new] = running[new]
                    first_done |= ended
                return first_done, first_score, sess.run(
                    _bridge_variables(batch))
        finally:
            batch.close()


def test_bridge_rollout_equals_the_one_step_path():
    # 40 steps: every environment begins two episodes after its first.
    expected = _bridge_path(False, 40)
    got = _bridge_path(True, 40)
    assert expected[0].all()
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-5)
    for value, expected_value in zip(got[2], expected[2]):
        np.testing.assert_allclose(value, expected_value, rtol=1e-5)
