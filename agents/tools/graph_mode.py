"""A clear error for graph code built in a mode it does not support."""

import tensorflow.compat.v1 as tf


class GraphModeError(RuntimeError):
    """Graph-building code was called in eager mode or under TF1 behaviour."""


def require_graph_mode(what):
    """Raise a clear error unless graphs build with TF2 semantics.

    Args:
        what: Name of the caller, for the message.

    Raises:
        GraphModeError: In eager mode, or with TF1 reference variables or
            control flow, which would fail deep inside TensorFlow instead.
    """
    if tf.executing_eagerly():
        raise GraphModeError(
            f'{what} builds TensorFlow graph ops and needs graph mode, but '
            'TensorFlow is executing eagerly; call '
            'tf.compat.v1.disable_eager_execution() at the start of the '
            'script, or build inside `with tf.Graph().as_default():`.')
    if not (tf.resource_variables_enabled() and
            tf.control_flow_v2_enabled()):
        raise GraphModeError(
            f'{what} needs resource variables and TF2 control flow, which '
            'tf.compat.v1.disable_v2_behavior() switched off; call '
            'tf.compat.v1.disable_eager_execution() alone instead, or '
            'tf.compat.v1.enable_resource_variables() and '
            'tf.compat.v1.enable_control_flow_v2() after it.')
