"""Tests of variables stacked on a member axis."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import stacked_variable


def _stacked():
    """A variable of 3 members created as `[2]`, and the real one."""
    with tf.variable_creator_scope(stacked_variable.stacking_creator(3)):
        variable = tf.Variable([1.0, 2.0], name='weights')
    return variable, tf.global_variables()[0]


def test_member_views():
    with tf.Graph().as_default():
        variable, stacked = _stacked()
        assert variable.shape.as_list() == [2]
        assert stacked.shape.as_list() == [3, 2]
        first = variable + 1.0
        with stacked_variable.member_view(2):
            third = variable.read_value()
        with stacked_variable.member_view(tf.constant(1)):
            second = tf.convert_to_tensor(variable)
        with stacked_variable.member_view(stacked_variable.WHOLE):
            write = variable.assign([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            np.testing.assert_array_equal(
                sess.run(stacked), [[1.0, 2.0]] * 3)
            sess.run(write)
            np.testing.assert_array_equal(
                sess.run([first, second, third]),
                [[1.0, 2.0], [2.0, 3.0], [4.0, 5.0]])


def test_get_variable_reuses_the_stack():
    with tf.Graph().as_default():
        with tf.variable_creator_scope(stacked_variable.stacking_creator(2)):
            with tf.variable_scope('net'):
                created = tf.get_variable('bias', [4])
            with tf.variable_scope('net', reuse=True):
                reused = tf.get_variable('bias', [4])
        assert reused is created
        assert [variable.shape.as_list()
                for variable in tf.global_variables()] == [[2, 4]]


def test_member_code_cannot_write():
    with tf.Graph().as_default():
        variable, _ = _stacked()
        with pytest.raises(ValueError, match='writes its variables whole'):
            variable.assign([0.0, 0.0])


def test_member_view_of_values():
    with tf.Graph().as_default():
        variable, stacked = _stacked()
        with tf.variable_creator_scope(stacked_variable.stacking_creator(3)):
            other = tf.Variable(0.0, name='other')
        block = tf.constant([[5.0, 6.0], [7.0, 8.0]])
        with stacked_variable.member_view(1, {stacked.ref(): block}):
            second = variable + 0.0
            with pytest.raises(ValueError, match='other:0 is not among'):
                other.read_value()
        with tf.Session() as sess:
            np.testing.assert_array_equal(sess.run(second), [7.0, 8.0])
