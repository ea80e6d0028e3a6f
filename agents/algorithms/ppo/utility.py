"""In-graph helpers for PPO: returns, advantages, masks, losses, summaries.

Episodes are `[batch, time]` tensors with a valid `length` per row; steps
past it hold arbitrary values and count nowhere."""

import re

import numpy as np
import tensorflow.compat.v1 as tf

from agents.parts import distributions
from agents.tools import nested
from agents.tools import compiled_ops


def mask(tensor, length, value=0):
    """The tensor `[batch, time, ...]` with the scalar `value` at and past
    the integer `length` `[batch]` of each row."""
    with tf.name_scope('mask'):
        tensor = tf.convert_to_tensor(tensor)
        steps = tf.compat.dimension_value(tensor.shape[1])
        # A static range is one constant (compiled code has static shapes).
        time_range = (
            tf.range(tf.shape(tensor)[1]) if steps is None else
            tf.constant(np.arange(steps, dtype=np.int32)))
        valid = tf.expand_dims(time_range, 0) < tf.expand_dims(
            tf.cast(length, tf.int32), 1)
        return compiled_ops.where(
            valid, tensor, tf.convert_to_tensor(value, tensor.dtype))


def _reverse_discounted_sum(values, length, factor):
    """Compute y_t = x_t + factor * y_{t+1} over valid steps, zero beyond."""
    masked = mask(values, length)
    # Scan over time, so move time to the front and run backwards.
    time_major = tf.transpose(tf.reverse(masked, [1]), [1, 0])
    accumulated = tf.scan(
        lambda agg, current: current + factor * agg, time_major,
        initializer=tf.zeros_like(time_major[0]), back_prop=False)
    return tf.reverse(tf.transpose(accumulated, [1, 0]), [1])


def discounted_return(reward, length, discount):
    """Discounted Monte-Carlo return of the rewards `[batch, time]`, zero
    past `length` `[batch]`."""
    with tf.name_scope('discounted_return'):
        return tf.stop_gradient(
            _reverse_discounted_sum(reward, length, discount))


def lambda_advantage(reward, value, length, discount, gae_lambda):
    """Generalized advantage estimation (Schulman et al., 2015), zero past
    `length`; the value after the last valid step is zero (callers fold
    bootstrapping into the last reward)."""
    with tf.name_scope('lambda_advantage'):
        value = mask(value, length)
        next_value = tf.concat([value[:, 1:], tf.zeros_like(value[:, -1:])], 1)
        temporal_difference = reward + discount * next_value - value
        advantage = _reverse_discounted_sum(
            temporal_difference, length, discount * gae_lambda)
        return tf.stop_gradient(advantage)


def reinit_nested_vars(variables, indices=None):
    """The op that zeros nested variables, at batch `indices` if given."""
    def zeros(variable):
        if indices is None:
            return tf.zeros_like(variable)
        return tf.zeros(
            tf.concat([tf.shape(indices), tf.shape(variable)[1:]], 0),
            variable.dtype)
    return assign_nested_vars(variables, nested.map(zeros, variables), indices)


def assign_nested_vars(variables, tensors, indices=None):
    """The op that assigns nested tensors to matching nested variables, at
    batch `indices` if given."""
    return tf.group(*nested.map(
        lambda variable, tensor: variable.assign(tensor) if indices is None
        else tf.scatter_update(variable, indices, tensor),
        variables, tensors, flatten=True))


def gradient_norms(grad_vars, groups=None):
    """Dict from group name to the global norm of the gradients whose
    variable name matches its regex in `groups` (None: one group 'all')."""
    grad_vars = [(grad, var) for grad, var in grad_vars if grad is not None]
    matches = _by_group(groups, grad_vars, lambda pair: pair[1].name)
    return {
        name: compiled_ops.global_norm([grad for grad, _ in matched])
        if matched else tf.constant(0.0)
        for name, matched in matches.items()}


def variable_summaries(vars_, groups=None, scope='weights'):
    """Summary of histograms of the variables by group: a dict from group
    name to a regex over variable names (None: one group 'all')."""
    summaries = []
    with tf.name_scope(scope):
        for name, matched in _by_group(
                groups, vars_, lambda var: var.name).items():
            if matched:
                flat = tf.concat([tf.reshape(var, [-1]) for var in matched], 0)
                summaries.append(tf.summary.histogram(name, flat))
    return tf.summary.merge(summaries) if summaries else tf.constant('')


def _by_group(groups, items, name_of):
    """Dict from group name to the items whose name its regex matches."""
    return {
        name: [item for item in items if re.match(pattern, name_of(item))]
        for name, pattern in (groups or {r'all': r'.*'}).items()}


def state_variables(state):
    """Zero variables like a batch's nested recurrent `state` (or None)."""
    if state is None:
        return None
    return nested.map(
        lambda tensor: tf.Variable(tf.zeros_like(tensor), trainable=False),
        state)


def value_loss_fn(value, target, old_value, length, clip=None):
    """Half the mean squared error of the values against their targets over
    the valid steps; with `clip`, the error past that range around
    `old_value` counts at least as at its edge (OpenAI Baselines' PPO2)."""
    with tf.name_scope('value_loss'):
        error = tf.square(value - target)
        if clip:
            clipped = old_value + tf.clip_by_value(
                value - old_value, -clip, clip)
            error = tf.maximum(error, tf.square(clipped - target))
        return 0.5 * masked_mean(error, length)


def adapted_penalty(penalty, kl, kl_target):
    """The KL penalty coefficient after an update whose mean KL was `kl`:
    times 1.5 above 1.3 * `kl_target`, divided by 1.5 below 0.7 times it."""
    raised = tf.cast(kl > 1.3 * kl_target, tf.float32)
    lowered = tf.cast(kl < 0.7 * kl_target, tf.float32)
    factor = 1.5 ** (raised - lowered)
    return penalty * factor


def masked_mean(tensor, length):
    """Mean over the valid time steps of all sequences."""
    masked = mask(tensor, length)
    count = tf.maximum(tf.cast(tf.reduce_sum(length), tensor.dtype), 1.0)
    return tf.reduce_sum(masked) / count


def normalize_advantage(advantage, length):
    """Zero mean and unit variance over the valid steps."""
    mean = masked_mean(advantage, length)
    variance = masked_mean(tf.square(advantage - mean), length)
    normalized = (advantage - mean) / (compiled_ops.sqrt(variance) + 1e-8)
    return mask(normalized, length)


def policy_params(policy):
    """The tensors that define a policy distribution, as a tuple."""
    if isinstance(policy, distributions.Categorical):
        return (policy.logits,)
    logstd = tf.broadcast_to(policy.logstd, tf.shape(policy.mean))
    return (policy.mean, logstd)


def policy_from_params(discrete, params):
    """Rebuild a policy distribution from `policy_params` output."""
    if discrete:
        return distributions.Categorical(*params)
    return distributions.DiagonalGaussian(*params)
