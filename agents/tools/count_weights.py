"""Count the trainable weights of a graph."""

import re

import numpy as np
import tensorflow.compat.v1 as tf


def count_weights(scope=None, exclude=None, graph=None):
    """Count the trainable weights, of a `scope` only if given ('policy'
    does not match 'policy_2'), without those whose names the regular
    expression `exclude` matches from their start; a ValueError on a
    counted variable of a partly known shape."""
    graph = graph or tf.get_default_graph()
    variables = graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    if scope:
        scope = scope if scope.endswith('/') else scope + '/'
        variables = [var for var in variables if var.name.startswith(scope)]
    if exclude:
        exclude = re.compile(exclude)
        variables = [var for var in variables if not exclude.match(var.name)]
    for var in variables:
        if not var.shape.is_fully_defined():
            raise ValueError(
                    f'Cannot count the weights of variable {var.name!r} '
                    f'with shape {var.shape} that is not fully defined.')
    return sum(int(np.prod(var.shape.as_list(), dtype=np.int64))
               for var in variables)
