"""Tests of the compiled (XLA) update against the plain graph's."""

import functools
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import utility as ppo_utility
from agents.algorithms.ppo import ppo
from agents.algorithms.ppo import ppo_test
from agents.scripts import configs
from agents.scripts import networks
from agents.scripts import train
from agents.scripts import utility
from agents.scripts.train_reliability_test import _tiny_config
from agents.scripts.train_reliability_test import nan_loss_network
from agents.training import trainer

# Four episodes of at most 12 steps, one of them empty.
LENGTH = np.array([12, 7, 0, 10], np.int32)
MAX_LENGTH = 12
OBSERV_SIZE = 2
ACTION_SIZE = 3
NUM_ACTIONS = 4

# The line of the error that names the value (the lines before and after
# locate the node).
NAN_LOSS = r'^loss : Tensor had NaN values$'
NAN_GRADIENT = (
    r'^Not a number \(NaN\) or infinity \(Inf\) values detected in '
    r'gradient\. loss : Tensor had NaN values$')

# Three networks: several chunks per episode, mini-batches of three chunks,
# three epochs.
SETTINGS = {
    'gaussian': dict(network=networks.feed_forward_gaussian),
    'categorical': dict(network=networks.feed_forward_categorical),
    'recurrent': dict(
        network=networks.recurrent_gaussian, recurrent_value=True),
}


def gradient_nan_network(config, action_space, observations, length,
                         state=None):
    """Gaussian network with an extra loss of zero whose gradient is NaN."""
    output = networks.feed_forward_gaussian(
        config, action_space, observations, length, state)
    # The square root's slope at zero is infinite, times zero NaN.
    zero = 0.0 * tf.reduce_sum(output.policy.mean)
    return output.copy(loss=tf.sqrt(zero))


# Pendulum training of 40 steps per phase, compiled update, seeded.
_tiny_training = functools.partial(_tiny_config, compile_update=True)


def _data(discrete, seed=0):
    """Observations, actions and rewards of the episodes of `LENGTH`."""
    random = np.random.RandomState(seed)
    observ = random.normal(size=[len(LENGTH), MAX_LENGTH, OBSERV_SIZE])
    if discrete:
        action = random.randint(NUM_ACTIONS, size=[len(LENGTH), MAX_LENGTH])
    else:
        action = random.uniform(
            -1, 1, size=[len(LENGTH), MAX_LENGTH, ACTION_SIZE])
    reward = random.normal(size=[len(LENGTH), MAX_LENGTH])
    return (observ.astype(np.float32),
            action.astype(np.int32 if discrete else np.float32),
            reward.astype(np.float32))


class _Update:
    """PPO's update on fed data in a graph of its own.

    The weights start from the graph seed, and the old policy that
    collected the data is the network before the update.
    """

    def __init__(self, compile_update, network='gaussian', **overrides):
        config = tools.AttrDict(configs.default())
        settings = dict(SETTINGS.get(network, {}))
        if network not in SETTINGS:
            settings['network'] = network
        with config.unlocked:
            config.update(
                max_length=MAX_LENGTH, steps=1000, update_every=4,
                update_epochs=3, batch_size=3, chunk_length=5,
                policy_layers=(8, 8), value_layers=(8, 8),
                learning_rate=1e-2, gae_lambda=0.95,
                compile_update=compile_update)
            config.update(settings)
            config.update(overrides)
        self.discrete = config.network is networks.feed_forward_categorical
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(0)
            mock = tools.MockEnvironment(
                observ_shape=(OBSERV_SIZE,), action_shape=(ACTION_SIZE,),
                discrete=NUM_ACTIONS if self.discrete else None)
            env = tools.InGraphBatchEnv(tools.BatchEnv([mock], True))
            step = tf.Variable(0, trainable=False, dtype=tf.int64)
            self.algo = ppo.PPO(
                env, step, tf.Variable(True, trainable=False),
                tf.Variable(False, trainable=False), config)
            self.observ = tf.placeholder(
                tf.float32, [len(LENGTH), MAX_LENGTH, OBSERV_SIZE])
            action_shape = [len(LENGTH), MAX_LENGTH] + (
                [] if self.discrete else [ACTION_SIZE])
            self.action = tf.placeholder(
                tf.int32 if self.discrete else tf.float32, action_shape)
            self.reward = tf.placeholder(tf.float32, [len(LENGTH), MAX_LENGTH])
            self.length = tf.placeholder(tf.int32, [len(LENGTH)])
            self.log = tf.placeholder(tf.bool, [])
            # pylint: disable=protected-access
            self.policy_params = ppo_utility.policy_params(self.algo._network(
                self.observ, self.length).policy)
            self.params_input = tools.nested.map(
                lambda param: tf.placeholder(param.dtype, param.shape),
                self.policy_params)
            self.summary = self.algo._perform_update_steps(
                self.observ, self.action, self.params_input, self.reward,
                self.length, self.log)
            self.weights = tf.trainable_variables()
            self.variable_names = sorted(
                variable.name for variable in tf.global_variables())
            # As the trainer opens it: without Grappler where the update
            # compiles (it would spend a second on the graph).
            self.sess = tf.Session(
                config=trainer.make_session_config(config, 'graph'))
            self.sess.run(tf.global_variables_initializer())

    def run(self, observ, action, reward, log=False):
        """Run one update; return the summary."""
        feed = {self.observ: observ, self.length: LENGTH}
        params = self.sess.run(self.policy_params, feed)
        feed.update({self.action: action, self.reward: reward, self.log: log})
        feed.update(zip(
            tools.nested.flatten(self.params_input),
            tools.nested.flatten(params)))
        return self.sess.run(self.summary, feed)

    def get_weights(self):
        """The values of the trainable variables."""
        return self.sess.run(self.weights)


def _check_nan_error(error, compile_update):
    """The compiled update names the loss; the plain one may name another.

    The plain update's checks of the loss and of the network's gradients
    (`networks` checks the mean, the log standard deviation and the value)
    race; the compiled one checks its flag by the loss.
    """
    if compile_update:
        assert re.search(NAN_LOSS, error.message, re.M), error.message
    else:
        assert 'Tensor had NaN values' in error.message, error.message


def _scalars(summary):
    """The scalar values of a serialized summary by tag."""
    return {
        value.tag: value.simple_value
        for value in tf.Summary.FromString(summary).value
        if value.WhichOneof('value') == 'simple_value'}


@pytest.mark.parametrize('network', sorted(SETTINGS))
def test_compiled_and_plain_updates_give_the_same_weights(network):
    """From the same weights and data, both give the same weights and logs."""
    plain = _Update(False, network)
    compiled = _Update(True, network)
    assert compiled.variable_names == plain.variable_names
    before = plain.get_weights()
    for value, expected in zip(compiled.get_weights(), before):
        np.testing.assert_array_equal(value, expected)
    data = _data(plain.discrete)
    plain_scalars = _scalars(plain.run(*data, log=True))
    compiled_scalars = _scalars(compiled.run(*data, log=True))
    changed = 0
    for value, expected, initial in zip(
            compiled.get_weights(), plain.get_weights(), before):
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5)
        changed += not np.allclose(value, initial, rtol=0, atol=1e-4)
    # The update moved the weights.
    assert changed == len(before)
    assert 'update/loss' in plain_scalars
    assert sorted(compiled_scalars) == sorted(plain_scalars)
    for tag, expected in plain_scalars.items():
        assert compiled_scalars[tag] == pytest.approx(
            expected, rel=1e-4, abs=1e-5), tag


@pytest.mark.parametrize('compile_update', [False, True])
def test_nan_reward_fails_the_first_step_and_changes_no_weight(
        compile_update):
    """A NaN reward makes every advantage NaN: no step applies."""
    update = _Update(compile_update)
    before = update.get_weights()
    observ, action, reward = _data(False)
    reward[1, 3] = np.nan
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        update.run(observ, action, reward)
    _check_nan_error(error.value, compile_update)
    for value, expected in zip(update.get_weights(), before):
        np.testing.assert_array_equal(value, expected)


def test_nan_action_stops_both_updates_at_the_same_step():
    """The steps before the mini-batch with a NaN action apply, no later."""
    observ, action, reward = _data(False)
    # The second chunk of the first episode; its mini-batch is not the
    # first of the shuffle with this graph seed.
    action[0, 6] = np.nan
    weights = []
    for compile_update in (False, True):
        update = _Update(compile_update)
        before = update.get_weights()
        with pytest.raises(tf.errors.InvalidArgumentError) as error:
            update.run(observ, action, reward)
        _check_nan_error(error.value, compile_update)
        after = update.get_weights()
        assert not all(
            np.array_equal(value, initial)
            for value, initial in zip(after, before))
        weights.append(after)
    for value, expected in zip(*weights):
        np.testing.assert_allclose(value, expected, rtol=1e-4, atol=1e-5)


def test_non_finite_gradient_of_a_finite_loss_is_never_applied():
    """A NaN gradient fails the compiled update before it is applied."""
    update = _Update(True, gradient_nan_network)
    before = update.get_weights()
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        update.run(*_data(False))
    assert re.search(NAN_GRADIENT, error.value.message, re.M)
    for value, expected in zip(update.get_weights(), before):
        np.testing.assert_array_equal(value, expected)


def test_seeded_compiled_training_repeats():
    """Two seeded runs of the compiled update end with the same weights."""
    results = []
    for _ in range(2):
        with tf.Graph().as_default():
            tf.set_random_seed(0)
            algo, simulate = ppo_test.ppo_in_graph(
                durations=(3,), update_every=2, update_epochs=3,
                batch_size=2, chunk_length=3, policy_layers=(8,),
                value_layers=(8,), compile_update=True)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(30):
                    sess.run(simulate)
                # pylint: disable=protected-access
                results.append(sess.run(
                    [algo._num_updates, algo._penalty] +
                    tf.trainable_variables()))
    assert results[0][0] == 5
    for value, expected in zip(*results):
        np.testing.assert_array_equal(value, expected)


def test_updates_at_episode_ends_and_rollouts_share_one_function():
    """Both places that train call one traced (and compiled) function."""
    with tf.Graph().as_default():
        algo, simulate = ppo_test.ppo_in_graph(
            durations=(3,), rollout_length=2, update_steps=4,
            update_every=10, update_epochs=1, batch_size=2, chunk_length=2,
            policy_layers=(8,), value_layers=(8,), compile_update=True)
        # pylint: disable=protected-access
        assert algo._update_function.experimental_get_tracing_count() == 1
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(12):
                sess.run(simulate)
            # Episodes of three steps and rollouts of two hand over
            # segments at both places; every four steps train.
            assert sess.run(algo._num_updates) == 3


def test_training_stops_in_one_line_at_a_nan_loss():
    """The trainer reads the compiled update's check as today's."""
    with pytest.raises(utility.TrainingError) as error:
        list(train.train(_tiny_training(network=nan_loss_network), False))
    assert re.match(
        r"^Training stopped at global step \d+: 'loss' had NaN values; "
        r'expected finite numbers\.$', str(error.value)), str(error.value)


def test_seeded_compiled_training_gives_the_same_scores():
    """Two runs with one seed score alike."""
    first = list(train.train(_tiny_training(), False))
    second = list(train.train(_tiny_training(), False))
    assert len(first) == 1 and first == second
