"""Tests of the configuration file of a run folder."""

import os

import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import config_io
from agents.scripts import configs
from agents.scripts import networks


def test_config_round_trip_restores_callables_and_tuples(tmp_path):
    config = tools.AttrDict(configs.pendulum())
    config_io.save_config(config, str(tmp_path))
    text = (tmp_path / 'config.yaml').read_text()
    assert ('network: !callable agents.scripts.networks:'
            'feed_forward_gaussian') in text
    loaded = config_io.load_config(str(tmp_path))
    assert loaded.network is networks.feed_forward_gaussian
    assert loaded.optimizer is tf.train.AdamOptimizer
    assert loaded.policy_layers == (64, 64)
    assert loaded.weight_summaries == config.weight_summaries
    assert loaded.env == 'Pendulum-v1'
    with pytest.raises(RuntimeError):
        loaded.env = 'CartPole-v1'


def test_save_config_leaves_no_temporary_files(tmp_path):
    config_io.save_config(tools.AttrDict(configs.cartpole()), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ['config.yaml']


def test_load_config_rejects_invalid_yaml(tmp_path):
    (tmp_path / 'config.yaml').write_text('env: [unclosed\n')
    with pytest.raises(config_io.ConfigError, match='Invalid YAML in .*'):
        config_io.load_config(str(tmp_path))


def test_load_config_never_constructs_python_objects(tmp_path):
    (tmp_path / 'config.yaml').write_text(
        "env: !!python/object/apply:os.system ['echo unsafe']\n")
    with pytest.raises(config_io.ConfigError, match='Invalid YAML'):
        config_io.load_config(str(tmp_path))


@pytest.mark.parametrize('path, message', [
    ('no_such_module_xyz:thing', "Cannot import module 'no_such_module_xyz'"),
    ('agents.scripts.networks:missing', "has no public callable 'missing'"),
    ('agents.scripts.networks:_private', "has no public callable '_private'"),
    ('agents.scripts.configs:tf', "'agents.scripts.configs:tf' is not "
     'callable'),
    ('nocolon', 'must look like'),
])
def test_load_config_rejects_bad_callables(tmp_path, path, message):
    (tmp_path / 'config.yaml').write_text(f'network: !callable {path}\n')
    with pytest.raises(config_io.ConfigError, match=message):
        config_io.load_config(str(tmp_path))


def test_load_config_missing_file(tmp_path):
    with pytest.raises(config_io.ConfigError, match='No config.yaml in run'):
        config_io.load_config(str(tmp_path))


def test_save_config_rejects_lambdas(tmp_path):
    config = tools.AttrDict(configs.pendulum(), env=lambda: None)
    with pytest.raises(config_io.ConfigError, match='only module-level'):
        config_io.save_config(config, str(tmp_path))
    assert not (tmp_path / 'config.yaml').exists()
