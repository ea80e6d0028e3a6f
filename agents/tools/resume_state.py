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

State held outside the graph, as that of Python environments (see
`tools.env_state`), reaches checkpoints through a variable of its own and
two operations that `on_save` registers: one copies the state into the
variable, run before every save (`capture`); the other sets it from the
variable, run after a restore (`apply_saved`). Where the state cannot be
copied consistently (a save while a step hangs or failed), `forget` runs
instead of the copy, so that a resumed run knows the state is missing.
"""

import tensorflow.compat.v1 as tf

from agents.tools import nested

# The graph collection of the variables that a resumed run needs.
COLLECTION = 'agents_resume_state'
# The graph collections of the operations of state outside the graph.
_CAPTURE = 'agents_resume_capture'
_FORGET = 'agents_resume_forget'
_APPLY = 'agents_resume_apply'


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


def on_save(copy, forget, apply):
    """Register the operations of state held outside the graph.

    Args:
        copy: Operation that copies the state into its variables, which
            `keep_for_resume` marked.
        forget: Operation that marks the variables as holding no state.
        apply: String tensor that sets the state from the variables and
            evaluates to '' where it did, or to one sentence saying why not
            (what the resumed run does instead included).
    """
    graph = tf.get_default_graph()
    graph.add_to_collection(_CAPTURE, copy)
    graph.add_to_collection(_FORGET, forget)
    graph.add_to_collection(_APPLY, apply)


def capture(sess, consistent=True):
    """Copy the state outside the graph into its variables, before a save.

    Args:
        sess: Session of the graph.
        consistent: Whether the state is that of the last completed step;
            false where a step hangs or failed, which forgets the state.
            A copy that fails (an environment that failed) forgets it too.
    """
    graph = sess.graph
    if consistent and graph.get_collection(_CAPTURE):
        try:
            sess.run(graph.get_collection(_CAPTURE))
            return
        except tf.errors.OpError:
            pass
    if graph.get_collection(_FORGET):
        sess.run(graph.get_collection(_FORGET))


def apply_saved(sess):
    """Set the state outside the graph from its restored variables.

    Args:
        sess: Session of the graph, whose variables were restored.

    Returns:
        List of the sentences of the state that could not be set, saying
        why; empty where all of it was set or there is none.
    """
    applied = sess.run(sess.graph.get_collection(_APPLY))
    return [reason.decode('utf-8') for reason in applied if reason]
