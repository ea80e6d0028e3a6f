"""Conditionals beyond `tf.cond`: `function_cond`."""

import tensorflow.compat.v1 as tf
from tensorflow.core.framework import attr_value_pb2

_IF_TYPES = ('If', 'StatelessIf')


def function_cond(pred, true_fn, false_fn, name=None):
    """`tf.cond` that runs the taken branch as a function call.

    A session lowers `tf.cond` into `Switch` and `Merge` nodes, one `Switch`
    for every tensor and variable the branches capture, and runs them on
    every call, whichever branch is taken. A branch that captures a whole
    training update (dozens of variables and their optimizer slots) so
    costs dozens of nodes on every step, although it runs once in hundreds.
    Kept as a functional `If` op instead, the conditional is one node, and
    only the taken branch runs, as a function call, which costs more than a
    lowered branch: use it where a large branch is rarely taken.

    Args:
        pred: Scalar bool tensor.
        true_fn: Callable building the branch taken when `pred` is true.
        false_fn: Callable building the other branch.
        name: Optional name of the operation.

    Returns:
        The outputs of `tf.cond`.
    """
    result = tf.cond(pred, true_fn, false_fn, name=name)
    for tensor in tf.nest.flatten(result):
        op = _if_op(tensor)
        if op is not None:
            # The attribute the control flow lowering pass checks; without
            # control flow v2 there is no If op and the cond stays as it is.
            op._set_attr(
                '_lower_using_switch_merge', attr_value_pb2.AttrValue(b=False))
    return result


def _if_op(tensor):
    """The If op behind an output of `tf.cond`, through its identities."""
    op = getattr(tensor, 'op', None)
    while op is not None and op.type == 'Identity' and op.inputs:
        op = op.inputs[0].op
    if op is not None and op.type in _IF_TYPES:
        return op
    return None
