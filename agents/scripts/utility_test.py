"""Tests of config storage, checkpoint discovery and environment creation."""

import os
import signal
import subprocess
import sys
import time

import cloudpickle
import gymnasium as gym
import numpy as np
import psutil
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import configs
from agents.scripts import networks
from agents.scripts import utility


def test_config_round_trip_restores_callables_and_tuples(tmp_path):
    config = tools.AttrDict(configs.pendulum())
    utility.save_config(config, str(tmp_path))
    text = (tmp_path / 'config.yaml').read_text()
    assert ('network: !callable agents.scripts.networks:'
            'feed_forward_gaussian') in text
    loaded = utility.load_config(str(tmp_path))
    assert loaded.network is networks.feed_forward_gaussian
    assert loaded.optimizer is tf.train.AdamOptimizer
    assert loaded.policy_layers == (64, 64)
    assert loaded.weight_summaries == config.weight_summaries
    assert loaded.env == 'Pendulum-v1'
    with pytest.raises(RuntimeError):
        loaded.env = 'CartPole-v1'


def test_save_config_leaves_no_temporary_files(tmp_path):
    utility.save_config(tools.AttrDict(configs.cartpole()), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ['config.yaml']


def test_load_config_rejects_invalid_yaml(tmp_path):
    (tmp_path / 'config.yaml').write_text('env: [unclosed\n')
    with pytest.raises(utility.ConfigError, match='Invalid YAML in .*'):
        utility.load_config(str(tmp_path))


def test_load_config_never_constructs_python_objects(tmp_path):
    (tmp_path / 'config.yaml').write_text(
        "env: !!python/object/apply:os.system ['echo unsafe']\n")
    with pytest.raises(utility.ConfigError, match='Invalid YAML'):
        utility.load_config(str(tmp_path))


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
    with pytest.raises(utility.ConfigError, match=message):
        utility.load_config(str(tmp_path))


def test_load_config_missing_file(tmp_path):
    with pytest.raises(utility.ConfigError, match='No config.yaml in run'):
        utility.load_config(str(tmp_path))


def test_save_config_rejects_lambdas(tmp_path):
    config = tools.AttrDict(configs.pendulum(), env=lambda: None)
    with pytest.raises(utility.ConfigError, match='only module-level'):
        utility.save_config(config, str(tmp_path))
    assert not (tmp_path / 'config.yaml').exists()


def test_unknown_env_id_lists_choices():
    with pytest.raises(utility.ConfigError) as error:
        utility.check_env_id('Pendulum-v0')
    message = str(error.value)
    assert message.startswith("Unknown env id 'Pendulum-v0'; valid ids: ")
    assert 'Pendulum-v1' in message and '\n' not in message


def test_unsupported_observation_space():
    env = gym.make('Blackjack-v1')
    with pytest.raises(utility.ConfigError, match='Unsupported observation'):
        utility.check_spaces(env)


def test_create_environment_normalizes_and_seeds():
    config = tools.AttrDict(configs.pendulum())
    first = utility.create_environment(config, seed=3)
    second = utility.create_environment(config, seed=3)
    assert np.all(first.action_space.high == np.inf)
    assert first.observation_space.dtype == np.float32
    action = np.array([0.5], np.float32)
    observ_one = first.step(action)[0]
    observ_two = second.step(action)[0]
    np.testing.assert_array_equal(observ_one, observ_two)


def test_list_checkpoints_newest_first_and_skips_missing(tmp_path):
    with tf.Graph().as_default():
        variable = tf.Variable(1.0)
        saver = tf.train.Saver([variable], max_to_keep=5)
        with tf.Session() as sess:
            sess.run(variable.initializer)
            for step in (10, 20, 30):
                saver.save(sess, str(tmp_path / 'model.ckpt'), step)
    os.remove(tmp_path / 'model.ckpt-30.index')
    paths = utility.list_checkpoints(str(tmp_path))
    assert [os.path.basename(path) for path in paths] == [
        'model.ckpt-20', 'model.ckpt-10']


def test_initialize_variables_falls_back_from_corrupt_checkpoint(tmp_path):
    with tf.Graph().as_default():
        variable = tf.Variable(0.0)
        saver = tf.train.Saver([variable], max_to_keep=5)
        with tf.Session() as sess:
            sess.run(variable.initializer)
            sess.run(variable.assign(1.0))
            saver.save(sess, str(tmp_path / 'model.ckpt'), 1)
            sess.run(variable.assign(2.0))
            saver.save(sess, str(tmp_path / 'model.ckpt'), 2)
        data = [name for name in os.listdir(tmp_path)
                if name.startswith('model.ckpt-2.data')]
        with open(tmp_path / data[0], 'wb') as file_:
            file_.write(b'garbage')
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, str(tmp_path))
            assert os.path.basename(path) == 'model.ckpt-1'
            assert sess.run(variable) == 1.0


_SAVE_FOREVER = """
import sys
import tensorflow.compat.v1 as tf
with tf.Graph().as_default():
    weights = tf.Variable(tf.zeros([4, 1 << 20]), name='weights')
    value = tf.placeholder(tf.float32, ())
    assign = weights.assign(tf.fill([4, 1 << 20], value))
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        for step in range(1, 1000):
            sess.run(assign, {value: float(step)})
            print(step, flush=True)
            saver.save(sess, sys.argv[1] + '/model.ckpt', step)
"""


def test_checkpoint_of_a_killed_save_is_skipped(tmp_path):
    """SIGKILL while saving leaves the previous checkpoint restorable.

    TensorFlow writes each checkpoint file under a temporary name and
    renames it, the index after the data, and replaces the `checkpoint`
    state file atomically, so a checkpoint is either complete or ignored.
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    with subprocess.Popen(
            [sys.executable, '-c', _SAVE_FOREVER, str(tmp_path)],
            stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            for _ in range(3):
                start = time.monotonic()
                step = int(process.stdout.readline())
            # Kill about half way through writing checkpoint `step`.
            time.sleep((time.monotonic() - start) / 2)
        finally:
            process.send_signal(signal.SIGKILL)
            process.stdout.close()
    with tf.Graph().as_default():
        weights = tf.Variable(tf.zeros([4, 1 << 20]), name='weights')
        saver = tf.train.Saver()
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, str(tmp_path))
            # The writer may have gone on while this process slept.
            restored = int(path.rsplit('-', 1)[1])
            assert restored >= step - 1
            assert (sess.run(weights) == restored).all()


@pytest.fixture(name='by_value')
def fixture_by_value():
    """Send this module's functions to workers by value, not by import.

    Workers then need not import this module and with it TensorFlow.
    """
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _children():
    """Child processes of this process, once the fork server runs."""
    # The first worker starts the fork server, which then stays.
    tools.wrappers.ExternalProcess(
        tools.MockEnvironment, main_module=False).close()
    return {child.pid for child in psutil.Process().children(recursive=True)}


def _mock_constructor(seed):
    del seed
    return tools.MockEnvironment(durations=(3,))


@pytest.mark.parametrize('value, mode', [
    (True, 'processes'), (False, 'inprocess'), ('auto', 'auto'),
    ('inprocess', 'inprocess'), ('processes', 'processes'),
    ('slices', 'slices')])
def test_check_env_mode_accepts_names_and_booleans(value, mode):
    assert utility.check_env_mode(value) == mode


@pytest.mark.parametrize('value', ['threads', 'Slices', 1, None])
def test_check_env_mode_names_the_value_and_the_choices(value):
    with pytest.raises(utility.ConfigError) as error:
        utility.check_env_mode(value)
    assert str(error.value) == (
        f'Unknown env mode {value!r}; expected one of auto, inprocess, '
        'processes, slices.')


@pytest.mark.parametrize('env_mode, env_processes, mode', [
    (None, None, 'auto'), ('slices', None, 'slices'),
    (None, True, 'processes'), (None, False, 'inprocess'),
    ('processes', True, 'processes'), ('inprocess', False, 'inprocess')])
def test_env_mode_from_flags(env_mode, env_processes, mode):
    assert utility.env_mode_from_flags(env_mode, env_processes) == mode


def test_env_mode_flags_that_disagree_raise_one_line():
    with pytest.raises(utility.ConfigError) as error:
        utility.env_mode_from_flags('slices', True)
    assert str(error.value) == (
        '--env_processes means --env_mode=processes and conflicts with '
        '--env_mode=slices; pass one of them.')
    with pytest.raises(utility.ConfigError, match='^--noenv_processes means '
                                                  '--env_mode=inprocess'):
        utility.env_mode_from_flags('auto', False)
    with pytest.raises(utility.ConfigError, match='Unknown env mode'):
        utility.env_mode_from_flags('fast', None)


@pytest.mark.parametrize('env_mode, kind, workers', [
    ('inprocess', tools.BatchEnv, 0), ('processes', tools.BatchEnv, 3),
    ('slices', tools.SlicedBatchEnv,
     min(3, len(os.sched_getaffinity(0))))])
def test_create_batch_env_modes(env_mode, kind, workers, by_value):
    del by_value
    before = _children()
    batch_env = utility.create_batch_env(_mock_constructor, 3, env_mode)
    try:
        assert isinstance(batch_env, kind)
        assert len(_children() - before) == workers
        batch_env.reset()
        observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
        assert observ[:, 0].tolist() == [1, 1, 1]
    finally:
        batch_env.close()
    assert _children() <= before
    with pytest.raises(utility.ConfigError, match="other than 'auto'"):
        utility.create_batch_env(_mock_constructor, 3, 'auto')


def test_choose_env_mode_measures_and_closes_every_candidate(
        caplog, by_value):
    del by_value
    before = _children()
    with caplog.at_level('INFO', logger='agents'):
        mode, rates = utility.choose_env_mode(
            _mock_constructor, 4, ('inprocess', 'processes', 'slices'))
    assert _children() <= before
    assert sorted(rates) == ['inprocess', 'processes', 'slices']
    assert all(rate > 0 for rate in rates.values())
    assert mode == utility.pick_env_mode(rates)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 and lines[0].startswith('Env mode auto: ')
    assert lines[0].endswith(f'; using {mode}.')


@pytest.mark.parametrize('rates, mode', [
    (dict(inprocess=100.0, slices=124.0), 'inprocess'),
    (dict(inprocess=100.0, slices=125.0), 'slices'),
    (dict(inprocess=100.0, slices=130.0, processes=140.0), 'processes'),
    (dict(inprocess=150.0, slices=140.0), 'inprocess'),
    (dict(slices=10.0, processes=20.0), 'processes'),
])
def test_worker_modes_must_be_clearly_faster(rates, mode):
    assert utility.pick_env_mode(rates) == mode


def test_choose_env_mode_of_one_environment_measures_nothing():
    assert utility.choose_env_mode(_mock_constructor, 1) == ('inprocess', {})
    assert utility.choose_env_mode(
        _mock_constructor, 4, ('slices',)) == ('slices', {})


def test_auto_mode_keeps_only_the_workers_of_its_choice(
        monkeypatch, by_value):
    del by_value
    before = _children()
    chosen = []
    choose_env_mode = utility.choose_env_mode

    def choose(*args, **kwargs):
        mode, rates = choose_env_mode(*args, **kwargs)
        chosen.append(mode)
        # The losers are closed before the winner is built anew.
        assert _children() <= before
        return mode, rates

    monkeypatch.setattr(utility, 'choose_env_mode', choose)
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(_mock_constructor, 4, 'auto')
        try:
            workers = len(_children() - before)
            cpus = len(os.sched_getaffinity(0))
            expected = {'inprocess': 0, 'slices': min(4, cpus)}
            assert workers == expected[chosen[0]]
        finally:
            batch_env.close()
    assert _children() <= before
