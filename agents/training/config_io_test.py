"""Tests of the configuration file of a run folder."""

import functools
import os

import cloudpickle
import gymnasium as gym
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import atomic_file
from agents.training import config_io
from agents.training import config_overrides
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
    assert loaded.policy_layers == (128, 128)
    assert loaded.weight_summaries == config.weight_summaries
    assert loaded.env == 'Pendulum-v1'
    with pytest.raises(RuntimeError):
        loaded.env = 'CartPole-v1'


def test_save_config_leaves_no_temporary_files(tmp_path):
    config_io.save_config(tools.AttrDict(configs.cartpole()), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ['config.yaml']


def test_config_cut_short_is_refused(tmp_path):
    """A config.yaml that lost its end is refused, not read as it is.

    Cut 3 bytes short, the file before this check read `worker_timeout:
    600` as `6`; now its closing line is what the cut takes.
    """
    config = tools.AttrDict(configs.pendulum())
    config_io.save_config(config, str(tmp_path))
    path = tmp_path / 'config.yaml'
    content = path.read_bytes()
    lines = content.decode().splitlines()
    assert lines[0].startswith('# ') and lines[-1] == '# end of config.yaml'
    assert config_io.load_config(str(tmp_path)) == config
    path.write_bytes(content[:-3])
    with pytest.raises(config_io.ConfigError) as error:
        config_io.load_config(str(tmp_path))
    assert str(error.value) == (
        f"{path} is incomplete: its last line '# end of config.yaml' is "
        'missing, so it was cut short; restore it, or start a new run with '
        'another --timestamp.')
    # Files of earlier versions, without the opening comment, still load.
    path.write_bytes(content.split(b'\n', 1)[1][:-len(lines[-1]) - 1])
    assert config_io.load_config(str(tmp_path)) == config


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


def test_partial_of_importable_callables_round_trips(tmp_path):
    """Once `Cannot store functools.partial(...) in config.yaml` for
    PyBullet's 2017 minitaur config, which 2017 stored."""
    env = functools.partial(
        gym.make, 'Pendulum-v1', max_episode_steps=50,
        wrappers=(functools.partial(gym.wrappers.ClipAction),))
    config = tools.AttrDict(configs.pendulum(), env=env)
    config_io.save_config(config, str(tmp_path))
    text = (tmp_path / 'config.yaml').read_text()
    assert (
        'env: !partial\n'
        '  args:\n'
        '  - Pendulum-v1\n'
        '  function: !callable gymnasium.envs.registration:make\n'
        '  keywords:\n'
        '    max_episode_steps: 50\n'
        '    wrappers:\n'
        '    - !partial\n'
        '      args: []\n'
        '      function: !callable '
        'gymnasium.wrappers.transform_action:ClipAction\n'
        '      keywords: {}\n') in text
    loaded = config_io.load_config(str(tmp_path)).env
    assert isinstance(loaded, functools.partial)
    assert (loaded.func, loaded.args) == (gym.make, ('Pendulum-v1',))
    assert loaded.keywords['max_episode_steps'] == 50
    (wrapper,) = loaded.keywords['wrappers']
    assert (wrapper.func, wrapper.args, wrapper.keywords) == (
        gym.wrappers.ClipAction, (), {})


def test_partial_of_a_lambda_is_refused(tmp_path):
    function = lambda: None  # pylint: disable=unnecessary-lambda-assignment
    config = tools.AttrDict(
        configs.pendulum(), env=functools.partial(function))
    with pytest.raises(config_io.ConfigError, match=(
            r'^Cannot store <function .*<lambda> at .*> in config\.yaml: '
            r'only module-level functions and classes have an import '
            r'path\.$')):
        config_io.save_config(config, str(tmp_path))
    assert not (tmp_path / 'config.yaml').exists()


@pytest.mark.parametrize('text', [
    'env: !partial [1]\n',
    'env: !partial {function: 3}\n',
    'env: !partial {function: !callable os:getcwd, args: 1}\n',
    'env: !partial {function: !callable os:getcwd, state: 1}\n',
])
def test_bad_partials_are_refused(tmp_path, text):
    (tmp_path / 'config.yaml').write_text(text)
    with pytest.raises(config_io.ConfigError, match=(
            r'^(Invalid YAML in .*expected a mapping after !partial.*|'
            r"Cannot read the !partial value \{.*\}; expected a mapping of "
            r'function \(!callable path\), args \(list\) and keywords '
            r'\(mapping\)\.)$')):
        config_io.load_config(str(tmp_path))


@pytest.mark.parametrize('umask', [0o022, 0o027])
def test_write_atomic_gives_the_permissions_of_the_umask(tmp_path, umask):
    previous = os.umask(umask)
    try:
        atomic_file.write_atomic(str(tmp_path / 'episodes.json'), '{}\n')
    finally:
        os.umask(previous)
    assert (tmp_path / 'episodes.json').stat().st_mode & 0o777 == (
        0o666 & ~umask)
    assert os.listdir(tmp_path) == ['episodes.json']


def test_overrides_convert_to_the_type_they_replace():
    config = tools.AttrDict(
        steps=1e6, num_agents=8, use_gpu=False, seed=None,
        policy_layers=(64, 64), network=networks.feed_forward_gaussian,
        env='Pendulum-v1')
    overrides = config_overrides.apply_overrides(config, [
        'steps=1e5', 'num_agents=1e1', 'use_gpu=true', 'seed=3',
        'policy_layers=[32, 16]', 'env=CartPole-v1',
        'network=agents.scripts.networks:recurrent_gaussian'])
    assert overrides == dict(
        steps=1e5, num_agents=10, use_gpu=True, seed=3,
        policy_layers=(32, 16), env='CartPole-v1',
        network=networks.recurrent_gaussian)
    assert type(config.num_agents) is int  # pylint: disable=unidiomatic-typecheck


def test_null_switches_off_options_that_are_off_by_default():
    config = tools.AttrDict(configs.cheetah())
    overrides = config_overrides.apply_overrides(
        config, ['rollout_length=null', 'eval_every=null'])
    assert overrides == dict(rollout_length=None, eval_every=None)
    assert config.rollout_length is None


@pytest.mark.parametrize('setting, message', [
    ('discount=null', 'discount expects a number (float), got None.'),
    ('use_gpu=1', "use_gpu expects true or false (bool), got 1."),
    ('env=3', 'env expects a string (str), got 3.'),
    ('network=os:nope', "network expects an import path 'package.module:"
     "name' (callable); Module 'os' has no public callable 'nope'"),
    ('steps=[1', 'not a valid value for steps'),
])
def test_overrides_of_the_wrong_type_name_key_and_type(setting, message):
    config = tools.AttrDict(
        steps=1e6, use_gpu=False, network=networks.feed_forward_gaussian,
        env='Pendulum-v1', discount=0.99)
    before = dict(config)
    with pytest.raises(config_io.ConfigError) as error:
        config_overrides.apply_overrides(config, ['steps=5', setting])
    assert str(error.value).startswith(f'--set={setting}: ')
    assert message in str(error.value)
    assert '\n' not in str(error.value)
    assert dict(config) == before


def test_config_file_module_loads_once_and_travels_by_value(tmp_path):
    path = tmp_path / 'config_io_test_file.py'
    path.write_text('def tiny():\n    return {"steps": 1}\n')
    function, source = config_io.import_config_function(f'{path}:tiny')
    assert function() == {'steps': 1}
    assert source == f'{path}:tiny'
    again, _ = config_io.import_config_function(f'{path}:tiny')
    assert again is function
    assert 'config_io_test_file' in (
        cloudpickle.list_registry_pickle_by_value())
    config_io.save_config(
        {'config_function': source, 'env': function}, str(tmp_path))
    assert config_io.load_config(str(tmp_path)).env is function


@pytest.mark.parametrize('spec, message', [
    ('missing_file.py:tiny', 'Config file .*missing_file.py does not exist'),
    ('json.py:tiny', "has the name of the module 'json'"),
    ('tabnanny.py:tiny',
     "has the name of the module 'tabnanny' of .*/tabnanny.py; rename"),
    ('broken.py:tiny', 'Cannot import config file .*broken.py: '
     'ZeroDivisionError: division by zero'),
    ('plain.py:_hidden', "has no public function '_hidden'"),
    ('plain.py', "must look like 'package.module:function'"),
])
def test_bad_config_files_name_the_problem(tmp_path, monkeypatch, spec,
                                            message):
    monkeypatch.chdir(tmp_path)
    for name in ('json', 'tabnanny'):
        (tmp_path / f'{name}.py').write_text('')
    (tmp_path / 'broken.py').write_text('1 / 0\n')
    (tmp_path / 'plain.py').write_text('def _hidden():\n    return {}\n')
    with pytest.raises(config_io.ConfigError, match=message):
        config_io.import_config_function(spec)


_ALIASES = (
    '[&a [1, 1, 1, 1, 1, 1, 1, 1, 1], &b [*a, *a, *a, *a, *a, *a, *a, *a, '
    '*a], &c [*b, *b, *b, *b, *b, *b, *b, *b, *b], &d [*c, *c, *c, *c, *c, '
    '*c, *c, *c, *c], [*d, *d, *d, *d, *d, *d, *d, *d, *d]]')


@pytest.mark.parametrize('text, detail', [
    ('[' * 5000 + ']' * 5000, 'it nests too deeply'),
    ('[' * 20 + ']' * 20, 'it nests lists or mappings more than 16 deep'),
    (_ALIASES, 'it holds more than 10000 items'),
])
def test_overrides_are_bounded_in_depth_and_size(text, detail):
    """Nested brackets and YAML aliases end in one short line."""
    config = tools.AttrDict(policy_layers=(64, 64))
    with pytest.raises(config_io.ConfigError) as error:
        config_overrides.apply_overrides(config, [f'policy_layers={text}'])
    shown = config_io.shorten(f'policy_layers={text}')
    assert str(error.value) == (
        f'--set={shown}: not a valid value for policy_layers ({detail}).')
    assert len(str(error.value)) < 200


def test_saved_config_is_bounded_in_depth_and_size(tmp_path):
    (tmp_path / 'config.yaml').write_text(f'policy_layers: {_ALIASES}\n')
    with pytest.raises(config_io.ConfigError) as error:
        config_io.load_config(str(tmp_path))
    assert str(error.value) == (
        f'Invalid YAML in {tmp_path}/config.yaml: it holds more than 10000 '
        'items')


def test_overrides_of_a_number_keep_what_the_rules_judge():
    """Integral numbers become integers; others, infinite ones too, stay
    for `config_spec.RULES`: seconds may be 2.5, a count may not."""
    config = tools.AttrDict(worker_timeout=600, num_agents=8, max_length=200)
    overrides = config_overrides.apply_overrides(config, [
        'worker_timeout=2.5', 'num_agents=.inf', 'max_length=1e400'])
    assert overrides == dict(
        worker_timeout=2.5, num_agents=float('inf'),
        max_length=float('inf'))
