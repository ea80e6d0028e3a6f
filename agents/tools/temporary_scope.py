"""Variable scopes for state that checkpoints leave out."""

import contextlib

import tensorflow.compat.v1 as tf


@contextlib.contextmanager
def temporary_scope(name):
    """Open a new variable scope whose name ends in `_temporary`.

    Savers leave out variables matching `.*_temporary/.*` (the 2017
    package's pattern, which research code passes to `define_saver`).
    TensorFlow makes a repeated scope name unique by appending `_1`, which
    the pattern would miss (`loop_temporary_1/...`); here the number goes
    before the suffix instead (`loop_1_temporary/...`).

    Args:
        name: Base name of the scope, e.g. 'loop'.

    Yields:
        The `tf.VariableScope`; `reenter(scope)` adds variables under the
        same name later.
    """
    graph = tf.get_default_graph()
    outer = graph.get_name_scope()
    index = 0
    while True:
        prefix = name if index == 0 else f'{name}_{index}'
        candidate = prefix + '_temporary'
        # `unique_name` answers within the current name scope.
        full = f'{outer}/{candidate}' if outer else candidate
        if graph.unique_name(candidate, mark_as_used=False) == full:
            break
        index += 1
    with tf.variable_scope(candidate) as scope:
        yield scope


@contextlib.contextmanager
def reenter(scope):
    """Enter a variable scope again with its original name scope.

    `tf.variable_scope(scope)` alone would open a new name scope
    (`loop_temporary_1/`), under which `tf.Variable`s are named.

    Args:
        scope: A `tf.VariableScope`, e.g. from `temporary_scope`.

    Yields:
        The same scope.
    """
    with tf.variable_scope(scope, auxiliary_name_scope=False) as entered:
        with tf.name_scope(scope.original_name_scope):
            yield entered
