"""Tests for the in-graph episode memory."""

import collections

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.parts import episode_memory

Transition = collections.namedtuple('Transition', 'observ, action')

CAPACITY = 3
MAX_LENGTH = 4


def _define_memory(scope='memory_temporary'):
    """Memory of float observations of shape [2] and int32 actions."""
    template = Transition(
        tf.zeros([2], tf.float32), tf.zeros([], tf.int32))
    return episode_memory.EpisodeMemory(
        template, CAPACITY, MAX_LENGTH, scope)


def _define_append(memory):
    """Placeholders for one step of some rows and the append operation."""
    rows = tf.placeholder(tf.int32, [None])
    observ = tf.placeholder(tf.float32, [None, 2])
    action = tf.placeholder(tf.int32, [None])
    append = memory.append(Transition(observ, action), rows)

    def feed(step_rows, value):
        step_rows = np.array(step_rows, np.int32)
        return {
            rows: step_rows,
            observ: np.stack([step_rows * 10 + value, -step_rows], 1),
            action: step_rows * 100 + value}

    return append, feed


def test_append_to_row_subsets_and_read_per_row():
    """Each row holds exactly the steps appended to it."""
    with tf.Graph().as_default():
        memory = _define_memory()
        append, feed = _define_append(memory)
        episodes, length = memory.data()
        some_episodes, some_length = memory.data([2, 0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(append, feed([0, 1, 2], 1))
            sess.run(append, feed([0, 2], 2))
            sess.run(append, feed([2], 3))
            episodes, length, some_episodes, some_length = sess.run(
                (episodes, length, some_episodes, some_length))
    np.testing.assert_array_equal(length, [2, 1, 3])
    np.testing.assert_array_equal(episodes.action, [
        [1, 2, 0, 0], [101, 0, 0, 0], [201, 202, 203, 0]])
    np.testing.assert_array_equal(episodes.observ[..., 0], [
        [1, 2, 0, 0], [11, 0, 0, 0], [21, 22, 23, 0]])
    np.testing.assert_array_equal(episodes.observ[..., 1], [
        [0, 0, 0, 0], [-1, 0, 0, 0], [-2, -2, -2, 0]])
    assert episodes.observ.dtype == np.float32
    assert episodes.action.dtype == np.int32
    np.testing.assert_array_equal(some_length, [3, 2])
    np.testing.assert_array_equal(
        some_episodes.action, [[201, 202, 203, 0], [1, 2, 0, 0]])


def test_append_to_all_rows_by_default():
    """Without rows, a step goes to every row."""
    with tf.Graph().as_default():
        memory = _define_memory()
        transition = Transition(
            tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
            tf.constant([7, 8, 9]))
        append = memory.append(transition)
        episodes, length = memory.data()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(append)
            sess.run(append)
            episodes, length = sess.run((episodes, length))
    np.testing.assert_array_equal(length, [2, 2, 2])
    np.testing.assert_array_equal(
        episodes.action[:, :2], [[7, 7], [8, 8], [9, 9]])
    np.testing.assert_array_equal(
        episodes.observ[1, :2], [[3.0, 4.0], [3.0, 4.0]])


def test_append_past_max_length_fails_naming_lengths():
    """A full row fails the append with its length in the message."""
    with tf.Graph().as_default():
        memory = _define_memory()
        append, feed = _define_append(memory)
        length = memory.length()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(MAX_LENGTH):
                sess.run(append, feed([1], step))
            sess.run(append, feed([0, 2], 0))
            with pytest.raises(tf.errors.InvalidArgumentError) as error:
                sess.run(append, feed([0, 1], 9))
            # The failed append leaves every row as it was.
            np.testing.assert_array_equal(
                sess.run(length), [1, MAX_LENGTH, 1])
    message = str(error.value)
    assert 'Appending past max_length' in message
    assert 'have lengths' in message
    assert '[1 4]' in message
    assert 'max_length' in message


def test_replace_rows_and_fail_past_max_length():
    """Replace overwrites whole rows and rejects overlong lengths."""
    with tf.Graph().as_default():
        memory = _define_memory()
        append, feed = _define_append(memory)
        observ = np.arange(2 * MAX_LENGTH * 2, dtype=np.float32).reshape(
            2, MAX_LENGTH, 2)
        action = np.arange(2 * MAX_LENGTH, dtype=np.int32).reshape(
            2, MAX_LENGTH)
        new_length = tf.placeholder(tf.int32, [2])
        replace = memory.replace(
            Transition(observ, action), new_length, [2, 1])
        episodes, length = memory.data()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(append, feed([0, 1, 2], 5))
            sess.run(replace, {new_length: [3, 4]})
            result, lengths = sess.run((episodes, length))
            with pytest.raises(
                    tf.errors.InvalidArgumentError,
                    match='Replacing with episodes past max_length'):
                sess.run(replace, {new_length: [1, 5]})
    np.testing.assert_array_equal(lengths, [1, 4, 3])
    np.testing.assert_array_equal(result.action[2], action[0])
    np.testing.assert_array_equal(result.action[1], action[1])
    np.testing.assert_array_equal(result.action[0], [5, 0, 0, 0])
    np.testing.assert_array_equal(result.observ[1:], observ[::-1])


def test_clear_rows_then_append_starts_at_first_step():
    """Cleared rows restart at step zero; others continue."""
    with tf.Graph().as_default():
        memory = _define_memory()
        append, feed = _define_append(memory)
        clear_some = memory.clear([0, 2])
        clear_all = memory.clear()
        episodes, length = memory.data()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(append, feed([0, 1, 2], 1))
            sess.run(append, feed([0, 1, 2], 2))
            sess.run(clear_some)
            np.testing.assert_array_equal(sess.run(length), [0, 2, 0])
            sess.run(append, feed([0, 1], 3))
            result, lengths = sess.run((episodes, length))
            sess.run(clear_all)
            np.testing.assert_array_equal(sess.run(length), [0, 0, 0])
    np.testing.assert_array_equal(lengths, [1, 3, 0])
    # Cleared rows keep stale steps behind their length.
    np.testing.assert_array_equal(result.action, [
        [3, 2, 0, 0], [101, 102, 103, 0], [201, 202, 0, 0]])


def test_rows_outside_capacity_fail():
    """Rows beyond the capacity fail the operation."""
    with tf.Graph().as_default():
        memory = _define_memory()
        append, feed = _define_append(memory)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(
                    tf.errors.InvalidArgumentError,
                    match='outside the capacity'):
                sess.run(append, feed([1, 3], 0))


def test_variables_are_non_trainable_in_scope():
    """Buffers are non-trainable variables in the given scope."""
    with tf.Graph().as_default():
        _define_memory('episodes_temporary')
        assert not tf.trainable_variables()
        names = sorted(variable.name for variable in tf.global_variables())
        shapes = {
            variable.name: variable.shape.as_list()
            for variable in tf.global_variables()}
    assert names == [
        'episodes_temporary/buffer_0:0', 'episodes_temporary/buffer_1:0',
        'episodes_temporary/length:0']
    assert shapes['episodes_temporary/buffer_0:0'] == [
        CAPACITY, MAX_LENGTH, 2]
    assert shapes['episodes_temporary/buffer_1:0'] == [CAPACITY, MAX_LENGTH]


def test_append_inside_cond():
    """The memory works inside a conditional branch."""
    with tf.Graph().as_default():
        memory = _define_memory()
        pred = tf.placeholder(tf.bool, [])
        transition = Transition(tf.ones([1, 2]), tf.ones([1], tf.int32))
        append = tf.cond(
            pred, lambda: memory.append(transition, [1]), tf.no_op)
        length = memory.length()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(append, {pred: True})
            sess.run(append, {pred: False})
            sess.run(append, {pred: True})
            np.testing.assert_array_equal(sess.run(length), [0, 2, 0])


def test_invalid_arguments():
    """Bad sizes, shapes and rows raise ValueError."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='max_length 0'):
            episode_memory.EpisodeMemory((tf.zeros([2]),), 3, 0, 'memory')
        with pytest.raises(ValueError, match='fully defined'):
            episode_memory.EpisodeMemory(
                (tf.placeholder(tf.float32, [None]),), 3, 2, 'memory')
        memory = _define_memory()
        with pytest.raises(ValueError, match='vector'):
            memory.clear([[0]])
