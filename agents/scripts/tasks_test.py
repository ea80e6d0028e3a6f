"""Tests of the environment constructors of configs."""

import gymnasium as gym
import numpy as np

from agents.scripts import tasks


def test_pendulum_without_velocity_hides_the_velocity():
    """The observation is Pendulum's cosine and sine, without the velocity."""
    env = tasks.pendulum_without_velocity()
    full = gym.make('Pendulum-v1')
    try:
        assert env.observation_space == gym.spaces.Box(
            -1.0, 1.0, (2,), np.float32)
        observ, _ = env.reset(seed=3)
        reference, _ = full.reset(seed=3)
        np.testing.assert_array_equal(observ, reference[:2])
        for action in ([2.0], [-1.0], [0.5]):
            observ, reward, _, _, _ = env.step(np.array(action, np.float32))
            reference, expected, _, _, _ = full.step(
                np.array(action, np.float32))
            np.testing.assert_array_equal(observ, reference[:2])
            assert reward == expected
            assert reference[2] != 0.0
    finally:
        env.close()
        full.close()
