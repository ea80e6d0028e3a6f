"""Tests for InGraphEnv on single mock environments."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.tools import batch_env
from agents.tools import in_graph_batch_env
from agents.tools import in_graph_env
from agents.testing import mock_environment

SUPPORTED = 'gymnasium.spaces.Box, gymnasium.spaces.Discrete'


def test_variables():
    """Variables have the spaces' dtypes and shapes and are temporary."""
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(
                mock_environment.MockEnvironment(observ_shape=(2, 4)))
        names = [var.name for var in tf.global_variables()]
        assert names == [
                'env_temporary/observ:0', 'env_temporary/action:0',
                'env_temporary/reward:0', 'env_temporary/done:0',
                'env_temporary/truncated:0']
        assert not tf.trainable_variables()
        assert env.observ.shape.as_list() == [2, 4]
        assert env.action.shape.as_list() == [3]
        assert env.reward.shape.as_list() == []
        assert env.done.shape.as_list() == []
        assert env.truncated.shape.as_list() == []
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run([env.done, env.truncated]) == [True, False]


def test_forwarding():
    """Spaces and other attributes come from the environment."""
    mock = mock_environment.MockEnvironment(durations=(4,))
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock)
        assert env.observation_space == mock.observation_space
        assert env.action_space == mock.action_space
        assert env.steps is mock.steps
        with pytest.raises(AttributeError):
            _ = env._missing


def test_reset_and_simulate():
    """Steps assign the outcome; reset clears the flags."""
    mock = mock_environment.MockEnvironment(durations=(2,))
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock)
        reset = env.reset()
        action = tf.placeholder(tf.float32, (3,))
        simulate = env.simulate(action)
        state = [env.observ, env.reward, env.done, env.truncated]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(reset).tolist() == [0, 0]
            trace = []
            for value in (0.5, -0.5):
                sess.run(simulate, {action: [value, 0, 0]})
                observ, reward, done, truncated = sess.run(state)
                trace.append((observ.tolist(), reward, done, truncated))
            assert trace == [
                    ([1, 1], 1, False, False), ([2, 2], 2, True, False)]
            assert sess.run(env.action).tolist() == [-0.5, 0, 0]
            sess.run(reset)
            observ, reward, done, truncated = sess.run(state)
            assert (observ.tolist(), reward, done, truncated) == (
                    [0, 0], 0, False, False)
    assert np.array(mock.actions).tolist() == [[0.5, 0, 0], [-0.5, 0, 0]]
    assert mock.steps == [2, 0]


def test_truncation():
    """An episode that ends by truncation sets both flags."""
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock_environment.MockEnvironment(
                durations=(1,), truncate=True))
        simulate = env.simulate(tf.zeros(3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            assert sess.run([env.done, env.truncated]) == [True, True]


def test_discrete_actions():
    """Discrete actions are int32 scalars handed on as Python integers."""
    mock = mock_environment.MockEnvironment(discrete=3)
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock)
        assert env.action.dtype.base_dtype == tf.int32
        assert env.action.shape.as_list() == []
        simulate = env.simulate(tf.constant(2, tf.int64))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            sess.run(simulate)
            assert sess.run(env.action) == 2
    assert mock.actions == [2]


def _in_graph_batch(env):
    return in_graph_batch_env.InGraphBatchEnv(batch_env.BatchEnv([env], True))


_TUPLE = gym.spaces.Tuple((gym.spaces.Discrete(2),))


@pytest.mark.parametrize('in_graph', [in_graph_env.InGraphEnv, _in_graph_batch])
@pytest.mark.parametrize('spaces, message', [
        (dict(action_space=_TUPLE),
         'Unsupported action space Tuple(Discrete(2))'),
        (dict(action_space=gym.spaces.MultiDiscrete([2, 3])),
         'Unsupported action space MultiDiscrete([2 3])'),
        # The observation space is checked first.
        (dict(action_space=_TUPLE,
              observation_space=gym.spaces.MultiDiscrete([2])),
         'Unsupported observation space MultiDiscrete([2])'),
        (dict(observation_space=gym.spaces.MultiBinary(3)),
         'Unsupported observation space MultiBinary(3)')])
def test_unsupported_spaces(in_graph, spaces, message):
    """Spaces other than Box and Discrete are rejected, single or batched."""
    mock = mock_environment.MockEnvironment()
    for name, space in spaces.items():
        setattr(mock, name, space)
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as error:
            in_graph(mock)
    assert str(error.value) == f'{message}; supported spaces: {SUPPORTED}.'


@pytest.mark.parametrize('action, message', [
        ([0.0, np.nan, 0.0], 'action : Tensor had NaN values'),
        ([np.inf, 0.0, 0.0], 'action : Tensor had Inf values'),
])
def test_non_finite_action(action, message):
    """Non-finite actions fail naming the action."""
    mock = mock_environment.MockEnvironment()
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock)
        simulate = env.simulate(tf.constant(action))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(simulate)
            assert message in error.value.message
    assert not mock.actions


def test_non_finite_observ_and_reward():
    """Non-finite observations and rewards fail naming the tensor."""
    mock = mock_environment.MockEnvironment()
    with tf.Graph().as_default():
        env = in_graph_env.InGraphEnv(mock)
        simulate = env.simulate(tf.zeros(3))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(env.reset())
            mock.step = lambda action: (
                    np.array([0, np.nan], np.float32), 0.0, False, False, {})
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(simulate)
            assert 'observ : Tensor had NaN values' in error.value.message
            mock.step = lambda action: (
                    np.zeros(2, np.float32), np.inf, False, False, {})
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(simulate)
            assert 'reward : Tensor had Inf values' in error.value.message
            mock.reset = lambda: (np.full(2, np.nan, np.float32), {})
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(env.reset())
            assert 'observ : Tensor had NaN values' in error.value.message


def test_close():
    """Closing reaches the environment."""
    closed = []
    mock = mock_environment.MockEnvironment()
    mock.close = lambda: closed.append(True)
    with tf.Graph().as_default():
        in_graph_env.InGraphEnv(mock).close()
    assert closed == [True]

def test_graph_mode_passes():
    """Inside a graph nothing is raised."""
    with tf.Graph().as_default():
        in_graph_env.require_graph_mode('Thing')


def test_eager_scripts_get_one_clear_error():
    """A script that forgot to disable eager execution hears why.

    Runs in a fresh process, where TensorFlow starts eagerly (the test
    suite's own graph setup must not hide the case).
    """
    script = textwrap.dedent('''
        import gymnasium
        from agents import tools
        batch = tools.BatchEnv([gymnasium.make('Pendulum-v1')], True)
        for build in (lambda: tools.InGraphBatchEnv(batch),
                      lambda: tools.InGraphEnv(batch[0])):
            try:
                build()
            except RuntimeError as error:
                print(type(error).__name__, error)
    ''')
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        timeout=300, check=True)
    lines = result.stdout.strip().splitlines()
    advice = (
        'builds TensorFlow graph ops and needs graph mode, but TensorFlow '
        'is executing eagerly; call tf.compat.v1.disable_eager_execution() '
        'at the start of the script, or build inside `with '
        'tf.Graph().as_default():`.')
    assert lines == [
        'GraphModeError InGraphBatchEnv ' + advice,
        'GraphModeError InGraphEnv ' + advice]


def test_tf1_behaviour_gets_one_clear_error():
    """`disable_v2_behavior()` brings back reference variables.

    Our graphs then failed later with a type error about `float32_ref`.
    """
    script = textwrap.dedent('''
        import gymnasium
        import tensorflow.compat.v1 as tf
        from agents import tools
        tf.disable_v2_behavior()
        batch = tools.BatchEnv([gymnasium.make('Pendulum-v1')], True)
        try:
            tools.InGraphBatchEnv(batch)
        except RuntimeError as error:
            print(type(error).__name__, error)
    ''')
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        timeout=300, check=True)
    assert result.stdout.strip() == (
        'GraphModeError InGraphBatchEnv needs resource variables and TF2 '
        'control flow, which tf.compat.v1.disable_v2_behavior() switched '
        'off; call tf.compat.v1.disable_eager_execution() alone instead, or '
        'tf.compat.v1.enable_resource_variables() and '
        'tf.compat.v1.enable_control_flow_v2() after it.')
