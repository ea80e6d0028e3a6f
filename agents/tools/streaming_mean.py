"""Running mean of tensors, computed inside the graph."""

import tensorflow.compat.v1 as tf

from agents.tools import forwarding
from agents.tools import in_graph_env


class StreamingMean:
    """Mean over the values submitted since the last clear, each of `shape`
    and the floating point `dtype`, in variables of a new scope named after
    `name` inside the current variable scope."""

    def __init__(self, shape, dtype, name='streaming_mean'):
        self._dtype = tf.as_dtype(dtype)
        with tf.variable_scope(None, default_name=name):
            self._sum = in_graph_env.define_variable('sum', shape, self._dtype)
            self._count = in_graph_env.define_variable('count', (), tf.int32)

    @property
    def value(self):
        """Tensor of the current mean; NaN while the count is zero."""
        with tf.name_scope('streaming_mean_value'):
            return self._sum / tf.cast(self._count, self._dtype)

    @property
    def variables(self):
        """Tuple of the variables of the sum and the count."""
        return self._sum, self._count

    count = forwarding.read_only(
        'count', 'Variable of the number of values submitted since clearing.')

    def submit(self, value):
        """Operation adding values stacked along the first axis (or one)."""
        with tf.name_scope('streaming_mean_submit'):
            value = tf.convert_to_tensor(value, self._dtype)
            if value.shape.ndims == self._sum.shape.ndims:
                value = value[None]
            return tf.group(
                self._sum.assign_add(tf.reduce_sum(value, 0)),
                self._count.assign_add(tf.shape(value)[0]))

    def clear(self):
        """Tensor of the mean (NaN without values), zeroing sum and count."""
        with tf.name_scope('streaming_mean_clear'):
            value = self.value
            with tf.control_dependencies([value]):
                reset_sum = self._sum.assign(tf.zeros_like(self._sum))
                reset_count = self._count.assign(0)
            with tf.control_dependencies([reset_sum, reset_count]):
                return tf.identity(value)
