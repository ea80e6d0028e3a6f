"""Ordering graph ops after others, where control blocks do not suffice."""

import tensorflow.compat.v1 as tf


def identity_after(dependencies, tensor):
    """A copy of a tensor (or variable, or string) that is available after
    the dependencies.

    An op made in a `tf.control_dependencies` block gets no control inputs
    where an input was made in the block, and a `tf.cond` made there need
    not wait for them; one whose predicate is such a copy waits in both
    branches.
    """
    tensor = tf.convert_to_tensor(tensor)
    with tf.control_dependencies(dependencies):
        return tf.identity(tensor)
