"""Tests of reading and migrating 2017 config.yaml files."""

import os
import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from agents import algorithms
from agents.training import config_io
from agents.scripts import migrate_config
from agents.scripts import networks

# As the 2017 package's `save_config` wrote it: PyYAML's `yaml.dump` of an
# AttrDict (generated with PyYAML 6 from a copy of the 2017 class).
LEGACY_CONFIG = """\
!!python/object/new:agents.tools.attr_dict.AttrDict
dictitems:
  activation: !!python/name:tensorflow.python.ops.gen_nn_ops.relu ''
  algorithm: !!python/name:agents.algorithms.ppo.ppo.PPO ''
  env: Pendulum-v1
  logdir: /old/machine/run
  network: !!python/name:agents.scripts.networks.feed_forward_gaussian ''
  num_agents: 10
  optimizer: !!python/name:tensorflow.python.training.adam.AdamOptimizer ''
  policy_layers: !!python/tuple
  - 200
  - 100
  weight_summaries:
    all: .*
state:
  _defaults: {}
  _touched: !!set {}
  _unlocked: false
"""


def _legacy_run(tmp_path, text=LEGACY_CONFIG):
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    (run_dir / 'config.yaml').write_text(text)
    return str(run_dir)


def _check_values(config):
    assert config.algorithm is algorithms.PPO
    assert config.network is networks.feed_forward_gaussian
    assert config.optimizer is tf.train.AdamOptimizer
    assert config.activation is tf.nn.relu
    assert config.policy_layers == (200, 100)
    assert config.weight_summaries == {'all': '.*'}
    assert config.num_agents == 10
    assert config.env == 'Pendulum-v1'


def test_load_config_reads_a_2017_file(tmp_path):
    """Once refused as 'Invalid YAML'; now read, and locked."""
    config = config_io.load_config(_legacy_run(tmp_path))
    _check_values(config)
    with pytest.raises(RuntimeError):
        config.num_agents = 3


@pytest.mark.parametrize('tag', [
    '!!python/object/apply:os.system', '!!python/object/new:os.Popen',
    '!!python/object:collections.OrderedDict'])
def test_other_python_tags_stay_refused(tmp_path, tag):
    """Only the AttrDict tag is read: nothing else is constructed."""
    text = LEGACY_CONFIG.replace('  num_agents: 10', f'  num_agents: {tag} []')
    run_dir = _legacy_run(tmp_path, text)
    with pytest.raises(config_io.ConfigError, match='Invalid YAML'):
        config_io.load_config(run_dir)


def test_migrate_rewrites_in_todays_format_and_keeps_the_original(tmp_path):
    run_dir = _legacy_run(tmp_path)
    assert migrate_config.migrate(run_dir)
    with open(os.path.join(run_dir, 'config.yaml'), encoding='utf-8') as file_:
        text = file_.read()
    assert '!!python' not in text
    assert ('network: !callable agents.scripts.networks:'
            'feed_forward_gaussian') in text
    with open(os.path.join(run_dir, 'config.yaml.2017'),
              encoding='utf-8') as file_:
        assert file_.read() == LEGACY_CONFIG
    _check_values(config_io.load_config(run_dir))
    # A second migration finds nothing to do.
    assert not migrate_config.migrate(run_dir)


def test_migrate_writes_nothing_when_a_callable_is_missing(tmp_path):
    text = LEGACY_CONFIG.replace(
        'networks.feed_forward_gaussian', 'networks.gone_network')
    run_dir = _legacy_run(tmp_path, text)
    with pytest.raises(config_io.ConfigError, match='gone_network'):
        migrate_config.migrate(run_dir)
    assert sorted(os.listdir(run_dir)) == ['config.yaml']


def test_command_line(tmp_path):
    run_dir = _legacy_run(tmp_path)
    command = [sys.executable, '-m', 'agents.scripts.migrate_config', run_dir]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f'{run_dir}: migrated\n'
    missing = str(tmp_path / 'missing')
    result = subprocess.run(
        command[:-1] + [missing], capture_output=True, text=True,
        timeout=300, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f'Error: No config.yaml in run folder {missing}.')
