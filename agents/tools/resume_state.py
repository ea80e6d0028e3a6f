"""State that the trainer's checkpoints keep for an exact resumption.

Variables in `*_temporary` scopes are left out of model checkpoints (the
2017 pattern `.*_temporary/.*` that research code passes to
`define_saver`): running episodes, the loop's running means, switches. Some
of that state decides what a run does next, so that a seeded run resumed
from a checkpoint repeats the straight run only if it is restored too: the
episode buffers and running returns of an algorithm whose environments
continue their episodes (in-graph tasks keep theirs in checkpoints), the
loop's running mean scores and whether a phase's turn had begun.

Code that creates such state adds its variables to the graph collection
`COLLECTION` here; the training script's saver keeps them beside the model
(`agents.scripts.utility.define_saver(include=...)`), and restores
checkpoints that lack them (of older runs) without them. Savers that follow
the 2017 pattern still leave them out.
"""

import tensorflow.compat.v1 as tf

from agents.tools import nested

# The graph collection of the variables that a resumed run needs.
COLLECTION = 'agents_resume_state'


def keep_for_resume(variables):
    """Mark variables as state that a resumed run needs.

    Args:
        variables: A variable or a nested structure of variables (None
            entries are skipped), of the default graph.

    Returns:
        The variables, unchanged.
    """
    graph = tf.get_default_graph()
    kept = graph.get_collection_ref(COLLECTION)
    for variable in nested.flatten(variables):
        if variable is not None and not any(
                variable is other for other in kept):
            kept.append(variable)
    return variables


def resume_variables(graph=None):
    """The variables marked by `keep_for_resume`, in the order marked.

    Args:
        graph: The graph; None for the default graph.

    Returns:
        List of variables.
    """
    graph = graph or tf.get_default_graph()
    return list(graph.get_collection(COLLECTION))
