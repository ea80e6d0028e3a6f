"""Tests of the one-line descriptions of errors of graph operations."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.tools import in_graph_batch_env
from agents.training import errors


def _op_error(define):
    """The OpError of running the tensor that `define()` returns."""
    with tf.Graph().as_default():
        tensor = define()
        with tf.Session() as sess:
            with pytest.raises(tf.errors.OpError) as info:
                sess.run(tensor)
    return info.value


def test_check_numerics():
    """A failed `check_numerics` names its tensor."""
    error = _op_error(lambda: tf.debugging.check_numerics(
        tf.constant(np.nan), 'loss'))
    assert errors.describe_op_error(error) == (
        "'loss' had NaN values; expected finite numbers.")


def test_gradient_of_check_numerics():
    """TensorFlow's gradient of `check_numerics` names the gradient."""
    def define():
        value = tf.constant(1.0)
        checked = tf.debugging.check_numerics(value, 'loss')
        return tf.gradients(checked * tf.constant(np.inf), value)
    error = _op_error(define)
    assert errors.describe_op_error(error) == (
        "the gradient of 'loss' had Inf values; expected finite numbers.")


def test_environment_step_check():
    """The NumPy check of an environment step reads as `check_numerics`."""
    def check(value):
        # pylint: disable=protected-access
        in_graph_batch_env._check_finite(value, 'observ')
        return value
    error = _op_error(lambda: tf.numpy_function(
        check, [tf.constant([np.inf, np.nan])], tf.float32))
    assert errors.describe_op_error(error) == (
        "'observ' had Inf and NaN values; expected finite numbers.")


def test_other_op_error():
    """Another error of an op is its first line that says what failed."""
    error = _op_error(lambda: tf.Assert(
        tf.random.uniform([]) < 0.0, ['counts differ']))
    assert errors.describe_op_error(error) == (
        'assertion failed: [counts differ]')
