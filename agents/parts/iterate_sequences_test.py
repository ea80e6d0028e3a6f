"""Tests for iterating over shuffled mini-batches of padded sequences."""

import collections

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.parts.iterate_sequences import iterate_sequences
from agents.parts.iterate_sequences import plan_sequences

Step = collections.namedtuple('Step', 'observ, action')

# Step t of sequence n holds the code 100 * (n + 1) + t; steps past the
# length hold garbage that must not reach the consumer.
LENGTH = np.array([5, 1, 3, 0, 7, 4], np.int32)
MAX_LENGTH = 7
GARBAGE = 999


def _sequences():
    """Observations [6, 7, 2] and actions [6, 7] encoding their position."""
    code = (
        100 * (np.arange(len(LENGTH))[:, None] + 1) +
        np.arange(MAX_LENGTH)[None, :])
    valid = np.arange(MAX_LENGTH)[None, :] < LENGTH[:, None]
    code = np.where(valid, code, GARBAGE)
    observ = np.stack([code, -code], -1).astype(np.float32)
    return Step(observ, code.astype(np.int32))


def _run_iteration(**kwargs):
    """Iterate with a consumer that returns its mini-batch unchanged."""
    shapes = []

    def consumer_fn(batch, length):
        shapes.append((
            batch.observ.shape.as_list(), batch.action.shape.as_list(),
            length.shape.as_list()))
        return batch, length

    sequences = _sequences()
    steps = kwargs.get('chunk_length') or MAX_LENGTH
    batch_size = kwargs.get('batch_size') or 12
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        template = (
            Step(tf.zeros([batch_size, steps, 2]),
                 tf.zeros([batch_size, steps], tf.int32)),
            tf.zeros([batch_size], tf.int32))
        output = iterate_sequences(
            consumer_fn, template, sequences, tf.constant(LENGTH), **kwargs)
        with tf.Session() as sess:
            result = sess.run(output)
    return result, shapes


def _check_epochs(result, num_epochs, padding_value):
    """Each epoch visits every valid step once; all else is padding.

    Returns:
        The sequence codes of the first step of each item, per epoch.
    """
    (batches, length) = result
    expected = sorted(
        100 * (n + 1) + t
        for n, count in enumerate(LENGTH) for t in range(count))
    num_batches = len(length)
    assert num_batches % num_epochs == 0
    per_epoch = num_batches // num_epochs
    orders = []
    for epoch in range(num_epochs):
        epoch_slice = slice(epoch * per_epoch, (epoch + 1) * per_epoch)
        action = batches.action[epoch_slice].reshape(
            -1, batches.action.shape[-1])
        observ = batches.observ[epoch_slice].reshape(
            -1, batches.observ.shape[-2], 2)
        item_length = length[epoch_slice].reshape(-1)
        np.testing.assert_array_equal(observ[..., 0], action)
        np.testing.assert_array_equal(observ[..., 1], -action + (
            2 * padding_value * (action == padding_value)))
        valid = np.arange(action.shape[1])[None] < item_length[:, None]
        visited = sorted(action[valid].tolist())
        assert visited == expected
        assert np.all(action[~valid] == padding_value)
        # Within an item, steps are consecutive codes of one sequence.
        for row, count in zip(action, item_length):
            np.testing.assert_array_equal(
                np.diff(row[:count]), np.ones(max(count - 1, 0)))
        orders.append([row[0] for row, count in zip(action, item_length)
                       if count])
    return orders


def test_whole_sequences_in_batches_with_remainder():
    """Five non-empty sequences in batches of two: three batches an epoch."""
    result, shapes = _run_iteration(batch_size=2, padding_value=-1)
    assert result[1].shape == (3, 2)
    assert result[0].observ.shape == (3, 2, MAX_LENGTH, 2)
    assert shapes == [([2, MAX_LENGTH, 2], [2, MAX_LENGTH], [2])]
    np.testing.assert_array_equal(sorted(result[1].ravel()), [
        0, 1, 3, 4, 5, 7])
    _check_epochs(result, 1, -1)


def test_chunks_over_epochs_are_shuffled():
    """Chunks of three steps: every valid step once per epoch."""
    result, shapes = _run_iteration(
        chunk_length=3, batch_size=3, num_epochs=3, padding_value=-5)
    # The lengths 5, 1, 3, 0, 7, 4 make 2 + 1 + 1 + 0 + 3 + 2 = 9 chunks.
    assert result[1].shape == (9, 3)
    assert shapes == [([3, 3, 2], [3, 3], [3])]
    np.testing.assert_array_equal(sorted(result[1][:3].ravel()), [
        1, 1, 1, 2, 3, 3, 3, 3, 3])
    orders = _check_epochs(result, 3, -5)
    assert orders[0] != orders[1] or orders[1] != orders[2]


def test_chunks_and_batch_not_dividing_the_items():
    """Nine chunks of two steps in batches of four need three batches."""
    result, _ = _run_iteration(chunk_length=2, batch_size=4, num_epochs=2)
    # Chunks: 3 + 1 + 2 + 0 + 4 + 2 = 12 non-empty; 12 / 4 is 3 batches.
    assert result[1].shape == (6, 4)
    _check_epochs(result, 2, 0)


def test_one_batch_per_epoch_by_default():
    """Without batch_size all sequences form one batch per epoch."""
    def consumer_fn(batch, length):
        return tf.reduce_sum(batch), tf.reduce_sum(length)

    with tf.Graph().as_default():
        output = iterate_sequences(
            consumer_fn, (0.0, 0), tf.ones([4, 3]), [3, 0, 1, 2],
            num_epochs=2)
        with tf.Session() as sess:
            total, length = sess.run(output)
    np.testing.assert_array_equal(total, [6.0, 6.0])
    np.testing.assert_array_equal(length, [6, 6])


def test_full_sequences_without_length():
    """Without lengths every step is valid."""
    def consumer_fn(batch, length):
        return tf.reduce_sum(batch['x'], 1), length

    sequences = {'x': np.arange(12, dtype=np.float32).reshape(4, 3)}
    with tf.Graph().as_default():
        output = iterate_sequences(
            consumer_fn, (tf.zeros([2]), tf.zeros([2], tf.int32)),
            sequences, None, batch_size=2)
        with tf.Session() as sess:
            sums, length = sess.run(output)
    np.testing.assert_array_equal(length, np.full((2, 2), 3))
    np.testing.assert_array_equal(sorted(sums.ravel()), [3, 12, 21, 30])


def test_side_effects_run_in_order_inside_cond():
    """In a cond branch, each batch sees the variable the previous set."""
    with tf.Graph().as_default():
        counter = tf.get_variable(
            'counter', [], tf.int32, tf.zeros_initializer(), trainable=False)

        def consumer_fn(unused_batch, length):
            with tf.control_dependencies([length]):
                return tf.identity(counter.assign_add(1))

        pred = tf.placeholder(tf.bool, [])
        output = tf.cond(
            pred,
            lambda: iterate_sequences(
                consumer_fn, 0, tf.zeros([5, 4, 1]), [4, 4, 2, 1, 3],
                chunk_length=2, batch_size=2, num_epochs=2),
            lambda: tf.zeros([0], tf.int32))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(output, {pred: False}).shape == (0,)
            # Seven chunks in batches of two make four batches an epoch.
            np.testing.assert_array_equal(
                sess.run(output, {pred: True}), np.arange(1, 9))


def test_no_batches_when_all_sequences_are_empty():
    """Without any valid step the consumer never runs."""
    def consumer_fn(batch, unused_length):
        return tf.reduce_sum(batch)

    with tf.Graph().as_default():
        output = iterate_sequences(
            consumer_fn, 0.0, tf.ones([3, 2]), [0, 0, 0], batch_size=2)
        with tf.Session() as sess:
            assert sess.run(output).shape == (0,)


def test_invalid_arguments():
    """Non-positive sizes and unknown shapes raise ValueError."""
    def consumer_fn(batch, unused_length):
        return tf.reduce_sum(batch)

    with tf.Graph().as_default():
        sequences = tf.zeros([3, 2])
        with pytest.raises(ValueError, match='num_epochs must be positive'):
            iterate_sequences(
                consumer_fn, 0.0, sequences, None, num_epochs=0)
        with pytest.raises(ValueError, match='chunk_length must be positive'):
            iterate_sequences(
                consumer_fn, 0.0, sequences, None, chunk_length=0)
        with pytest.raises(ValueError, match='batch_size must be positive'):
            iterate_sequences(
                consumer_fn, 0.0, sequences, None, batch_size=0)
        with pytest.raises(ValueError, match='equal static batch'):
            iterate_sequences(
                consumer_fn, 0.0,
                (sequences, tf.placeholder(tf.float32, [None, 2])), None)
        with pytest.raises(ValueError, match='batch and time dimensions'):
            iterate_sequences(
                consumer_fn, 0.0, tf.zeros([3]), None)


def _run_plan(sequences, length, **kwargs):
    """The evaluated plan and the static shape of its batch indices."""
    with tf.Graph().as_default():
        plan = plan_sequences(sequences, length, **kwargs)
        shape = plan.batch_indices.shape.as_list()
        with tf.Session() as sess:
            return sess.run(plan), shape


def test_plan_pads_the_batches_to_a_static_shape():
    """One item with steps: one real batch an epoch, then empty rows."""
    plan, shape = _run_plan(
        np.ones([3, 4], np.float32), [0, 4, 0], batch_size=2, num_epochs=3)
    # Three items fill two batches an epoch; one holds steps.
    assert shape == [6, 2]
    assert plan.num_batches == 3
    np.testing.assert_array_equal(plan.batch_indices, [
        [1, 3], [1, 3], [1, 3], [3, 3], [3, 3], [3, 3]])
    np.testing.assert_array_equal(plan.length, [0, 4, 0, 0])
    np.testing.assert_array_equal(plan.items, [
        [0, 0, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]])


def test_plan_of_chunks_shuffles_within_each_epoch():
    """Chunks of two steps: each real row holds every chunk with steps."""
    sequences = {'x': np.arange(10, dtype=np.int32).reshape(2, 5)}
    plan, shape = _run_plan(
        sequences, [5, 0], chunk_length=2, batch_size=4, num_epochs=2,
        padding_value=-1)
    # Six chunks (three of each sequence) make two batches an epoch, but
    # the three chunks with steps fill only one.
    assert shape == [4, 4]
    assert plan.num_batches == 2
    np.testing.assert_array_equal(plan.length, [2, 2, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(plan.items['x'], [
        [0, 1], [2, 3], [4, -1], [-1, -1], [-1, -1], [-1, -1], [-1, -1]])
    for row in plan.batch_indices[:2]:
        assert sorted(row.tolist()) == [0, 1, 2, 6]
        assert row[3] == 6
    np.testing.assert_array_equal(plan.batch_indices[2:], np.full([2, 4], 6))


def test_plan_rows_follow_the_epochs():
    """Real rows hold epoch after epoch, each epoch every item once."""
    plan, shape = _run_plan(
        np.ones([5, 2], np.float32), [2, 1, 0, 2, 1], batch_size=2,
        num_epochs=3)
    # Five items: three batches an epoch at most; four items with steps
    # fill two.
    assert shape == [9, 2]
    assert plan.num_batches == 6
    for epoch in range(3):
        rows = plan.batch_indices[2 * epoch:2 * epoch + 2]
        assert sorted(rows.ravel().tolist()) == [0, 1, 3, 4]
    np.testing.assert_array_equal(plan.batch_indices[6:], np.full([3, 2], 5))


def test_plan_without_steps_has_no_batches():
    """All lengths zero: no real row, every index the empty item's."""
    plan, shape = _run_plan(
        np.ones([3, 2], np.float32), [0, 0, 0], batch_size=2, num_epochs=2)
    assert shape == [4, 2]
    assert plan.num_batches == 0
    np.testing.assert_array_equal(plan.batch_indices, np.full([4, 2], 3))


def test_given_shuffle_keys_order_the_items_in_a_new_graph():
    """Given keys make the shuffle a function of them: a resumed run that
    draws the same keys (PPO keys them by its seed and the update's number)
    repeats the mini-batches, whatever graph and session it runs in.

    Each epoch visits the items with steps in the order of their keys, the
    empty item (index 8) filling the last mini-batch.
    """
    sequences = np.arange(40, dtype=np.float32).reshape([8, 5])
    length = [5, 5, 5, 5, 5, 5, 5, 0]
    keys = np.array([
        [0.7, 0.1, 0.5, 0.3, 0.9, 0.2, 0.0, 0.4],
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]], np.float32)

    def batches(shuffle_keys):
        plan, _ = _run_plan(
            sequences, length, batch_size=3, num_epochs=2,
            shuffle_keys=shuffle_keys)
        return plan.batch_indices[:plan.num_batches]

    first = batches(keys)
    np.testing.assert_array_equal(batches(keys), first)
    np.testing.assert_array_equal(first, [
        [6, 1, 5], [3, 2, 0], [4, 8, 8], [0, 1, 2], [3, 4, 5], [6, 8, 8]])
    assert not np.array_equal(batches(keys[::-1]), first)
