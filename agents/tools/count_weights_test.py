"""Tests for count_weights."""

import pytest
import tensorflow.compat.v1 as tf

from agents.tools.count_weights import count_weights


def _define_variables():
    with tf.variable_scope('policy'):
        tf.get_variable('weights', (3, 4))
        tf.get_variable('bias', (4,))
    with tf.variable_scope('policy_2'):
        tf.get_variable('weights', (5,))
    with tf.variable_scope('value'):
        tf.get_variable('weights', (2, 2))
        tf.get_variable('output/weights', (7,))
    tf.get_variable('frozen', (100,), trainable=False)


def test_counts_all_trainable_weights():
    """Non-trainable variables do not count."""
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights() == 12 + 4 + 5 + 4 + 7


def test_scope_matches_whole_scope_names():
    """A scope does not match longer scope names with the same prefix."""
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights('policy') == 16
        assert count_weights('policy/') == 16
        assert count_weights('policy_2') == 5
        assert count_weights('missing') == 0


def test_exclude_regex():
    """Variables matching the regex from their start are left out."""
    with tf.Graph().as_default():
        _define_variables()
        assert count_weights(exclude=r'.*/bias') == 28
        assert count_weights('value', exclude='value/output') == 4
        assert count_weights(exclude='bias') == 32


def test_explicit_graph():
    """The graph argument replaces the default graph."""
    graph = tf.Graph()
    with graph.as_default():
        _define_variables()
    with tf.Graph().as_default():
        assert count_weights() == 0
        assert count_weights(graph=graph) == 32


def test_unknown_shape():
    """A variable of unknown shape cannot be counted."""
    with tf.Graph().as_default():
        tf.Variable(
                tf.placeholder_with_default([1.0], (None,)), name='dynamic',
                shape=tf.TensorShape([None]))
        with pytest.raises(ValueError) as error:
            count_weights()
        assert str(error.value) == (
                "Cannot count the weights of variable 'dynamic:0' with shape "
                '(None,) that is not fully defined.')
