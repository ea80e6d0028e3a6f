"""Policy and value networks for PPO.

Every network has the signature `(config, action_space, observations, length,
state=None)`, with observations `[batch, time, ...]`, and returns
`tools.AttrDict(policy, value, state)`: a distribution over actions for every
step (`parts.DiagonalGaussian` or `parts.Categorical`), the state values
`[batch, time]`, and the recurrent state after the last valid step of each
sequence (None for feed-forward networks).

The policy and the value are separate networks in the variable scopes
`policy` and `value`, which reuse their variables (`tf.AUTO_REUSE`): calling
a network again in the same outer scope shares the weights. Call it once
outside of control flow first, so that its variables are created at the top
level of the graph.

Config keys read (their defaults are in `configs.default()`):
`policy_layers`, `value_layers` (hidden sizes), `activation` (of the hidden
layers), `init_output_factor` (scale of the policy's output layer),
`init_std` (of Gaussian policies), `mean_activation` ('tanh', the 2017
default, or None for a linear mean), `recurrent_value`, and `weight_init`
('glorot', or 'orthogonal': gain sqrt(2) for hidden layers, as in most PPO
implementations since OpenAI Baselines).
"""

import functools
import operator

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.tools import compiled_ops


def feed_forward_gaussian(
        config, action_space, observations, length, state=None):
    """Feed-forward Gaussian policy with a separate value network.

    The mean passes through tanh into [-1, 1], the action range of the
    `RangeNormalize` wrapper (linear with `mean_activation=None`); the log
    standard deviation is a learned vector starting at `log(init_std)`.

    Args:
        config: Configuration with the fields listed in the module docstring.
        action_space: `gym.spaces.Box` with a one-dimensional shape.
        observations: Tensor `[batch, time, ...]`.
        length: Unused; every step is computed alike.
        state: Unused; returned unchanged.

    Returns:
        `tools.AttrDict(policy, value, state)`.

    Raises:
        ValueError: For other action spaces.
    """
    del length  # Feed-forward networks treat every step alike.
    action_size = _box_size(action_space, 'feed_forward_gaussian')
    observations, activation, init = _prepare(config, observations)
    with tf.variable_scope('policy', reuse=tf.AUTO_REUSE):
        hidden = _mlp(observations, config.policy_layers, activation, init)
        mean, logstd = _gaussian_head(config, hidden, action_size)
    with tf.variable_scope('value', reuse=tf.AUTO_REUSE):
        value = _value_head(
            observations, config.value_layers, activation, init)
    return tools.AttrDict(
        policy=parts.DiagonalGaussian(mean, logstd), value=value, state=state)


def feed_forward_categorical(
        config, action_space, observations, length, state=None):
    """Feed-forward categorical policy with a separate value network.

    Args:
        config: Configuration with the fields listed in the module docstring;
            `init_std` is not used.
        action_space: `gym.spaces.Discrete` starting at zero.
        observations: Tensor `[batch, time, ...]`.
        length: Unused; every step is computed alike.
        state: Unused; returned unchanged.

    Returns:
        `tools.AttrDict(policy, value, state)` with int32 actions.

    Raises:
        ValueError: For other action spaces.
    """
    del length  # Feed-forward networks treat every step alike.
    if not (isinstance(action_space, gym.spaces.Discrete) and
            int(action_space.start) == 0):
        raise ValueError(
            f'feed_forward_categorical needs a Discrete action space '
            f'starting at 0, got {action_space!r}')
    observations, activation, init = _prepare(config, observations)
    with tf.variable_scope('policy', reuse=tf.AUTO_REUSE):
        hidden = _mlp(observations, config.policy_layers, activation, init)
        logits = _dense(
            hidden, int(action_space.n), scale=config.init_output_factor,
            name='logits', init=init)
        logits = compiled_ops.check_numerics(logits, 'logits')
    with tf.variable_scope('value', reuse=tf.AUTO_REUSE):
        value = _value_head(
            observations, config.value_layers, activation, init)
    return tools.AttrDict(
        policy=parts.Categorical(logits), value=value, state=state)


def recurrent_gaussian(
        config, action_space, observations, length, state=None):
    """Gaussian policy with a GRU layer and a feed-forward value network.

    The hidden layers `policy_layers[:-1]` feed a GRU of `policy_layers[-1]`
    units; the mean and standard deviation follow as in
    `feed_forward_gaussian`. Steps past a sequence's length keep the state
    and output zeros. The caller carries the state from call to call and
    resets it to zeros at the start of an episode. With `recurrent_value`
    (False in 2017) the value network is recurrent too, over `value_layers`,
    and the state is the pair (policy state, value state).

    Args:
        config: Configuration with the fields listed in the module docstring;
            `policy_layers` needs at least one entry.
        action_space: `gym.spaces.Box` with a one-dimensional shape.
        observations: Tensor `[batch, time, ...]`.
        length: Integer tensor `[batch]` of valid lengths, or None for full
            sequences.
        state: Tensor `[batch, units]`, or None for zeros; with
            `recurrent_value` a pair of them.

    Returns:
        `tools.AttrDict(policy, value, state)` with the state `[batch,
        units]` (or the pair) after the last valid step.

    Raises:
        ValueError: For other action spaces or empty `policy_layers` (or
            `value_layers` with `recurrent_value`).
    """
    action_size = _box_size(action_space, 'recurrent_gaussian')
    recurrent_value = bool(config.recurrent_value)
    for key in ('policy_layers',) + (('value_layers',) * recurrent_value):
        if not config[key]:
            raise ValueError(
                f'recurrent_gaussian needs {key} ending in the GRU size, '
                f'got {config[key]!r}')
    observations, activation, init = _prepare(config, observations)
    policy_state, value_state = (
        state if recurrent_value and state is not None else (state, None))
    with tf.variable_scope('policy', reuse=tf.AUTO_REUSE):
        hidden = _mlp(
            observations, config.policy_layers[:-1], activation, init)
        hidden, policy_state = _gru(
            hidden, length, policy_state, int(config.policy_layers[-1]))
        mean, logstd = _gaussian_head(config, hidden, action_size)
    with tf.variable_scope('value', reuse=tf.AUTO_REUSE):
        if not recurrent_value:
            value = _value_head(
                observations, config.value_layers, activation, init)
            state = policy_state
        else:
            hidden = _mlp(
                observations, config.value_layers[:-1], activation, init)
            hidden, value_state = _gru(
                hidden, length, value_state, int(config.value_layers[-1]))
            value = _value_head(hidden, (), activation, init)
            state = (policy_state, value_state)
    return tools.AttrDict(
        policy=parts.DiagonalGaussian(mean, logstd), value=value, state=state)


def _box_size(action_space, network):
    """Number of dimensions of a one-dimensional Box space."""
    if not (isinstance(action_space, gym.spaces.Box) and
            len(action_space.shape) == 1):
        raise ValueError(
            f'{network} needs a Box action space with one dimension, got '
            f'{action_space!r}')
    return int(action_space.shape[0])


def _prepare(config, observations):
    """The flat float32 observations, hidden activation and weight init."""
    return (
        _flatten_observations(observations), _activation(config.activation),
        _weight_init(config))


def _activation(activation):
    """The hidden activation; ReLU as `compiled_ops.relu`, which XLA
    translates directly (the same values and gradients but at zero)."""
    if activation in (tf.nn.relu, tf.compat.v2.nn.relu):
        return compiled_ops.relu
    return activation


WEIGHT_INITS = ('glorot', 'orthogonal')
MEAN_ACTIVATIONS = ('tanh', None)


def _weight_init(config):
    """The configured weight initialization scheme."""
    init = config.weight_init
    if init not in WEIGHT_INITS:
        raise ValueError(
            f'Config weight_init={init!r} must be one of {WEIGHT_INITS}.')
    return init


def _initializer(init, scale):
    """Kernel initializer: Glorot uniform times `scale`, or orthogonal of
    gain `scale`."""
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
        size = functools.reduce(operator.mul, event_shape, 1)
        return _reshape(
            observations, observations, 2, [size], 'flat_observations')


def _reshape(tensor, like, keep, tail, name):
    """Reshape `tensor` to the first `keep` axes of `like` and then `tail`.

    Static leading axes (as in compiled code) make the shape a constant:
    fewer operations to build than on the dynamic shape.
    """
    leading = like.shape[:keep]
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


def _mlp(inputs, layers, activation, init='glorot'):
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


def _gaussian_head(config, hidden, action_size):
    """Mean layer and state-independent log standard deviation."""
    mean_activation = config.mean_activation
    if mean_activation not in MEAN_ACTIVATIONS:
        raise ValueError(
            f'Config mean_activation={mean_activation!r} must be one of '
            f'{MEAN_ACTIVATIONS}.')
    mean = _dense(
        hidden, action_size, tf.tanh if mean_activation else None,
        scale=config.init_output_factor, name='mean',
        init=_weight_init(config))
    logstd = tf.get_variable(
        'logstd', [action_size], tf.float32,
        tf.constant_initializer(np.log(config.init_std)))
    mean = compiled_ops.check_numerics(mean, 'mean')
    logstd = compiled_ops.check_numerics(logstd, 'logstd')
    return mean, logstd


def _value_head(observations, layers, activation, init='glorot'):
    """Value network output [batch, time]."""
    hidden = _mlp(observations, layers, activation, init)
    value = tf.squeeze(_dense(hidden, 1, name='output', init=init), -1)
    return compiled_ops.check_numerics(value, 'value')


def _gru(inputs, length, state, units, name='gru'):
    """GRU layer over the time axis of `[batch, time, size]` inputs.

    Returns the outputs `[batch, time, units]`, zero past `length` (None:
    full sequences), and the state after the last valid step. The weights
    are created before the loop, never inside control flow.
    """
    input_size = tf.compat.dimension_value(inputs.shape[-1])
    with tf.variable_scope(name):
        glorot = tf.variance_scaling_initializer(
            1.0, mode='fan_avg', distribution='uniform')
        input_kernel = tf.get_variable(
            'input_kernel', [input_size, 3 * units], tf.float32, glorot)
        state_kernel = tf.get_variable(
            'state_kernel', [units, 3 * units], tf.float32, glorot)
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

        def _define_inputs():
            # Project all steps at once; the loop only adds the state terms.
            projection = tf.einsum('bti,ij->btj', inputs, input_kernel) + bias
            valid = tf.range(max_length)[None, :] < tf.cast(
                length, tf.int32)[:, None]
            return (
                tf.transpose(projection, [1, 0, 2], name='projection'),
                tf.transpose(valid, [1, 0], name='valid'))

        gate_kernel = state_kernel[:, :2 * units]
        candidate_kernel = state_kernel[:, 2 * units:]

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

        projection, valid = _define_inputs()
        states = tf.scan(_step, (projection, valid), state, name='states')
        outputs = tf.where_v2(
            valid[:, :, None], states, tf.zeros_like(states))
        outputs = tf.transpose(outputs, [1, 0, 2], name='outputs')
        outputs.set_shape(inputs.shape[:-1].concatenate([units]))
        # Prepending the initial state handles sequences of zero steps.
        final_state = tf.concat([state[None], states], 0)[-1]
        return outputs, tf.identity(final_state, name='final_state')
