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


def test_ant_without_contact_forces_keeps_the_first_27():
    """The observation is Ant-v5's positions and velocities alone."""
    env = tasks.ant_without_contact_forces()
    full = gym.make('Ant-v5')
    try:
        assert full.observation_space.shape == (105,)
        assert env.observation_space.shape == (27,)
        observ, _ = env.reset(seed=3)
        reference, _ = full.reset(seed=3)
        np.testing.assert_array_equal(observ, reference[:27])
        action = np.full(8, 0.5, np.float32)
        # The ant starts in the air; after 20 steps its feet touch down.
        for _ in range(20):
            observ, reward, _, _, _ = env.step(action)
            reference, expected, _, _, _ = full.step(action)
            np.testing.assert_array_equal(observ, reference[:27])
            assert reward == expected
        assert np.any(reference[27:] != 0.0)
    finally:
        env.close()
        full.close()
