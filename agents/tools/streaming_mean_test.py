"""Tests for the in-graph StreamingMean."""

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import streaming_mean


def test_scalar_mean_over_batches():
    """Batches of several sizes average into one mean."""
    with tf.Graph().as_default():
        mean = streaming_mean.StreamingMean((), tf.float32)
        values = tf.placeholder(tf.float32, (None,))
        submit = mean.submit(values)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(submit, {values: [1.0, 2.0]})
            sess.run(submit, {values: [6.0]})
            assert sess.run(mean.count) == 3
            assert sess.run(mean.value) == 3.0
            sess.run(submit, {values: []})
            assert sess.run(mean.count) == 3


def test_clear_returns_mean_and_resets():
    """Clearing returns the mean once and starts over."""
    with tf.Graph().as_default():
        mean = streaming_mean.StreamingMean((), tf.float32)
        values = tf.placeholder(tf.float32, (None,))
        submit = mean.submit(values)
        clear = mean.clear()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(submit, {values: [1.0, 2.0, 4.5]})
            assert sess.run(clear) == 2.5
            assert sess.run(mean.count) == 0
            sess.run(submit, {values: [8.0]})
            assert sess.run(clear) == 8.0
            assert np.isnan(sess.run(clear))
            assert np.isnan(sess.run(mean.value))


def test_vector_values():
    """Means are taken per element over the batch axis."""
    with tf.Graph().as_default():
        mean = streaming_mean.StreamingMean((2,), tf.float64)
        values = tf.placeholder(tf.float64, (None, 2))
        submit = mean.submit(values)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(submit, {values: [[1.0, 10.0], [3.0, 30.0]]})
            sess.run(submit, {values: [[5.0, 50.0]]})
            result = sess.run(mean.value)
            assert result.dtype == np.float64
            assert result.tolist() == [3.0, 30.0]
            assert sess.run(mean.clear()).tolist() == [3.0, 30.0]


def test_single_value_counts_as_batch_of_one():
    """A value of the mean's shape adds one to the count."""
    with tf.Graph().as_default():
        mean = streaming_mean.StreamingMean((2,), tf.float32)
        submit = mean.submit([2.0, 4.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(submit)
            sess.run(submit)
            assert sess.run(mean.count) == 2
            assert sess.run(mean.value).tolist() == [2.0, 4.0]


def test_variables_are_not_trainable_and_scoped():
    """Variables sit in the enclosing scope, out of training."""
    with tf.Graph().as_default():
        with tf.variable_scope('simulate_temporary'):
            streaming_mean.StreamingMean((), tf.float32)
            streaming_mean.StreamingMean((), tf.float32)
        assert not tf.trainable_variables()
        assert [v.name for v in tf.global_variables()] == [
                'simulate_temporary/streaming_mean/sum:0',
                'simulate_temporary/streaming_mean/count:0',
                'simulate_temporary/streaming_mean_1/sum:0',
                'simulate_temporary/streaming_mean_1/count:0']
