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


@pytest.mark.parametrize('max_length, normalize, space, expected', [
    (100, True, gym.spaces.Box(-1, 1), [
        ('LimitDuration', dict(duration=100)), ('RangeNormalize', {}),
        ('ClipAction', {}), ('ConvertTo32Bit', {})]),
    (None, False, gym.spaces.Discrete(2), [('ConvertTo32Bit', {})])])
def test_standard_wrappers_are_one_recipe(
        max_length, normalize, space, expected):
    config = tools.AttrDict(max_length=max_length, normalize_ranges=normalize)
    assert env_construction.standard_wrappers(config, space) == expected


def test_an_environment_and_a_batch_apply_the_same_recipe():
    config = tools.AttrDict(configs.pendulum())
    env = env_construction.create_environment(config)
    batch = env_construction.wrap_batch_env(config, tools.BatchEnv([
        env_construction.create_environment(config, batch_wrappers=True)],
        blocking=True))
    names = []
    while type(env).__module__.startswith('agents.'):
        names.append(type(env).__name__)
        env = env.env
    wrapped = []
    while isinstance(batch, tools.batch_wrappers.BatchWrapper):
        wrapped.append(type(batch).__name__)
        batch = batch.batch_env
    assert names == wrapped == [
        name for name, _ in reversed(env_construction.standard_wrappers(
            config, env.action_space))]
