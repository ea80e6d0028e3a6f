"""Tests for the deterministic environment double."""

import re
import unittest

import gymnasium as gym
import numpy as np
import pytest

from agents.testing import env_contract
from agents.testing.mock_environment import MockEnvironment


def _episode(env):
    """Reset and step to the end; return the per-step tuples."""
    env.reset()
    results = []
    while True:
        observ, reward, terminated, truncated, info = env.step(np.zeros(3))
        results.append((observ.tolist(), reward, terminated, truncated, info))
        if terminated or truncated:
            return results


def test_observations_and_rewards_count_steps():
    """After k steps the observation is filled with k and the reward is k."""
    env = MockEnvironment(observ_shape=(2, 1), durations=(3,))
    observ, info = env.reset()
    assert (observ.tolist(), observ.dtype, info) == (
        [[0.0], [0.0]], np.float32, {})
    assert _episode(env) == [
        ([[1.0], [1.0]], 1.0, False, False, {}),
        ([[2.0], [2.0]], 2.0, False, False, {}),
        ([[3.0], [3.0]], 3.0, True, False, {})]


def test_durations_cycle_and_steps_are_recorded():
    """Episode lengths cycle; steps per episode are recorded."""
    env = MockEnvironment(durations=(2, 1, 3))
    lengths = [len(_episode(env)) for _ in range(4)]
    assert lengths == [2, 1, 3, 2]
    assert env.steps == [2, 1, 3, 2]
    assert sum(reward for *_, reward, _, _, _ in _episode(env)) == 1.0
    assert env.duration == 1


def test_truncate_sets_truncated_instead_of_terminated():
    """With `truncate`, episodes end by truncation."""
    env = MockEnvironment(durations=(2,), truncate=True)
    assert [result[2:4] for result in _episode(env)] == [
        (False, False), (False, True)]


def test_records_actions_and_seeds():
    """Actions are copied into `actions`, seeds into `seeds`."""
    env = MockEnvironment(discrete=4)
    assert env.action_space == gym.spaces.Discrete(4)
    # Pylint infers a lambda for reset through gymnasium; it is ours.
    env.reset(seed=5)  # pylint: disable=unexpected-keyword-arg
    env.reset()
    action = np.array(2)
    env.step(action)
    action[...] = 3
    assert env.seeds == [5, None]
    assert [recorded.tolist() for recorded in env.actions] == [2]


def test_step_errors():
    """Stepping before reset or after the end raises."""
    env = MockEnvironment(durations=(1,))
    assert env.duration is None
    with pytest.raises(RuntimeError, match='Reset the MockEnvironment'):
        env.step(np.zeros(3))
    _episode(env)
    with pytest.raises(RuntimeError, match=(
            'Episode 0 ended after 1 steps; reset the MockEnvironment')):
        env.step(np.zeros(3))


@pytest.mark.parametrize('durations', [(), (0,), (1.5,), (2, -1)])
def test_rejects_durations(durations):
    """Durations must be positive integers."""
    with pytest.raises(ValueError, match=re.escape(
            f'durations must be positive integers, got {durations!r}')):
        MockEnvironment(durations=durations)


def test_render_encodes_the_step():
    """Rendered pixels are ten times the step within the episode."""
    env = MockEnvironment(render_mode='rgb_array')
    env.reset()
    env.step(np.zeros(3))
    env.step(np.zeros(3))
    frame = env.render()
    assert (frame.shape, frame.dtype) == ((16, 16, 3), np.uint8)
    assert np.all(frame == 20)


class MockEnvironmentContractTest(
        env_contract.EnvironmentContractMixin, unittest.TestCase):
    """MockEnvironment keeps the environment contract."""

    def make_environment(self):
        """The environment under test."""
        return MockEnvironment(durations=(4,))


class TruncatingMockEnvironmentContractTest(
        env_contract.EnvironmentContractMixin, unittest.TestCase):
    """MockEnvironment with truncation keeps the contract."""

    def make_environment(self):
        """The environment under test."""
        return MockEnvironment(durations=(2,), truncate=True, discrete=3)


def test_arguments_of_the_2017_class():
    """(observ_shape, action_shape, min_duration, max_duration) as in 2017:
    random durations within the bounds, reproducible by seed."""
    env = MockEnvironment((2, 3), (4,), 2, 5)
    assert env.observation_space.shape == (2, 3)
    assert env.action_space.shape == (4,)
    for _ in range(20):
        env.reset()
        terminated = False
        while not terminated:
            _, _, terminated, _, _ = env.step(np.zeros(4, np.float32))
    assert env.steps == env.durations
    assert set(env.durations) == {2, 3, 4, 5}
    again = MockEnvironment((2, 3), (4,), 2, 5)
    for _ in range(20):
        again.reset()
    assert again.durations == env.durations
    # Pylint infers a lambda for reset through gymnasium; it is ours.
    env.reset(seed=7)  # pylint: disable=unexpected-keyword-arg
    again.reset(seed=7)  # pylint: disable=unexpected-keyword-arg
    assert env.duration == again.duration


@pytest.mark.parametrize('bounds', [(3, None), (None, 3), (4, 2), (0, 2)])
def test_2017_duration_bounds_are_checked(bounds):
    with pytest.raises(ValueError, match='min_duration and max_duration'):
        MockEnvironment((2,), (3,), *bounds)


class MockEnvironment2017ContractTest(
        env_contract.EnvironmentContractMixin, unittest.TestCase):
    """MockEnvironment with the 2017 arguments keeps the contract."""

    def make_environment(self):
        """The environment under test."""
        return MockEnvironment((2,), (3,), 1, 4)
