"""Compiled functions, and ops that XLA translates quickly: on TensorFlow
2.21 it translates some (`Select`, `Relu`, `Sqrt`, ...) at about 8 ms each
per start of a run (docs/performance.md); the functions here compute the
same values without them, compiled or not."""

import contextlib
import functools
import threading

import numpy as np
import tensorflow.compat.v1 as tf

_tracing = threading.local()


def compiled_function(function):
    """`tf.function(function, jit_compile=True, autograph=False)`.

    Its tracing leaves out `check_numerics`, which XLA would drop anyway:
    compiled code returns an `is_finite` flag that ops outside check.
    """

    @functools.wraps(function)
    def _traced(*args, **kwargs):
        _tracing.depth = getattr(_tracing, 'depth', 0) + 1
        try:
            return function(*args, **kwargs)
        finally:
            _tracing.depth -= 1

    return tf.function(_traced, jit_compile=True, autograph=False)


def tracing_compiled():
    """Whether this thread is tracing a `compiled_function`."""
    return getattr(_tracing, 'depth', 0) > 0


@contextlib.contextmanager
def tracing_population():
    """Mark the tracing of a population's member code (see `cond`)."""
    _tracing.population = getattr(_tracing, 'population', 0) + 1
    try:
        yield
    finally:
        _tracing.population -= 1


def cond(pred, true_fn, false_fn):
    """`tf.cond`; while a population traces, both branches and a select:
    `pfor` turns a cond on a member's predicate into ops XLA refuses."""
    if not getattr(_tracing, 'population', 0):
        return tf.cond(pred, true_fn, false_fn)
    return tf.nest.map_structure(
        lambda true, false: tf.where_v2(pred, true, false),
        true_fn(), false_fn())


def check_numerics(tensor, message):
    """`tf.debugging.check_numerics` of a floating point tensor; other
    tensors, and all in compiled code, are returned as they are."""
    if tracing_compiled() or not tensor.dtype.is_floating:
        return tensor
    return tf.debugging.check_numerics(tensor, message)


def where(condition, x, y):
    """TF1's `tf.where(condition, x, y)`: a condition of lower rank selects
    along the leading dimensions (rank 1: rows); `y` broadcasts to `x`."""
    x = tf.convert_to_tensor(x)
    condition = tf.convert_to_tensor(condition)
    extra = x.shape.ndims - condition.shape.ndims
    if extra > 0:
        if condition.shape.is_fully_defined():
            shape = condition.shape.as_list() + [1] * extra
        else:
            shape = tf.concat(
                [tf.shape(condition), tf.ones([extra], tf.int32)], 0)
        condition = tf.reshape(condition, shape)
    return tf.where_v2(condition, x, y)


def is_finite(tensor):
    """Elementwise whether the values are neither NaN nor infinite."""
    tensor = tf.convert_to_tensor(tensor)
    # NaN compares false with every number, so it fails the range test.
    largest = tf.constant(
        np.finfo(tensor.dtype.as_numpy_dtype).max, tensor.dtype)
    return tf.logical_and(tensor >= -largest, tensor <= largest)


def all_finite(tensors):
    """Bool scalar: whether all values of the tensors (or slices) are finite."""
    return tf.reduce_all(tf.stack([
        tf.reduce_all(is_finite(value)) for value in _values(tensors)]))


def relu(features):
    """`tf.nn.relu`: the features where positive, else zero."""
    return tf.maximum(features, tf.zeros([], features.dtype))


def sqrt(tensor):
    """Elementwise square root (of nonnegative values)."""
    tensor = tf.convert_to_tensor(tensor)
    return tf.pow(tensor, tf.constant(0.5, tensor.dtype))


def global_norm(tensors):
    """`tf.linalg.global_norm`: the L2 norm of all values of the tensors."""
    return sqrt(tf.add_n([
        tf.reduce_sum(tf.square(value)) for value in _values(tensors)]))


def _values(tensors):
    """The tensors, with the values of `tf.IndexedSlices` in their place."""
    return [
        tensor.values if isinstance(tensor, tf.IndexedSlices) else tensor
        for tensor in tensors]
