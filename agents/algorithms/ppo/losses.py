"""PPO's losses and the helpers they share, over padded batches of episodes.

Tensors are `[batch, time]` with a valid `length` per row; steps past the
length hold arbitrary values and count nowhere.
"""

import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import utility
from agents.parts import distributions
from agents.tools import compiled_ops


def value_loss_fn(value, target, old_value, length, clip=None):
    """Half squared error between predicted values and their targets.

    Args:
      value: Predicted values [batch, time].
      target: Value targets [batch, time].
      old_value: Values predicted when the data was collected.
      length: Valid lengths [batch].
      clip: None, or the range around `old_value` beyond which a
          prediction's error counts no less than at the range's edge, as in
          OpenAI Baselines' PPO2 (the larger of both errors is used).

    Returns:
      Scalar loss.
    """
    with tf.name_scope('value_loss'):
        error = tf.square(value - target)
        if clip:
            clipped = old_value + tf.clip_by_value(
                value - old_value, -clip, clip)
            error = tf.maximum(error, tf.square(clipped - target))
        return 0.5 * masked_mean(error, length)


def adapted_penalty(penalty, kl, kl_target):
    """The KL penalty coefficient after one update.

    Args:
      penalty: Current penalty coefficient tensor.
      kl: Mean KL divergence the update caused.
      kl_target: Desired KL divergence per update.

    Returns:
      The penalty multiplied by 1.5 above 1.3 * kl_target, divided by 1.5
      below 0.7 * kl_target, unchanged otherwise.
    """
    raised = tf.cast(kl > 1.3 * kl_target, tf.float32)
    lowered = tf.cast(kl < 0.7 * kl_target, tf.float32)
    factor = 1.5 ** (raised - lowered)
    return penalty * factor


def masked_mean(tensor, length):
    """Mean over the valid time steps of all sequences."""
    masked = utility.mask(tensor, length)
    count = tf.maximum(tf.cast(tf.reduce_sum(length), tensor.dtype), 1.0)
    return tf.reduce_sum(masked) / count


def normalize_advantage(advantage, length):
    """Zero mean and unit variance over the valid steps."""
    mean = masked_mean(advantage, length)
    variance = masked_mean(tf.square(advantage - mean), length)
    normalized = (advantage - mean) / (compiled_ops.sqrt(variance) + 1e-8)
    return utility.mask(normalized, length)


def policy_params(policy):
    """The tensors that define a policy distribution, as a tuple."""
    if isinstance(policy, distributions.Categorical):
        return (policy.logits,)
    logstd = tf.broadcast_to(policy.logstd, tf.shape(policy.mean))
    return (policy.mean, logstd)


def policy_from_params(discrete, params):
    """Rebuild a policy distribution from `policy_params` output."""
    if discrete:
        return distributions.Categorical(params[0])
    return distributions.DiagonalGaussian(params[0], params[1])
