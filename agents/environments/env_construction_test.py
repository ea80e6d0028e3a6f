"""Tests of the configured environment and its wrappers."""

import gymnasium as gym
import numpy as np
import pytest

from agents import tools
from agents.scripts import configs
from agents.environments import env_construction


def test_unknown_env_id_lists_choices():
    with pytest.raises(env_construction.ConfigError) as error:
        env_construction.check_env_id('Pendulum-v0')
    message = str(error.value)
    assert message.startswith("Unknown env id 'Pendulum-v0'; valid ids: ")
    assert 'Pendulum-v1' in message and '\n' not in message


def test_unsupported_observation_space():
    env = gym.make('Blackjack-v1')
    with pytest.raises(
            env_construction.ConfigError, match='Unsupported observation'):
        env_construction.check_spaces(env)


def test_create_environment_normalizes_and_seeds():
    config = tools.AttrDict(configs.pendulum())
    first = env_construction.create_environment(config, seed=3)
    second = env_construction.create_environment(config, seed=3)
    assert np.all(first.action_space.high == np.inf)
    assert first.observation_space.dtype == np.float32
    action = np.array([0.5], np.float32)
    observ_one = first.step(action)[0]
    observ_two = second.step(action)[0]
    np.testing.assert_array_equal(observ_one, observ_two)
