"""Tests of reading and setting the state of gymnasium environments."""

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import env_state
from agents.testing import mock_environment


def _rollout(env, actions):
    """Observations and rewards of steps, resetting where episodes end."""
    trace = []
    for action in actions:
        observ, reward, terminated, truncated, _ = env.step(action)
        trace.append((observ.copy(), reward, terminated, truncated))
        if terminated or truncated:
            observ, _ = env.reset()
            trace.append((observ.copy(),))
    return trace


@pytest.mark.parametrize('env_id, steps', [
    ('Pendulum-v1', 7), ('CartPole-v1', 7), ('HalfCheetah-v5', 7)])
def test_state_set_on_another_env_continues_bit_for_bit(env_id, steps):
    """An env given the state of another steps and resets as it does,
    through the time limit and the random reset of the next episode."""
    first = gym.make(env_id, max_episode_steps=5)
    first.reset(seed=1)
    first.action_space.seed(2)
    before = [first.action_space.sample() for _ in range(3)]
    _rollout(first, before)
    saved = env_state.encode(env_state.get_state(first))
    second = gym.make(env_id, max_episode_steps=5)
    second.reset(seed=99)
    env_state.set_state(second, env_state.decode(saved))
    actions = [first.action_space.sample() for _ in range(steps)]
    expected = _rollout(first, actions)
    actual = _rollout(second, actions)
    assert len(actual) == len(expected) > steps
    for mine, theirs in zip(actual, expected):
        assert len(mine) == len(theirs)
        for value, other in zip(mine, theirs):
            np.testing.assert_array_equal(value, other)


def test_non_finite_floats_and_nested_arrays_round_trip():
    state = {'a': [float('inf'), float('nan'), 1.5, None, True],
             'b': np.arange(6, dtype=np.float32).reshape(2, 3),
             'c': 2 ** 100}
    decoded = env_state.decode(env_state.encode(state))
    assert decoded['a'][0] == float('inf') and np.isnan(decoded['a'][1])
    assert decoded['a'][2:] == [1.5, None, True]
    assert decoded['b'].dtype == np.float32
    np.testing.assert_array_equal(decoded['b'], state['b'])
    assert decoded['c'] == 2 ** 100


def test_objects_that_are_not_gymnasium_envs_are_refused():
    with pytest.raises(env_state.StateUnavailable, match=(
            r"^'remote' is not a gymnasium environment of this process$")):
        env_state.get_state('remote')


def test_state_of_other_wrappers_is_refused():
    env = mock_environment.MockEnvironment(
        observ_shape=(2,), action_shape=(1,), min_duration=3,
        max_duration=3)
    state = env_state.get_state(gym.wrappers.TimeLimit(env, 10))
    with pytest.raises(env_state.StateUnavailable, match=(
            r'^the saved state has 2 layers of wrappers; the environment .* '
            r'has 1$')):
        env_state.set_state(env, state)


def test_layers_not_known_to_keep_their_state_so_are_refused():
    """A wrapper or environment whose state may lie elsewhere (a deque of
    frames, a simulator in C++) is refused rather than half restored."""

    class Frames(gym.Wrapper):
        """A wrapper of this test, not known to `env_state`."""

    with pytest.raises(env_state.StateUnavailable, match=(
            r'^Frames is not known to keep its whole state in attributes of '
            r'this process$')):
        env_state.get_state(Frames(gym.make('Pendulum-v1')))
