"""State that checkpoints keep for an exact resumption: `*_temporary`
variables (which 2017-style savers leave out) in `COLLECTION`, and the ops
that copy state outside the graph in and out (`on_save`)."""

import tensorflow.compat.v1 as tf

from agents.tools import nested

# The graph collection of the variables that a resumed run needs.
COLLECTION = 'agents_resume_state'
# The graph collections of the operations of state outside the graph.
_CAPTURE = 'agents_resume_capture'
_FORGET = 'agents_resume_forget'
_APPLY = 'agents_resume_apply'


def keep_for_resume(variables):
    """Mark variables of the default graph (one, or a nested structure
    skipping None) as state that a resumed run needs; returns them."""
    graph = tf.get_default_graph()
    kept = graph.get_collection_ref(COLLECTION)
    for variable in nested.flatten(variables):
        # A population's variable (`stacked`) is kept with all members.
        variable = getattr(variable, 'stacked', variable)
        if variable is not None and not any(
                variable is other for other in kept):
            kept.append(variable)
    return variables


def resume_variables(graph=None):
    """List of the variables of `keep_for_resume` of a graph or default."""
    graph = graph or tf.get_default_graph()
    return list(graph.get_collection(COLLECTION))


def on_save(copy, forget, apply):
    """Register the operations of state held outside the graph.

    Args:
        copy: Operation that copies the state into its kept variables.
        forget: Operation that marks the variables as holding no state.
        apply: String tensor that sets the state from the variables: '', or
            one sentence on why not and what the run does instead.
    """
    graph = tf.get_default_graph()
    graph.add_to_collection(_CAPTURE, copy)
    graph.add_to_collection(_FORGET, forget)
    graph.add_to_collection(_APPLY, apply)


def capture(sess, consistent=True):
    """Copy the state outside the graph into its variables, before a save;
    forget it instead unless `consistent` (that of the last completed step),
    or where the copy fails."""
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
    """Set the state outside the graph from its restored variables; return
    the sentences of the state that could not be set."""
    applied = sess.run(sess.graph.get_collection(_APPLY))
    return [reason.decode('utf-8') for reason in applied if reason]
