"""Tests of config specs and their completion."""

import pytest

from agents import tools
from agents.scripts import config_io
from agents.scripts import config_spec
from agents.scripts import configs


def test_unknown_config_name_lists_the_choices():
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.load_config_spec('pendulm')
    assert str(error.value) == (
        "Unknown config 'pendulm'; valid configs: "
        f"{', '.join(config_spec.config_names())}.")
    assert 'pendulum' in config_spec.config_names()
    assert 'default' not in config_spec.config_names()


def test_config_spec_records_its_source():
    config = config_spec.load_config_spec('pendulum')
    assert config[config_io.SOURCE_KEY] == 'agents.scripts.configs:pendulum'
    assert config_spec.config_label('my_package.my_configs:walker') == (
        'walker')


def test_complete_config_fills_what_is_left_out_from_the_defaults():
    config = tools.AttrDict(
        algorithm=None, env='Pendulum-v1', num_agents=2, steps=100,
        update_every=2, eval_episodes=2, bootstrap_truncated=False)
    config = config_spec.complete_config(config)
    default = configs.default()
    assert config.bootstrap_truncated is False
    assert config.max_length == 200  # The env's time limit.
    assert config.logdir is None
    assert all(
        config[key] == value for key, value in default.items()
        if key not in ('algorithm', 'num_agents', 'update_every',
                       'eval_episodes', 'bootstrap_truncated', 'max_length'))


def test_complete_config_names_the_missing_keys():
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.complete_config(tools.AttrDict(env='Pendulum-v1'))
    assert str(error.value) == (
        "Config has no 'algorithm', 'num_agents', 'steps', 'update_every', "
        "'eval_episodes'; expected the keys algorithm, env, num_agents, "
        'steps, update_every, eval_episodes.')


@pytest.mark.parametrize('seed', [-1, 2**32, 1.5, True, '3'])
def test_check_seed_names_the_value_and_the_range(seed):
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.check_seed(seed, '--seed')
    assert str(error.value) == (
        f'--seed={seed!r} must be an integer from 0 to 4294967295.')
    config_spec.check_seed(None, '--seed')
    config_spec.check_seed(7, '--seed')
