"""Variable scopes for state that checkpoints leave out."""

import contextlib
import itertools

import tensorflow.compat.v1 as tf


@contextlib.contextmanager
def temporary_scope(name):
    """Open a new variable scope `name_temporary`, yielding it.

    Savers leave out `.*_temporary/.*` (the 2017 pattern). A repeated name
    is numbered before the suffix (`loop_1_temporary`), where TensorFlow's
    `loop_temporary_1` would escape the pattern.
    """
    graph = tf.get_default_graph()
    outer = graph.get_name_scope()
    for index in itertools.count():
        candidate = (f'{name}_{index}' if index else name) + '_temporary'
        # `unique_name` answers within the current name scope.
        full = f'{outer}/{candidate}' if outer else candidate
        if graph.unique_name(candidate, mark_as_used=False) == full:
            break
    with tf.variable_scope(candidate) as scope:
        yield scope


@contextlib.contextmanager
def reenter(scope):
    """Enter a variable scope again with its original name scope (which
    names `tf.Variable`s)."""
    with tf.variable_scope(scope, auxiliary_name_scope=False) as entered:
        with tf.name_scope(scope.original_name_scope):
            yield entered
