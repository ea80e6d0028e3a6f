"""Tests of config storage, checkpoint discovery and environment creation."""

import os
import signal
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
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
