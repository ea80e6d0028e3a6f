"""Tests of the operations that XLA translates directly."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.testing import xla_ops
from agents.tools import compiled_ops


def _run(tensors):
    with tf.Session() as sess:
        return sess.run(tensors)


@pytest.mark.parametrize('condition, expected', [
    # A rank-1 condition selects rows, like TF1's `tf.where`.
    ([True, False], [[1, 2], [-3, -4]]),
    ([[True, False], [False, True]], [[1, -2], [-3, 4]]),
    # A scalar selects the whole tensor.
    (False, [[-1, -2], [-3, -4]]),
])
def test_where_selects_rows_or_elements(condition, expected):
    with tf.Graph().as_default() as graph:
        x = tf.constant([[1, 2], [3, 4]])
        selected = compiled_ops.where(condition, x, -x)
        assert {op.type for op in graph.get_operations()} >= {'SelectV2'}
        assert 'Select' not in {op.type for op in graph.get_operations()}
        np.testing.assert_array_equal(_run(selected), expected)


def test_is_finite_and_all_finite():
    values = np.array(
        [0.0, -1.5, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38,
         np.finfo(np.float32).tiny], np.float32)
    with tf.Graph().as_default():
        finite = compiled_ops.is_finite(values)
        alls = [
            compiled_ops.all_finite([values[:2], values[5:]]),
            compiled_ops.all_finite([values[:2], values[4:]])]
        as_float64 = compiled_ops.is_finite(values.astype(np.float64))
        result, all_result, result64 = _run([finite, alls, as_float64])
    np.testing.assert_array_equal(result, np.isfinite(values))
    np.testing.assert_array_equal(result64, np.isfinite(values))
    assert all_result == [True, False]


def test_relu_sqrt_and_global_norm_give_the_same_values():
    values = np.array([[-2.0, -0.0, 0.0, 0.25, 9.0]], np.float32)
    with tf.Graph().as_default():
        results = _run([
            compiled_ops.relu(values), compiled_ops.sqrt(np.abs(values)),
            compiled_ops.global_norm([values, tf.constant([3.0])]),
            tf.linalg.global_norm([values, tf.constant([3.0])])])
    np.testing.assert_array_equal(results[0], np.maximum(values, 0))
    np.testing.assert_allclose(results[1], np.sqrt(np.abs(values)), 1e-6)
    np.testing.assert_allclose(results[2], results[3], 1e-6)


def test_check_numerics_fails_outside_compiled_code_only():
    with tf.Graph().as_default() as graph:
        value = tf.placeholder(tf.float32, [2])
        checked = compiled_ops.check_numerics(value, 'my value')
        # Integer tensors have nothing to check.
        count = tf.constant([1, 2])
        assert compiled_ops.check_numerics(count, 'count') is count

        def _double(tensor):
            assert compiled_ops.tracing_compiled()
            return 2 * compiled_ops.check_numerics(tensor, 'my value')

        assert not compiled_ops.tracing_compiled()
        doubled = compiled_ops.compiled_function(_double)(value)
        assert xla_ops.compiled_op_types(graph)['Mul'] == 1
        assert 'CheckNumerics' not in xla_ops.compiled_op_types(graph)
        with tf.Session() as sess:
            with pytest.raises(
                    tf.errors.InvalidArgumentError, match='my value'):
                sess.run(checked, {value: [1.0, np.nan]})
            np.testing.assert_array_equal(
                sess.run(doubled, {value: [1.0, np.nan]}), [2.0, np.nan])
