"""Tests for the policy and value networks."""

import contextlib
import functools

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.training import config_spec
from agents.scripts import networks

BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
DISCRETE = gym.spaces.Discrete(3)


def _config(**kwargs):
    """Small network configuration, with the defaults of the rest."""
    config = config_spec.with_defaults(dict(
        policy_layers=(5, 4), value_layers=(6,), init_output_factor=0.1,
        init_std=0.35))
    return config.copy(**kwargs)


def _observations(batch=3, time=4, seed=0):
    """Observations [batch, time, 2, 3] that networks flatten."""
    rng = np.random.RandomState(seed)
    return rng.normal(size=(batch, time, 2, 3)).astype(np.float32)


@contextlib.contextmanager
def _seeded_graph():
    """New default graph with a fixed seed, so initial weights repeat."""
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(0)
        yield graph


def _evaluate(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def test_feed_forward_gaussian_shapes_and_initial_std():
    """Mean and std per step and action, std at init_std, value per step."""
    with _seeded_graph():
        output = networks.feed_forward_gaussian(
            _config(), BOX, _observations(), tf.ones([3], tf.int32))
        assert isinstance(output, tools.AttrDict)
        assert isinstance(output.policy, parts.DiagonalGaussian)
        assert output.state is None
        assert output.policy.mean.shape.as_list() == [3, 4, 2]
        assert output.value.shape.as_list() == [3, 4]
        kernel = tf.trainable_variables('policy/mean/kernel')[0]
        std, value, sample, kernel = _evaluate((
            output.policy.std, output.value, output.policy.sample(), kernel))
    np.testing.assert_allclose(std, np.full((3, 4, 2), 0.35), rtol=1e-6)
    assert value.shape == (3, 4)
    assert sample.shape == (3, 4, 2)
    # The output layer is drawn uniformly within the variance scaling limit
    # for init_output_factor over the average fan of 4 inputs and 2 outputs.
    assert kernel.shape == (4, 2)
    assert np.max(np.abs(kernel)) <= np.sqrt(3 * 0.1 / 3)


def test_gaussian_mean_stays_in_unit_range():
    """The tanh output bounds the mean even for huge observations."""
    with _seeded_graph():
        output = networks.feed_forward_gaussian(
            _config(init_output_factor=10.0), BOX, 1e4 * _observations(),
            None)
        mean = _evaluate(output.policy.mean)
    assert np.all(np.abs(mean) <= 1.0)
    assert np.max(np.abs(mean)) > 0.99


def test_linear_mean_leaves_the_unit_range():
    """Without the tanh the mean grows with the inputs."""
    with _seeded_graph():
        output = networks.feed_forward_gaussian(
            _config(init_output_factor=10.0, mean_activation=None), BOX,
            1e4 * _observations(), None)
        mean = _evaluate(output.policy.mean)
    assert np.max(np.abs(mean)) > 10.0


def test_orthogonal_init_gains():
    """Orthogonal layers: gain sqrt(2) hidden, the output factor for the
    policy's mean, one for the value; columns of an orthogonal kernel with
    more rows than columns are orthonormal up to the gain."""
    with _seeded_graph():
        networks.feed_forward_gaussian(
            _config(weight_init='orthogonal', policy_layers=(8, 6),
                    init_output_factor=0.01), BOX, _observations(), None)
        kernels = {
            name: tf.trainable_variables(f'{name}/kernel')[0]
            for name in ('policy/hidden_1', 'policy/mean', 'value/output')}
        values = _evaluate(kernels)
    for name, gain in (('policy/hidden_1', 2.0), ('policy/mean', 1e-4),
                       ('value/output', 1.0)):
        kernel = values[name]
        np.testing.assert_allclose(
            kernel.T @ kernel, gain * np.eye(kernel.shape[1]), atol=1e-5)


@pytest.mark.parametrize('key, value, expected', [
    ('weight_init', 'he', "Config weight_init='he' must be one of"),
    ('mean_activation', 'relu', "Config mean_activation='relu' must be"),
])
def test_bad_init_options(key, value, expected):
    """Unknown schemes name the key, the value and the choices."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=expected):
            networks.feed_forward_gaussian(
                _config(**{key: value}), BOX, _observations(), None)


def test_feed_forward_categorical():
    """Discrete spaces get logits per class and int32 modes."""
    with _seeded_graph():
        output = networks.feed_forward_categorical(
            _config(), DISCRETE, _observations(), None)
        assert isinstance(output.policy, parts.Categorical)
        assert output.policy.logits.shape.as_list() == [3, 4, 3]
        assert output.state is None
        mode, sample, value = _evaluate((
            output.policy.mode(), output.policy.sample(), output.value))
    assert mode.shape == sample.shape == value.shape == (3, 4)
    assert mode.dtype == sample.dtype == np.int32
    assert set(sample.ravel()) <= {0, 1, 2}


# Kernel and bias per layer. Policies: two hidden layers, the output layer
# and for Gaussians the logstd; the recurrent policy replaces its last hidden
# layer by three GRU weights. Values: one hidden and one output layer.
@pytest.mark.parametrize('network, space, count', [
    (networks.feed_forward_gaussian, BOX, (2 + 2 + 2 + 1) + (2 + 2)),
    (networks.feed_forward_categorical, DISCRETE, (2 + 2 + 2) + (2 + 2)),
    (networks.recurrent_gaussian, BOX, (2 + 3 + 2 + 1) + (2 + 2)),
])
def test_variables_are_reused_across_calls(network, space, count):
    """A second call, directly or through a template, adds no variables."""
    with _seeded_graph():
        network(_config(), space, _observations(), tf.ones([3], tf.int32))
        assert len(tf.trainable_variables()) == count
        network(_config(), space, _observations(seed=1), None)
        assert len(tf.trainable_variables()) == count
        names = [variable.name for variable in tf.trainable_variables()]
        assert all(name.startswith(('policy/', 'value/')) for name in names)
    with _seeded_graph():
        template = tf.make_template(
            'network', functools.partial(network, _config(), space))
        template(_observations(), tf.ones([3], tf.int32))
        template(_observations(seed=1), tf.ones([3], tf.int32))
        names = [variable.name for variable in tf.trainable_variables()]
        assert len(names) == count
        assert all(name.startswith(('network/policy/', 'network/value/'))
                   for name in names)


def test_value_network_is_separate():
    """The value does not depend on policy weights and vice versa."""
    with _seeded_graph():
        output = networks.feed_forward_gaussian(
            _config(), BOX, _observations(), None)
        policy_variables = tf.trainable_variables('policy')
        value_variables = tf.trainable_variables('value')
        assert policy_variables and value_variables
        value_gradients = tf.gradients(output.value, policy_variables)
        mean_gradients = tf.gradients(output.policy.mean, value_variables)
    assert all(gradient is None for gradient in value_gradients)
    assert all(gradient is None for gradient in mean_gradients)


def test_activation_from_config():
    """The activation field replaces the default ReLU."""
    with tf.Graph().as_default() as graph:
        networks.feed_forward_gaussian(
            _config(activation=tf.nn.elu), BOX, _observations(), None)
        types = {op.type for op in graph.get_operations()}
    assert 'Elu' in types and 'Maximum' not in types
    with tf.Graph().as_default() as graph:
        networks.feed_forward_gaussian(_config(), BOX, _observations(), None)
        types = {op.type for op in graph.get_operations()}
    # The default ReLU as `tools.compiled_ops.relu`.
    assert 'Maximum' in types and 'Relu' not in types


def test_recurrent_state_carried_across_calls():
    """Two calls carrying the state equal one call over the sequence."""
    observations = _observations(batch=3, time=6)
    with _seeded_graph():
        network = tf.make_template('network', functools.partial(
            networks.recurrent_gaussian, _config(), BOX))
        whole = network(observations, tf.fill([3], 6))
        first = network(observations[:, :2], tf.fill([3], 2))
        second = network(observations[:, 2:], tf.fill([3], 4), first.state)
        assert whole.state.shape.as_list() == [3, 4]
        assert whole.policy.mean.shape.as_list() == [3, 6, 2]
        whole, first, second = _evaluate((
            (whole.policy.mean, whole.value, whole.state),
            (first.policy.mean, first.value, first.state),
            (second.policy.mean, second.value, second.state)))
    np.testing.assert_allclose(
        whole[0], np.concatenate([first[0], second[0]], 1), atol=1e-6)
    np.testing.assert_allclose(
        whole[1], np.concatenate([first[1], second[1]], 1), atol=1e-6)
    np.testing.assert_allclose(whole[2], second[2], atol=1e-6)
    assert not np.allclose(first[2], second[2])


def test_recurrent_padding_keeps_state():
    """Steps past the length leave the state and give zero GRU outputs."""
    observations = _observations(batch=2, time=5)
    with _seeded_graph():
        network = tf.make_template('network', functools.partial(
            networks.recurrent_gaussian, _config(), BOX))
        padded = network(observations, [2, 5])
        short = network(observations[:, :2], None)
        full = network(observations, None)
        gru_outputs = tf.get_default_graph().get_tensor_by_name(
            'network/policy/gru/outputs:0')
        padded_state, short_state, full_state, outputs = _evaluate((
            padded.state, short.state, full.state, gru_outputs))
    np.testing.assert_allclose(padded_state[0], short_state[0], atol=1e-6)
    np.testing.assert_allclose(padded_state[1], full_state[1], atol=1e-6)
    np.testing.assert_array_equal(outputs[0, 2:], 0)
    assert np.all(outputs[1] != 0)


def test_recurrent_inside_cond_after_first_call():
    """After a first call outside, the network runs inside a cond."""
    with _seeded_graph():
        network = tf.make_template('network', functools.partial(
            networks.recurrent_gaussian, _config(), BOX))
        outside = network(_observations(), None)
        pred = tf.placeholder(tf.bool, [])
        inside = tf.cond(
            pred, lambda: network(_observations(), None).state,
            lambda: tf.zeros([3, 4]))
        outside, inside = _evaluate(
            (outside.state, inside), {pred: True})
    np.testing.assert_allclose(outside, inside, atol=1e-6)


@pytest.mark.parametrize('recurrent_value', [False, True])
def test_recurrent_value_sees_the_past(recurrent_value):
    """Only a recurrent value changes with an earlier observation."""
    observations = _observations(batch=1, time=3)
    changed = observations.copy()
    changed[:, 0] += 1.0
    config = _config(recurrent_value=recurrent_value)
    with _seeded_graph():
        network = tf.make_template('network', functools.partial(
            networks.recurrent_gaussian, config, BOX))
        values = _evaluate((
            network(observations, None).value,
            network(changed, None).value))
        count = len(tf.trainable_variables('network/value'))
    # At the first step both see different inputs; later only the GRU can
    # carry the difference.
    assert not np.allclose(values[0][:, 0], values[1][:, 0])
    assert np.allclose(values[0][:, 1:], values[1][:, 1:]) != recurrent_value
    # Hidden and output layers, or the GRU's three weights and the output.
    assert count == (5 if recurrent_value else 4)


def test_recurrent_value_state_carried_across_calls():
    """The state is the pair of GRU states; carrying it splits a sequence."""
    observations = _observations(batch=3, time=6)
    config = _config(recurrent_value=True, value_layers=(5, 3))
    with _seeded_graph():
        network = tf.make_template('network', functools.partial(
            networks.recurrent_gaussian, config, BOX))
        whole = network(observations, tf.fill([3], 6))
        first = network(observations[:, :2], tf.fill([3], 2))
        second = network(observations[:, 2:], tf.fill([3], 4), first.state)
        assert [part.shape.as_list() for part in whole.state] == [
            [3, 4], [3, 3]]
        whole, first, second = _evaluate((
            (whole.value, whole.state), (first.value, first.state),
            (second.value, second.state)))
    np.testing.assert_allclose(
        whole[0], np.concatenate([first[0], second[0]], 1), atol=1e-6)
    for whole_state, second_state in zip(whole[1], second[1]):
        np.testing.assert_allclose(whole_state, second_state, atol=1e-6)


def test_recurrent_value_needs_value_layers():
    """A recurrent value takes its GRU size from value_layers."""
    with _seeded_graph():
        with pytest.raises(ValueError, match=r'needs value_layers .*\(\)'):
            networks.recurrent_gaussian(
                _config(recurrent_value=True, value_layers=()), BOX,
                _observations(), None)


@pytest.mark.parametrize('network, space', [
    (networks.feed_forward_gaussian, DISCRETE),
    (networks.feed_forward_gaussian,
     gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32)),
    (networks.recurrent_gaussian, gym.spaces.MultiDiscrete([2, 3])),
    (networks.feed_forward_categorical, BOX),
    (networks.feed_forward_categorical, gym.spaces.Discrete(3, start=1)),
])
def test_unsupported_action_spaces(network, space):
    """Unsupported spaces raise ValueError naming the network and space."""
    with _seeded_graph():
        with pytest.raises(ValueError) as error:
            network(_config(), space, _observations(), None)
    assert network.__name__ in str(error.value)
    assert repr(space) in str(error.value)


def test_recurrent_needs_policy_layers():
    """Without policy layers there is no GRU size."""
    with _seeded_graph():
        with pytest.raises(ValueError, match='policy_layers'):
            networks.recurrent_gaussian(
                _config(policy_layers=()), BOX, _observations(), None)
