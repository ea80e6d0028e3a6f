"""Tests of PPO's evaluation view; `simulation_test` runs it in phases."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import ppo
from agents.scripts import configs
from agents.scripts import networks


def _batch(size, scope):
    with tf.variable_scope(scope):
        return tools.InGraphBatchEnv(tools.BatchEnv(
            [tools.MockEnvironment(durations=(3,)) for _ in range(size)],
            True))


def _ppo(network=networks.feed_forward_gaussian):
    config = tools.AttrDict(configs.default())
    with config.unlocked:
        config.update(
            max_length=10, steps=1000, policy_layers=(4,), value_layers=(4,),
            network=network, compile_update=False)
    return ppo.PPO(
        _batch(2, 'train'), tf.Variable(0, trainable=False, dtype=tf.int64),
        tf.Variable(False, trainable=False),
        tf.Variable(False, trainable=False), config)


@pytest.mark.parametrize('stochastic', [False, True])
def test_view_acts_with_the_training_weights(stochastic):
    """Greedy, it gives the mode that PPO gives outside training."""
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        algo = _ppo()
        view = algo.evaluation_view(_batch(3, 'eval'), stochastic)
        observ = tf.constant(np.arange(9, dtype=np.float32).reshape(3, 3)[
            :, :2])
        greedy, _ = algo.perform(tf.constant([0, 1]), observ[:2])
        acted, summary = view.perform(tf.range(3), observ)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            greedy, acted, summary = sess.run([greedy, acted, summary])
    assert summary == b''
    assert acted.shape == (3, 3)
    assert np.array_equal(acted[:2], greedy) != stochastic


def test_view_keeps_recurrent_state_of_its_own():
    with tf.Graph().as_default():
        algo = _ppo(networks.recurrent_gaussian)
        before = {variable.name for variable in tf.global_variables()}
        view = algo.evaluation_view(_batch(3, 'eval'))
        added = [
            variable for variable in tf.global_variables()
            if variable.name not in before and 'eval/' not in variable.name]
        observ = tf.ones([3, 2])
        act = view.perform(tf.range(3), observ)[0]
        with tf.control_dependencies([act]):
            state = [tf.identity(variable) for variable in added]
        begin = view.begin_episode(tf.constant([1]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            acted = sess.run(state)
            sess.run(begin)
            reset = sess.run(added)
    # Only non-trainable state of the view's three agents is new.
    assert added and all(
        variable.name.startswith('ppo_evaluation_temporary/')
        and not variable.trainable and variable.shape[0] == 3
        for variable in added)
    assert all(np.abs(value).sum() > 0 for value in acted)
    # begin_episode zeroes the state of its agents only.
    for value in reset:
        assert not value[1].any() and value[0].any() and value[2].any()
