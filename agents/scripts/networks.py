"""Policy and value networks for PPO: `(config, action_space, observations
[batch, time, ...], length, state=None) -> tools.AttrDict(policy, value,
state)`, a distribution and a value per step and the recurrent state after
each row's last valid step (None without). Call one outside control flow
first: the scopes `policy` and `value` reuse their variables."""

import functools

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.tools import compiled_ops


WEIGHT_INITS = ('glorot', 'orthogonal')
MEAN_ACTIVATIONS = ('tanh', None)


def feed_forward_gaussian(
        config, action_space, observations, length, state=None):
    """Feed-forward Gaussian policy for a one-dimensional `gym.spaces.Box`
    (a ValueError for other action spaces): the mean passes through tanh
    into [-1, 1], the range of `RangeNormalize` (linear with
    `mean_activation=None`); the log standard deviation is a learned vector
    starting at `log(init_std)`."""
    del length  # Feed-forward networks treat every step alike.
    head = functools.partial(
        _gaussian_head, config,
        _box_size(action_space, 'feed_forward_gaussian'))
    return _networks(
        config, observations, head, parts.DiagonalGaussian, state=state)


def feed_forward_categorical(
        config, action_space, observations, length, state=None):
    """Feed-forward categorical policy of int32 actions for a
    `gym.spaces.Discrete` starting at zero (a ValueError for others)."""
    del length  # Feed-forward networks treat every step alike.
    if not (isinstance(action_space, gym.spaces.Discrete) and
            int(action_space.start) == 0):
        raise ValueError(
            f'feed_forward_categorical needs a Discrete action space '
            f'starting at 0, got {action_space!r}')
    head = functools.partial(_categorical_head, config, int(action_space.n))
    return _networks(
        config, observations, head, parts.Categorical, state=state)


def recurrent_gaussian(config, action_space, observations, length, state=None):
    """Gaussian policy whose layers `policy_layers[:-1]` feed a GRU of
    `policy_layers[-1]` units, as `feed_forward_gaussian` otherwise. Steps
    past `length` (None: full) keep the state and output zeros. The caller
    carries the state `[batch, units]` (None: zeros) and zeros it where an
    episode starts. With `recurrent_value` (False in 2017) the value network
    ends in a GRU too: the state is the pair (policy, value). A ValueError
    for other action spaces or empty `policy_layers` (or `value_layers` with
    `recurrent_value`)."""
    head = functools.partial(
        _gaussian_head, config, _box_size(action_space, 'recurrent_gaussian'))
    recurrent = ('policy', 'value') if config.recurrent_value else ('policy',)
    for scope in recurrent:
        if not config[f'{scope}_layers']:
            raise ValueError(
                f'recurrent_gaussian needs {scope}_layers ending in the GRU '
                f'size, got {config[f"{scope}_layers"]!r}')
    return _networks(
        config, observations, head, parts.DiagonalGaussian, length, state,
        recurrent)


def _networks(
        config, observations, policy_head, distribution, length=None,
        state=None, recurrent=()):
    """The policy and value networks, those in `recurrent` ending in a GRU."""
    observations = _flatten_observations(observations)
    activation, init = _activation(config.activation), config.weight_init
    states = iter(
        state if len(recurrent) == 2 and state is not None else
        (state, state))
    heads = dict(policy=policy_head, value=_value_head)
    outputs, last_states = {}, []
    for scope, head in heads.items():
        layers = config[f'{scope}_layers']
        with tf.variable_scope(scope, reuse=tf.AUTO_REUSE):
            if scope in recurrent:
                hidden = _mlp(observations, layers[:-1], activation, init)
                hidden, last_state = _gru(
                    hidden, length, next(states), int(layers[-1]))
                last_states.append(last_state)
            else:
                hidden = _mlp(observations, layers, activation, init)
            outputs[scope] = head(hidden, init)
    if last_states:
        state = (
            last_states[0] if len(last_states) == 1 else tuple(last_states))
    return tools.AttrDict(
        policy=distribution(*outputs['policy']), value=outputs['value'],
        state=state)


def _gaussian_head(config, action_size, hidden, init):
    """Mean layer and state-independent log standard deviation."""
    mean_activation = config.mean_activation
    if mean_activation not in MEAN_ACTIVATIONS:
        raise ValueError(
            f'Config mean_activation={mean_activation!r} must be one of '
            f'{MEAN_ACTIVATIONS}.')
    mean = _dense(
        hidden, action_size, tf.tanh if mean_activation else None,
        scale=config.init_output_factor, name='mean', init=init)
    logstd = tf.get_variable(
        'logstd', [action_size], tf.float32,
        tf.constant_initializer(np.log(config.init_std)))
    mean = compiled_ops.check_numerics(mean, 'mean')
    logstd = compiled_ops.check_numerics(logstd, 'logstd')
    return mean, logstd


def _categorical_head(config, num_classes, hidden, init):
    """The logits layer, as a tuple."""
    logits = _dense(
        hidden, num_classes, scale=config.init_output_factor, name='logits',
        init=init)
    return (compiled_ops.check_numerics(logits, 'logits'),)


def _value_head(hidden, init):
    """Value output [batch, time]."""
    value = tf.squeeze(_dense(hidden, 1, name='output', init=init), -1)
    return compiled_ops.check_numerics(value, 'value')


def _box_size(action_space, network):
    """Number of dimensions of a one-dimensional Box space."""
    if not (isinstance(action_space, gym.spaces.Box) and
            len(action_space.shape) == 1):
        raise ValueError(
            f'{network} needs a Box action space with one dimension, got '
            f'{action_space!r}')
    return int(action_space.shape[0])


def _activation(activation):
    """The hidden activation, ReLU as `compiled_ops.relu` (direct in XLA)."""
    if activation in (tf.nn.relu, tf.compat.v2.nn.relu):
        return compiled_ops.relu
    return activation


def _initializer(init, scale):
    """Glorot uniform times `scale`, or orthogonal of gain `scale`."""
    if init not in WEIGHT_INITS:
        raise ValueError(
            f'Config weight_init={init!r} must be one of {WEIGHT_INITS}.')
    if init == 'orthogonal':
        return tf.orthogonal_initializer(scale)
    return tf.variance_scaling_initializer(
        scale, mode='fan_avg', distribution='uniform')


def _flatten_observations(observations):
    """Cast to float32 and flatten all but the batch and time axes."""
    with tf.name_scope('flatten_observations'):
        observations = tf.cast(observations, tf.float32)
        event_shape = observations.shape[2:].as_list()
        if None in event_shape:
            raise ValueError(
                f'observations need static shapes after the batch and time '
                f'axes, got {observations.shape}')
        if len(event_shape) == 1:
            return observations
        return _reshape(
            observations, observations, 2, [int(np.prod(event_shape))],
            'flat_observations')


def _reshape(tensor, like, keep, tail, name):
    """Reshape `tensor` to the first `keep` axes of `like`, then `tail`."""
    leading = like.shape[:keep]
    # A constant shape where those axes are static: fewer ops to build.
    if leading.is_fully_defined():
        shape = leading.as_list() + list(tail)
    else:
        shape = tf.concat([tf.shape(like)[:keep], tail], 0)
    reshaped = tf.reshape(tensor, shape, name=name)
    reshaped.set_shape(leading.concatenate(tail))
    return reshaped


def _dense(
        inputs, units, activation=None, scale=1.0, name='dense',
        init='glorot'):
    """Fully connected layer over the last axis of inputs of any rank."""
    input_size = tf.compat.dimension_value(inputs.shape[-1])
    with tf.variable_scope(name):
        kernel = tf.get_variable(
            'kernel', [input_size, units], tf.float32,
            _initializer(init, scale))
        bias = tf.get_variable(
            'bias', [units], tf.float32, tf.zeros_initializer())
        rank = inputs.shape.ndims
        flat_inputs = (
            inputs if rank == 2 else tf.reshape(inputs, [-1, input_size]))
        outputs = tf.matmul(flat_inputs, kernel) + bias
        if activation is not None:
            outputs = activation(outputs)
        if rank == 2:
            return outputs
        return _reshape(outputs, inputs, rank - 1, [units], 'outputs')


def _mlp(inputs, layers, activation, init):
    """Stack of hidden layers; orthogonal ones get gain sqrt(2)."""
    scale = np.sqrt(2) if init == 'orthogonal' else 1.0
    if not layers:
        return inputs
    rank = inputs.shape.ndims
    # The layers act on rows: flatten the leading axes once, not per layer.
    hidden = inputs if rank == 2 else tf.reshape(
        inputs, [-1, tf.compat.dimension_value(inputs.shape[-1])])
    for index, size in enumerate(layers):
        hidden = _dense(
            hidden, int(size), activation, scale, f'hidden_{index}', init)
    if rank == 2:
        return hidden
    return _reshape(hidden, inputs, rank - 1, [int(layers[-1])], 'hidden')


def _gru(inputs, length, state, units, name='gru'):
    """GRU over the time axis: outputs zero past `length`, last state."""
    input_size = tf.compat.dimension_value(inputs.shape[-1])
    with tf.variable_scope(name):
        input_kernel = tf.get_variable(
            'input_kernel', [input_size, 3 * units], tf.float32,
            _initializer('glorot', 1.0))
        state_kernel = tf.get_variable(
            'state_kernel', [units, 3 * units], tf.float32,
            _initializer('glorot', 1.0))
        # Gate biases of one make the layer keep its state at first, as in
        # the classic GRU cell; the candidate bias starts at zero.
        bias = tf.get_variable(
            'bias', [3 * units], tf.float32, tf.constant_initializer(
                np.concatenate([np.ones(2 * units), np.zeros(units)])))
        batch_size = tf.shape(inputs)[0]
        max_length = tf.shape(inputs)[1]
        if state is None:
            state = tf.zeros([batch_size, units], tf.float32)
        if length is None:
            length = tf.fill([batch_size], max_length)
        gate_kernel = state_kernel[:, :2 * units]
        candidate_kernel = state_kernel[:, 2 * units:]
        # Project all steps at once; the loop only adds the state terms.
        projection = tf.einsum('bti,ij->btj', inputs, input_kernel) + bias
        valid = tf.range(max_length)[None, :] < tf.cast(
            length, tf.int32)[:, None]
        projection = tf.transpose(projection, [1, 0, 2], name='projection')
        valid = tf.transpose(valid, [1, 0], name='valid')

        def _step(previous, step_inputs):
            projection, valid = step_inputs
            gates = tf.sigmoid(
                projection[:, :2 * units] + tf.matmul(previous, gate_kernel))
            reset, update = tf.split(gates, 2, axis=1)
            candidate = tf.tanh(
                projection[:, 2 * units:] +
                tf.matmul(reset * previous, candidate_kernel))
            current = update * previous + (1 - update) * candidate
            return tf.where_v2(valid[:, None], current, previous)

        states = tf.scan(_step, (projection, valid), state, name='states')
        outputs = tf.where_v2(valid[:, :, None], states, tf.zeros_like(states))
        outputs = tf.transpose(outputs, [1, 0, 2], name='outputs')
        outputs.set_shape(inputs.shape[:-1].concatenate([units]))
        # Prepending the initial state handles sequences of zero steps.
        final_state = tf.concat([state[None], states], 0)[-1]
        return outputs, tf.identity(final_state, name='final_state')
