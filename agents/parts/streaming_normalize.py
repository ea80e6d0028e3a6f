"""Running normalization of tensors by their mean and standard deviation."""

import collections

import tensorflow.compat.v1 as tf
from agents.tools import compiled_ops


# The count of values, their mean and their sum of squared deviations.
Statistics = collections.namedtuple('Statistics', 'count, mean, var_sum')


class StreamingNormalize:
    """Normalize tensors by a running mean and sample standard deviation,
    merged batch by batch by the parallel form of Welford's algorithm (Chan
    et al.), accurate over millions of steps."""

    def __init__(
            self, template, center=True, scale=True, clip=10,
            name='normalize'):
        """Create the statistics variables; a ValueError when the template
        shape is not fully defined or clip is negative.

        Args:
            template: Tensor of the shape of a single value (any dtype).
            clip: Bound of the absolute transformed values; 0 or None: none.
            name: The variable scope of the (checkpointed) statistics.
        """
        shape = tf.TensorShape(template.shape)
        if not shape.is_fully_defined():
            raise ValueError(
                f'template needs a fully defined shape, got {shape}')
        if clip and clip < 0:
            raise ValueError(f'clip must be positive or None, got {clip}')
        self._center = center
        self._scale = scale
        self._clip = clip
        self._name = name
        self._shape = shape
        with tf.variable_scope(name):
            self._count, self._mean, self._var_sum = (
                tf.get_variable(
                    variable, shape_, dtype, tf.zeros_initializer(),
                    trainable=False)
                for variable, shape_, dtype in (
                    ('count', [], tf.int64), ('mean', shape, tf.float32),
                    ('var_sum', shape, tf.float32)))

    @property
    def count(self):
        """Number of values seen, int64."""
        return tf.identity(self._count)

    @property
    def mean(self):
        """Running mean, zero before the first update."""
        return tf.identity(self._mean)

    @property
    def std(self):
        """Running sample standard deviation, one before two values."""
        return _std(self._variables())

    def update(self, value):
        """Merge a batch of values (of the template shape after leading batch
        dimensions); a summary of the batch's mean, which runs the update."""
        with tf.name_scope(self._name + '/update'):
            batch = tf.reshape(
                tf.cast(value, tf.float32), [-1] + self._shape.as_list())
            new = self.merged(self.read(), batch)
            # Compute the new values from the old ones before assigning any.
            with tf.control_dependencies(list(new)):
                assign = self.assign(new)
            with tf.control_dependencies([assign]):
                return self._summary('value', _batch_mean(batch))

    def read(self):
        """The current `Statistics`, which compiled loops carry through
        `merged`, `transform(value, statistics)` and `assign`."""
        return Statistics(
            self._count.read_value(), self._mean.read_value(),
            self._var_sum.read_value())

    def merged(self, statistics, value):
        """The `Statistics` after a batch of values, a pure function."""
        batch = tf.reshape(
            tf.cast(value, tf.float32), [-1] + self._shape.as_list())
        batch_count = tf.shape(batch, out_type=tf.int64)[0]
        batch_mean = _batch_mean(batch)
        batch_var_sum = tf.reduce_sum(tf.square(batch - batch_mean[None]), 0)
        old_count = tf.cast(statistics.count, tf.float32)
        new_count = old_count + tf.cast(batch_count, tf.float32)
        # Both counts are zero only for an empty first batch.
        batch_weight = tf.math.divide_no_nan(
            tf.cast(batch_count, tf.float32), new_count)
        delta = batch_mean - statistics.mean
        return Statistics(
            statistics.count + batch_count,
            statistics.mean + delta * batch_weight,
            statistics.var_sum + batch_var_sum +
            tf.square(delta) * old_count * batch_weight)

    def assign(self, statistics):
        """Operation that sets the statistics, as `merged` returns them."""
        return tf.group(
            self._count.assign(statistics.count),
            self._mean.assign(statistics.mean),
            self._var_sum.assign(statistics.var_sum))

    def transform(self, value, statistics=None):
        """Center, scale and clip values into float32 by the `Statistics`
        (None: the current ones)."""
        if statistics is None:
            statistics = self._variables()
        with tf.name_scope(self._name + '/transform'):
            value = tf.cast(value, tf.float32)
            if self._center:
                value = value - statistics.mean
            if self._scale:
                value = value / _std(statistics)
            if self._clip:
                value = tf.clip_by_value(value, -self._clip, self._clip)
            return compiled_ops.check_numerics(value, 'normalized value')

    def reset(self):
        """Operation that forgets all values seen."""
        with tf.name_scope(self._name + '/reset'):
            return self.assign(Statistics(*map(
                tf.zeros_like, self._variables())))

    def summary(self):
        """Summary of the mean after a value and the deviation after two."""
        with tf.name_scope(self._name + '/summary') as scope:

            def _define_summary(name, tensor_fn):
                # Branches start at the root name scope; re-entering the
                # scope keeps the tags apart from other normalizers'.
                with tf.name_scope(scope):
                    return self._summary(name, tensor_fn())

            mean_summary = tf.cond(
                self._count > 0,
                lambda: _define_summary('mean', lambda: self._mean), str)
            std_summary = tf.cond(
                self._count > 1, lambda: _define_summary(
                    'stddev', lambda: _std(self._variables())), str)
            return tf.summary.merge([mean_summary, std_summary])

    def _variables(self):
        """The statistics as their variables."""
        return Statistics(self._count, self._mean, self._var_sum)

    @staticmethod
    def _summary(name, tensor):
        """Scalar summary for scalars, histogram otherwise."""
        if tensor.shape.ndims == 0:
            return tf.summary.scalar(name, tensor)
        return tf.summary.histogram(name, tensor)


def _batch_mean(batch):
    """Mean over the first axis; zero for an empty batch."""
    count = tf.cast(tf.shape(batch)[0], tf.float32)
    return tf.math.divide_no_nan(tf.reduce_sum(batch, 0), count)


def _std(statistics):
    """Sample standard deviation, or ones before two values were seen."""
    count = tf.cast(statistics.count, tf.float32)
    variance = statistics.var_sum / tf.maximum(count - 1, 1)
    # A small floor keeps constant dimensions from exploding when scaled.
    std = compiled_ops.sqrt(variance + 1e-8)
    return tf.where_v2(
        statistics.count > 1, std, tf.ones_like(std), name='std')
