"""Tests of the helpers of in-graph tasks."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.environments import task


@pytest.mark.parametrize('batch_size', [0, -1, True, 2.0, '2'])
def test_uniform_refuses_a_batch_size(batch_size):
    """The number of rows is a positive integer, not a bool."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=(
                rf'^batch_size must be a Python int >= 1, got '
                rf'{repr(batch_size)}\.$')):
            task.uniform(tf.constant([1, 2], tf.int64), batch_size, [0], [1])


def test_uniform_takes_a_numpy_integer():
    """A NumPy integer is a batch size too."""
    with tf.Graph().as_default():
        values = task.uniform(
            tf.constant([1, 2], tf.int64), np.int64(3), [0.0, -1.0],
            [1.0, 0.0])
        assert values.shape.as_list() == [3, 2]
        with tf.Session() as sess:
            values = sess.run(values)
    assert ((values >= [0.0, -1.0]) & (values < [1.0, 0.0])).all()
