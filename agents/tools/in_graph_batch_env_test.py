"""Tests for InGraphBatchEnv on real BatchEnv batches of mock environments."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import functools

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import batch_env
from agents.tools import external_process
from agents.tools import in_graph_batch_env
from agents.testing import mock_environment
from agents.tools import resume_state


class NonFiniteEnvironment(mock_environment.MockEnvironment):
    """Mock environment whose second step returns a non-finite value."""

    def __init__(self, observ_value=None, reward_value=None, **kwargs):
        super().__init__(**kwargs)
        self._observ_value = observ_value
        self._reward_value = reward_value

    def step(self, action):
        observ, reward, terminated, truncated, info = super().step(action)
        if self.steps[-1] == 2:
            if self._observ_value is not None:
                observ = np.full_like(observ, self._observ_value)
            if self._reward_value is not None:
                reward = self._reward_value
        return observ, reward, terminated, truncated, info


def _in_process_batch(*envs):
    return in_graph_batch_env.InGraphBatchEnv(batch_env.BatchEnv(envs, True))


def _stepped(env, sess, steps):
    for _ in range(steps):
        sess.run(env.simulate(tf.zeros_like(env.action)))
    return sess.run(env.observ)


def test_environment_state_is_copied_to_its_variable_and_back():
    """The state read before a save is set on the environments after a
    restore, so that they continue where they stood."""
    def make():
        return mock_environment.MockEnvironment(
            observ_shape=(2,), action_shape=(3,), min_duration=9,
            max_duration=9)

    with tf.Graph().as_default():
        env = _in_process_batch(make(), make())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            _stepped(env, sess, 2)
            resume_state.capture(sess)
            expected = _stepped(env, sess, 3)
            assert resume_state.apply_saved(sess) == []
            np.testing.assert_array_equal(_stepped(env, sess, 3), expected)
            # Where the state is not that of a completed step, it is
            # forgotten, and every episode begins anew.
            resume_state.capture(sess, consistent=False)
            sess.run(env.done.assign([False, False]))
            assert resume_state.apply_saved(sess) == [
                'a step of the environments hung or failed before the '
                'checkpoint']
            assert sess.run(env.done).tolist() == [True, True]


def test_variables():
    """Variables have the spaces' dtypes and shapes and are temporary."""
    with tf.Graph().as_default():
        env = _in_process_batch(
                mock_environment.MockEnvironment(observ_shape=(2, 4)),
                mock_environment.MockEnvironment(observ_shape=(2, 4)))
        names = [var.name for var in tf.global_variables()]
        assert names == [
                'env_temporary/observ:0', 'env_temporary/action:0',
                'env_temporary/reward:0', 'env_temporary/done:0',
                'env_temporary/truncated:0', 'env_temporary/restarted:0',
                'env_temporary/restarts:0', 'env_temporary/env_state:0']
        assert not tf.trainable_variables()
        # Checkpoints of the trainer keep them, for an exact resumption.
        assert tools.resume_variables() == tf.global_variables()
        assert env.observ.shape.as_list() == [2, 2, 4]
        assert env.observ.dtype.base_dtype == tf.float32
        assert env.action.shape.as_list() == [2, 3]
        assert env.action.dtype.base_dtype == tf.float32
        assert env.reward.shape.as_list() == [2]
        assert env.reward.dtype.base_dtype == tf.float32
        assert env.done.dtype.base_dtype == tf.bool
        assert env.truncated.dtype.base_dtype == tf.bool
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            done, truncated, restarted, restarts = sess.run(
                    [env.done, env.truncated, env.restarted, env.restarts])
            assert done.tolist() == [True, True]
            assert truncated.tolist() == [False, False]
            assert restarted.tolist() == [False, False]
            assert restarts == 0


def test_forwarding():
    """Length, items, spaces and other attributes come from the batch."""
    envs = [mock_environment.MockEnvironment() for _ in range(3)]
    with tf.Graph().as_default():
        env = _in_process_batch(*envs)
        assert len(env) == 3
        assert env[1] is envs[1]
        assert env.observation_space == envs[0].observation_space
        assert env.action_space == envs[0].action_space
        assert env.duration is None
        with pytest.raises(AttributeError):
            _ = env._missing


def _ending_batch():
    """Environments that terminate, truncate, and run on after one step."""
    return _in_process_batch(
            mock_environment.MockEnvironment(durations=(1,)),
            mock_environment.MockEnvironment(durations=(1,), truncate=True),
            mock_environment.MockEnvironment(durations=(3,)))


def test_reset_and_simulate():
    """Steps assign observations, rewards, done and truncated flags."""
    with tf.Graph().as_default():
        env = _ending_batch()
        reset = env.reset()
        action = tf.placeholder(tf.float32, (3, 3))
        simulate = env.simulate(action)
        state = [env.observ, env.reward, env.done, env.truncated]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(reset).tolist() == [[0, 0]] * 3
            observ, reward, done, truncated = sess.run(state)
            assert observ.tolist() == [[0, 0]] * 3
            assert reward.tolist() == [0, 0, 0]
            assert done.tolist() == [False, False, False]
            assert truncated.tolist() == [False, False, False]
            actions = np.array([[0.5, 0, 0], [0, -1, 0], [0, 0, 1]])
            sess.run(simulate, {action: actions})
            observ, reward, done, truncated = sess.run(state)
            assert observ.tolist() == [[1, 1]] * 3
            assert reward.tolist() == [1, 1, 1]
            assert done.tolist() == [True, True, False]
            assert truncated.tolist() == [False, True, False]
            assert sess.run(env.action).tolist() == actions.tolist()
            assert np.array(env[0].actions).tolist() == [[0.5, 0, 0]]


def test_reset_some_environments():
    """Resetting indices updates only their rows and returns their observs."""
    with tf.Graph().as_default():
        env = _ending_batch()
        indices = tf.placeholder(tf.int32, (None,))
        reset = env.reset(indices)
        simulate = env.simulate(tf.zeros((3, 3)))
        state = [env.observ, env.reward, env.done, env.truncated]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            result = sess.run(reset, {indices: [1, 0]})
            assert result.shape == (2, 2)
            assert result.tolist() == [[0, 0], [0, 0]]
            observ, reward, done, truncated = sess.run(state)
            assert observ.tolist() == [[0, 0], [0, 0], [1, 1]]
            assert reward.tolist() == [0, 0, 1]
            assert done.tolist() == [False, False, False]
            assert truncated.tolist() == [False, False, False]
            assert sess.run(reset, {indices: []}).shape == (0, 2)
            assert [env[index].steps for index in range(3)] == [
                    [1, 0], [1, 0], [1]]


def test_discrete_actions():
    """Discrete actions are int32 scalars; wider integers are cast."""
    envs = [mock_environment.MockEnvironment(discrete=4) for _ in range(2)]
    with tf.Graph().as_default():
        env = _in_process_batch(*envs)
        assert env.action.shape.as_list() == [2]
        assert env.action.dtype.base_dtype == tf.int32
        simulate = env.simulate(tf.constant([3, 1], tf.int64))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            assert sess.run(env.action).tolist() == [3, 1]
    assert [env.actions for env in envs] == [[3], [1]]


def test_observation_dtype_from_space():
    """Integer observation spaces keep their dtype."""
    envs = [mock_environment.MockEnvironment() for _ in range(2)]
    for env in envs:
        env.observation_space = gym.spaces.Box(0, 255, (2,), np.uint8)
    with tf.Graph().as_default():
        env = _in_process_batch(*envs)
        assert env.observ.dtype.base_dtype == tf.uint8
        simulate = env.simulate(tf.zeros((2, 3)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(env.reset()).dtype == np.uint8
            sess.run(simulate)
            observ = sess.run(env.observ)
            assert observ.dtype == np.uint8
            assert observ.tolist() == [[1, 1], [1, 1]]


def test_action_type_and_shape_errors():
    """Actions of another kind or shape fail while building the graph."""
    with tf.Graph().as_default():
        env = _in_process_batch(mock_environment.MockEnvironment())
        with pytest.raises(TypeError) as error:
            env.simulate(tf.zeros((1, 3), tf.int32))
        assert str(error.value) == (
                'Expected actions of dtype float32 but got int32.')
        with pytest.raises(ValueError) as error:
            env.simulate(tf.zeros((2, 3)))
        assert str(error.value) == (
                'Expected actions of shape (1, 3) but got (2, 3).')


@pytest.mark.parametrize('observ_value, reward_value, message', [
        (np.nan, None, 'observ : Tensor had NaN values'),
        (np.inf, None, 'observ : Tensor had Inf values'),
        (None, np.nan, 'reward : Tensor had NaN values'),
        (None, -np.inf, 'reward : Tensor had Inf values'),
])
def test_non_finite_observ_or_reward(observ_value, reward_value, message):
    """NaN or Inf from the environment fails the step naming the tensor."""
    with tf.Graph().as_default():
        env = _in_process_batch(
                mock_environment.MockEnvironment(),
                NonFiniteEnvironment(observ_value, reward_value))
        simulate = env.simulate(tf.zeros((2, 3)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(simulate)
            assert message in error.value.message
            # The variables keep the outcome of the last finite step.
            assert sess.run(env.reward).tolist() == [1, 1]


@pytest.mark.parametrize('observ, kind', [
        ([np.nan, np.nan], 'NaN'), ([np.nan, np.inf], 'Inf and NaN')])
def test_non_finite_observ_after_reset(observ, kind):
    """A reset returning NaN or Inf fails as check_numerics would."""
    env = mock_environment.MockEnvironment()
    env.reset = lambda **kwargs: (np.array(observ, np.float32), {})
    with tf.Graph().as_default():
        reset = _in_process_batch(env).reset()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(reset)
            assert f'observ : Tensor had {kind} values' in error.value.message


def test_non_finite_action():
    """NaN actions fail before they reach the environments."""
    envs = [mock_environment.MockEnvironment()]
    with tf.Graph().as_default():
        env = _in_process_batch(*envs)
        simulate = env.simulate(tf.constant([[0.0, np.nan, 0.0]]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(simulate)
            assert 'action : Tensor had NaN values' in error.value.message
    assert not envs[0].actions


def test_non_finite_values_name_their_row():
    """With `row_names`, the first row not finite is named: of an action,
    of a step's reward and of a reset of some environments."""
    second = NonFiniteEnvironment(reward_value=np.nan)
    with tf.Graph().as_default():
        env = _in_process_batch(mock_environment.MockEnvironment(), second)
        env.row_names = ['member seed-3', 'member seed-8']
        action = tf.placeholder(tf.float32, (2, 3))
        simulate = env.simulate(action)
        reset = env.reset([1])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate, {action: np.zeros((2, 3))})
            second.reset = lambda **kwargs: (
                np.full(3, np.nan, np.float32), {})
            for run, message in (
                    (lambda: sess.run(simulate, {action: [
                        [np.nan, 0, 0], [np.inf, 0, 0]]}),
                     'action of member seed-3 : Tensor had Inf and NaN'),
                    (lambda: sess.run(simulate, {action: np.zeros((2, 3))}),
                     'reward of member seed-8 : Tensor had NaN values'),
                    (lambda: sess.run(reset),
                     'observ of member seed-8 : Tensor had NaN values')):
                with pytest.raises(tf.errors.InvalidArgumentError) as error:
                    run()
                assert message in error.value.message


def test_external_processes():
    """The same steps work with non-blocking worker processes."""
    constructors = [
            functools.partial(mock_environment.MockEnvironment,
                              durations=(duration,))
            for duration in (1, 2)]
    envs = [external_process.ExternalProcess(constructor)
            for constructor in constructors]
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, blocking=False))
        try:
            simulate = env.simulate(tf.zeros((2, 3)))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(env.reset())
                sess.run(simulate)
                assert sess.run(env.done).tolist() == [True, False]
                assert sess.run(env.reset([0])).tolist() == [[0, 0]]
                sess.run(simulate)
                assert sess.run(env.done).tolist() == [True, True]
                assert sess.run(env.reward).tolist() == [1, 2]
                # Checkpoints cannot hold the state of the environments in
                # other processes: a resumed run begins its episodes anew.
                resume_state.capture(sess)
                sess.run(env.done.assign([False, False]))
                assert resume_state.apply_saved(sess) == [
                    'ExternalProcess is not known to keep its whole state in '
                    'attributes of this process']
                assert sess.run(env.done).tolist() == [True, True]
        finally:
            env.close()


class _BrokenEnvironment(mock_environment.MockEnvironment):
    """Mock environment whose second step raises."""

    def step(self, action):
        """Raise on the second step of the first episode."""
        if self.steps == [1]:
            raise RuntimeError('simulator diverged')
        return super().step(action)


def test_error_of_the_batch_is_kept():
    """The exception behind a failed step stays available as `error`."""
    with tf.Graph().as_default():
        env = _in_process_batch(
                mock_environment.MockEnvironment(), _BrokenEnvironment())
        simulate = env.simulate(tf.zeros((2, 3)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            assert env.error is None
            with pytest.raises(tf.errors.OpError):
                sess.run(simulate)
            assert isinstance(env.error, RuntimeError)
            assert str(env.error) == (
                    'Environment 1 of the batch failed: simulator diverged')
            # The variables keep the last complete step.
            assert sess.run(env.observ).tolist() == [[1, 1], [1, 1]]
            sess.run(env.reset())
            assert env.error is None


def test_restarted_environment_is_done_and_flagged():
    """A replaced environment reads as done and restarted until reset."""
    envs = [mock_environment.MockEnvironment(), _BrokenEnvironment()]

    def restart(unused_index):
        return mock_environment.MockEnvironment()

    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, blocking=True, restart=restart))
        simulate = env.simulate(tf.zeros((2, 3)))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            sess.run(simulate)
            done, restarted, observ, reward, restarts = sess.run([
                    env.done, env.restarted, env.observ, env.reward,
                    env.restarts])
            assert done.tolist() == [False, True]
            assert restarted.tolist() == [False, True]
            assert observ.tolist() == [[2, 2], [0, 0]]
            assert reward.tolist() == [2, 0]
            assert restarts == 1
            sess.run(env.reset([1]))
            assert sess.run(env.restarted).tolist() == [False, False]
            assert sess.run(env.done).tolist() == [False, False]


@pytest.mark.parametrize('dtype, shape', [
        (np.float64, (2, 2)), (np.int64, (3,)), (np.int8, ()),
        (np.bool_, (2,)), (np.uint16, (1, 1, 2))])
def test_packed_step_keeps_dtypes_and_shapes(dtype, shape):
    """The packed bytes of a step unpack into every kind of observation."""
    envs = [mock_environment.MockEnvironment(durations=(d,)) for d in (1, 3)]
    for env in envs:
        env.observation_space = gym.spaces.Box(
                0, 1 if dtype == np.bool_ else 9, shape, dtype)
    with tf.Graph().as_default():
        env = _in_process_batch(*envs)
        simulate = env.simulate(tf.zeros((2, 3)))
        state = [env.observ, env.reward, env.done, env.truncated,
                 env.restarted, env.restarts]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(env.reset()).tolist() == np.zeros(
                    (2,) + shape, dtype).tolist()
            sess.run(simulate)
            observ, reward, done, truncated, restarted, restarts = (
                    sess.run(state))
    assert observ.dtype == dtype
    assert observ.tolist() == np.ones((2,) + shape, dtype).tolist()
    assert reward.tolist() == [1, 1]
    assert done.tolist() == [True, False]
    assert truncated.tolist() == [False, False]
    assert restarted.tolist() == [False, False]
    assert restarts == 0
