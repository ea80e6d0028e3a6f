"""Ordering graph ops after others, where control blocks do not suffice."""

import tensorflow.compat.v1 as tf


def identity_after(dependencies, tensor):
    """Return a copy of a tensor that is available after the dependencies.

    Ops created inside a `tf.control_dependencies` block get no control
    inputs of their own when one of their inputs was created inside the same
    block, because that input already carries them. A conditional breaks this
    assumption: its output need not depend on every input, so a `tf.cond`
    built inside the block (for example by an algorithm) may finish before
    the block's dependencies ran, and once lowered, its empty branch finishes
    as soon as its predicate is known. Copying a tensor created outside the
    block gives the copy the control inputs for sure; a conditional whose
    predicate is such a copy waits for the dependencies in both branches.

    Args:
        dependencies: Tensors or operations to run first.
        tensor: Tensor, variable, or string for a constant summary, created
            before.

    Returns:
        Tensor with the value of `tensor`.
    """
    tensor = tf.convert_to_tensor(tensor)
    with tf.control_dependencies(dependencies):
        return tf.identity(tensor)
