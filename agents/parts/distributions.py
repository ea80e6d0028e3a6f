"""Action distributions in graph ops, of any leading batch dimensions: diagonal
Gaussian and categorical; `type(dist)(**dist.parameters)` rebuilds one."""

import math

import tensorflow.compat.v1 as tf

from agents.tools import forwarding


class DiagonalGaussian:
    """Multivariate normal distribution with diagonal covariance."""

    def __init__(self, mean, logstd):
        """Create the distribution of the mean `batch_shape + [event_size]`
        and log standard deviations broadcastable to it; a ValueError when
        `mean` has no event dimension."""
        self._mean = _with_last_axis(mean, 'mean needs an event dimension')
        # Algorithms store one log standard deviation per step and action.
        self._logstd = tf.convert_to_tensor(
            logstd, dtype=self._mean.dtype) + tf.zeros_like(self._mean)

    mean = forwarding.read_only(
        'mean', 'Mean tensor `batch_shape + [event_size]`.')
    logstd = forwarding.read_only(
        'logstd', 'Log standard deviations in the shape of the mean.')

    @property
    def std(self):
        """Standard deviations in the shape of the mean."""
        return tf.exp(self._logstd)

    @property
    def parameters(self):
        """Dict of the constructor arguments, `logstd` broadcast."""
        return {'mean': self._mean, 'logstd': self._logstd}

    def sample(self, seed=None, key=None, noise=None):
        """One sample per batch element: by the op `seed`, keyed by an int64
        `[2]` `key`, or from the `noise` that `noise(key, ...)` drew."""
        with tf.name_scope('diagonal_gaussian_sample'):
            if noise is None and key is None:
                noise = tf.random.normal(
                    tf.shape(self._mean), dtype=self._mean.dtype, seed=seed)
            elif noise is None:
                key = tf.cast(key, tf.int64)
                shape, dtype = self._mean.shape, self._mean.dtype
                # XLA's kernel (one small compiled call) wherever it can:
                # TensorFlow's draws other numbers for a key, and compiled
                # and plain graphs must sample alike.
                noise = (
                    _compiled_normal(key, shape.as_list(), dtype)
                    if shape.is_fully_defined() else
                    _normal(key, tf.shape(self._mean), dtype))
            return tf.identity(
                self._mean + tf.exp(self._logstd) * noise, name='sample')

    @staticmethod
    def noise(key, shape):
        """The float32 noise of `sample(key=key)` for a mean of `shape`."""
        return _normal(tf.cast(key, tf.int64), shape)

    def mode(self):
        """The most likely value, the mean."""
        with tf.name_scope('diagonal_gaussian_mode'):
            return tf.identity(self._mean, name='mode')

    def log_prob(self, value):
        """Log density of `value`, summed over the event: `batch_shape`."""
        with tf.name_scope('diagonal_gaussian_log_prob'):
            value = tf.convert_to_tensor(value, dtype=self._mean.dtype)
            standardized = (value - self._mean) * tf.exp(-self._logstd)
            per_dimension = (
                -0.5 * tf.square(standardized) - self._logstd -
                0.5 * math.log(2 * math.pi))
            return tf.reduce_sum(per_dimension, -1, name='log_prob')

    def entropy(self):
        """Differential entropy `batch_shape`, summed over the event."""
        with tf.name_scope('diagonal_gaussian_entropy'):
            per_dimension = 0.5 * math.log(2 * math.pi * math.e) + self._logstd
            return tf.reduce_sum(per_dimension, -1, name='entropy')

    def kl(self, other):
        """KL(self || other) `batch_shape`; a TypeError for another type."""
        if not isinstance(other, DiagonalGaussian):
            raise TypeError(
                f'KL needs another DiagonalGaussian, got {type(other)}')
        with tf.name_scope('diagonal_gaussian_kl'):
            # From differences of log deviations: padded steps keep finite
            # gradients.
            logstd_difference = self._logstd - other.logstd
            variance_ratio = tf.exp(2 * logstd_difference)
            scaled_mean_difference = (
                (self._mean - other.mean) * tf.exp(-other.logstd))
            per_dimension = 0.5 * (
                variance_ratio + tf.square(scaled_mean_difference) - 1
            ) - logstd_difference
            return tf.reduce_sum(per_dimension, -1, name='kl')


class Categorical:
    """Categorical distribution over the last axis of its logits; those
    down to about -1e30 give exact zeros without NaN."""

    def __init__(self, logits):
        """Create the distribution of int32 classes of the logits
        `batch_shape + [num_classes]` (a ValueError without that axis)."""
        self._logits = _with_last_axis(logits, 'logits need a class dimension')

    logits = forwarding.read_only(
        'logits', 'Logits tensor `batch_shape + [num_classes]`.')

    @property
    def probs(self):
        """Probabilities of all classes."""
        return tf.nn.softmax(self._logits)

    @property
    def parameters(self):
        """Dict of the constructor's tensor arguments."""
        return {'logits': self._logits}

    def sample(self, seed=None, key=None, noise=None):
        """A class index per batch element, `batch_shape`; as
        `DiagonalGaussian.sample`, `noise` Gumbel noise `[rows, classes]`."""
        with tf.name_scope('categorical_sample'):
            num_classes = tf.shape(self._logits)[-1]
            flat_logits = tf.reshape(self._logits, [-1, num_classes])
            if noise is not None:
                flat_sample = tf.argmax(
                    flat_logits + noise, -1, output_type=tf.int32)
            elif key is None:
                flat_sample = tf.random.categorical(
                    flat_logits, 1, dtype=tf.int32, seed=seed)
            else:
                # XLA has no stateless multinomial: the Gumbel-max trick.
                flat_sample = _compiled_categorical(
                    flat_logits, tf.cast(key, tf.int64))
            return tf.reshape(
                flat_sample, tf.shape(self._logits)[:-1], name='sample')

    @staticmethod
    def noise(key, shape):
        """The Gumbel noise of `sample(key=key)` for flat logits of `shape`
        `[rows, classes]`."""
        return _gumbel(tf.cast(key, tf.int64), shape)

    def mode(self):
        """The most likely class index, `batch_shape`."""
        with tf.name_scope('categorical_mode'):
            return tf.argmax(
                self._logits, -1, output_type=tf.int32, name='mode')

    def log_prob(self, value):
        """Log probability of the class indices `value`, `batch_shape`."""
        with tf.name_scope('categorical_log_prob'):
            value = tf.cast(value, tf.int32)
            # The fused cross entropy has a stable gradient for any logits.
            cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=value, logits=self._logits)
            return tf.negative(cross_entropy, name='log_prob')

    def entropy(self):
        """Entropy of the distribution, `batch_shape`."""
        with tf.name_scope('categorical_entropy'):
            log_probs = tf.nn.log_softmax(self._logits)
            return tf.negative(
                tf.reduce_sum(tf.exp(log_probs) * log_probs, -1),
                name='entropy')

    def kl(self, other):
        """KL(self || other), `batch_shape`; a TypeError for another type."""
        if not isinstance(other, Categorical):
            raise TypeError(f'KL needs another Categorical, got {type(other)}')
        with tf.name_scope('categorical_kl'):
            log_probs = tf.nn.log_softmax(self._logits)
            log_ratio = log_probs - tf.nn.log_softmax(other.logits)
            return tf.reduce_sum(tf.exp(log_probs) * log_ratio, -1, name='kl')


def _with_last_axis(value, requirement):
    """The tensor of `value`; ValueError(`requirement`, ...) for a scalar."""
    value = tf.convert_to_tensor(value)
    if value.shape.ndims is not None and value.shape.ndims < 1:
        raise ValueError(f'{requirement}, got shape {value.shape}')
    return value


def _normal(key, shape, dtype=tf.float32):
    """Standard normal noise of `shape`, keyed by `key`."""
    return tf.random.stateless_normal(
        shape, seed=key, dtype=dtype, alg='philox')


def _gumbel(key, shape):
    """Gumbel noise of `shape`, keyed by `key`."""
    uniform = tf.random.stateless_uniform(
        shape, seed=key, minval=1e-20, maxval=1.0, alg='philox')
    return -tf.math.log(-tf.math.log(uniform))


def _gumbel_max(logits, key):
    """The argmax `[rows]` of the logits plus Gumbel noise."""
    return tf.argmax(
        logits + _gumbel(key, tf.shape(logits)), -1, output_type=tf.int32)


# Without autograph: nothing to convert, and no generated file is left in
# the temporary folder by a process that ends without cleaning up.
_compiled_normal = tf.function(_normal, jit_compile=True, autograph=False)
_compiled_categorical = tf.function(
    _gumbel_max, jit_compile=True, autograph=False)
