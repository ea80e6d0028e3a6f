"""Operations for code that XLA compiles, and the compiled functions.

XLA turns most TensorFlow operations into its own instructions directly, but
on this TensorFlow (2.21) a few common ones have no such kernel any more and
are translated one at a time through MLIR: `Select` (TF1's `tf.where`),
`Relu` and its gradient, `IsFinite`, `Sqrt`, `CheckNumerics`, `Exp`, `Tanh`
and others. That costs about 8 ms per operation in the graph, against 0.1 ms
for the rest, and it is paid at every start of a run, also when the compiled
program comes from the persistent cache (its key is the translated program):
the `pendulum` config's three programs held 163 such operations, 1.3 s of
its start-up (TensorFlow's XLA logs; `benchmarks/profile_paths.py`). The
functions here compute the same values with operations that XLA translates
directly; code that may be compiled uses them, and the uncompiled paths do
too, so that both give the same numbers.

`compiled_function` makes the `tf.function(jit_compile=True)` of the
package. While it traces, `check_numerics` adds no check: XLA cannot fail a
call, so it would drop the check anyway; compiled code checks for NaN and
Inf with `is_finite` and returns a flag that ops outside the call check.
"""

import collections
import contextlib
import functools
import threading

import numpy as np
import tensorflow.compat.v1 as tf

# Operations that this TensorFlow translates to XLA one at a time through
# MLIR, at about 8 ms each: compiled code goes without them where it can.
SLOW_TO_TRANSLATE = frozenset((
    'Select', 'Relu', 'ReluGrad', 'IsFinite', 'IsNan', 'Sqrt', 'Rsqrt',
    'CheckNumerics', 'Exp', 'Tanh', 'Cos', 'Abs', 'Sigmoid', 'Softmax',
    'LogSoftmax', 'Expm1', 'Log1p', 'Floor', 'Sign', 'Atan', 'Acos'))

_tracing = threading.local()


def compiled_function(function):
    """`tf.function(function, jit_compile=True, autograph=False)`, whose
    tracing leaves out `check_numerics`."""

    @functools.wraps(function)
    def _traced(*args, **kwargs):
        with _compiling():
            return function(*args, **kwargs)

    return tf.function(_traced, jit_compile=True, autograph=False)


def tracing_compiled():
    """Whether this thread is tracing a `compiled_function`."""
    return getattr(_tracing, 'depth', 0) > 0


@contextlib.contextmanager
def _compiling():
    """Mark this thread as tracing compiled code."""
    _tracing.depth = getattr(_tracing, 'depth', 0) + 1
    try:
        yield
    finally:
        _tracing.depth -= 1


def check_numerics(tensor, message):
    """`tf.debugging.check_numerics` of a floating point tensor, except in
    compiled code (see the module's docstring) or for other dtypes, where
    the tensor is returned as it is."""
    if tracing_compiled() or not tensor.dtype.is_floating:
        return tensor
    return tf.debugging.check_numerics(tensor, message)


def where(condition, x, y):
    """Elements of `x` where `condition` holds, else of `y`.

    Like TF1's `tf.where` of three arguments: a condition of lower rank than
    `x` selects along the leading dimensions (a rank-1 condition selects
    whole rows), one of the same shape elementwise.

    Args:
        condition: Boolean tensor whose shape is a prefix of `x`'s.
        x: Tensor.
        y: Tensor of the dtype of `x`, of its shape or one that broadcasts
            to it (such as a scalar).

    Returns:
        Tensor of the shape of `x`.
    """
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
    """Elementwise whether the values are neither NaN nor infinite.

    NaN compares false with every number, so the range test fails for it.
    """
    tensor = tf.convert_to_tensor(tensor)
    largest = tf.constant(
        np.finfo(tensor.dtype.as_numpy_dtype).max, tensor.dtype)
    return tf.logical_and(tensor >= -largest, tensor <= largest)


def all_finite(tensors):
    """Boolean scalar, whether every value of the tensors (or of their
    `tf.IndexedSlices`) is finite."""
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


def compiled_op_types(graph):
    """Counts of the operation types in the compiled functions of a graph.

    Args:
        graph: `tf.Graph`.

    Returns:
        `collections.Counter` from operation type to its number of
        operations in the functions that XLA compiles, and in those they
        call (loop bodies, branches).
    """
    library = {
        function.signature.name: function
        for function in graph.as_graph_def().library.function}
    counts = collections.Counter()
    seen = set()

    def _visit(name):
        if name in seen or name not in library:
            return
        seen.add(name)
        for node in library[name].node_def:
            counts[node.op] += 1
            _visit(node.op)
            for value in node.attr.values():
                if value.HasField('func'):
                    _visit(value.func.name)
                for function in value.list.func:
                    _visit(function.name)

    for name, function in library.items():
        if function.attr['_XlaMustCompile'].b:
            _visit(name)
    return counts
