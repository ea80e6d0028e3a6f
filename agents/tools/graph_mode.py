"""A clear error for graph code that is called in eager mode."""

import tensorflow.compat.v1 as tf


class EagerModeError(RuntimeError):
    """Graph-building code was called while TensorFlow executes eagerly."""


def require_graph_mode(what):
    """Raise a clear error when TensorFlow executes eagerly.

    The framework builds TF1 graphs: variables, `tf.cond` side effects and
    `tf.summary` ops that mean nothing eagerly. TensorFlow 2 starts in eager
    mode, so a script written for the 2017 package that does not switch it
    off would otherwise fail deep inside TensorFlow (with a message about
    `tf.contrib.summary`).

    Args:
        what: Name of the caller, for the message.

    Raises:
        EagerModeError: When eager execution is on outside any graph.
    """
    if tf.executing_eagerly():
        raise EagerModeError(
            f'{what} builds TensorFlow graph ops and needs graph mode, but '
            'TensorFlow is executing eagerly; call '
            'tf.compat.v1.disable_eager_execution() at the start of the '
            'script, or build inside `with tf.Graph().as_default():`.')
