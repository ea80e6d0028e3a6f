"""Tests for the state that the trainer's checkpoints keep for resuming."""

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import resume_state
from agents.tools import temporary_scope


def test_variables_are_kept_once_in_order_of_their_graph():
    with tf.Graph().as_default() as graph:
        with temporary_scope.temporary_scope('episodes'):
            first = tf.Variable(0, name='first')
            second = tf.Variable(0.0, name='second')
        kept = tools.keep_for_resume({'a': (first, None), 'b': [second]})
        tools.keep_for_resume(first)
        assert kept == {'a': (first, None), 'b': [second]}
        with tf.Graph().as_default():
            assert not tools.resume_variables()
            assert tools.resume_variables(graph) == [first, second]
    assert graph.get_collection(resume_state.COLLECTION) == [first, second]
