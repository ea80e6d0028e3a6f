"""Ordering graph ops after others, where control blocks do not suffice."""

import tensorflow.compat.v1 as tf


def identity_after(dependencies, tensor):
    """A copy of a tensor that is available after the dependencies.

    An op inside a `tf.control_dependencies` block gets no control inputs
    when an input was made in the block, but a `tf.cond` made there need
    not wait for them; a conditional whose predicate is such a copy of an
    outside tensor waits in both branches.

    Args:
        dependencies: Tensors or operations to run first.
        tensor: Tensor, variable, or string (a constant summary).
    """
    tensor = tf.convert_to_tensor(tensor)
    with tf.control_dependencies(dependencies):
        return tf.identity(tensor)
