"""Shuffled mini-batches of padded sequences over several epochs, in-graph."""

import collections

import tensorflow.compat.v1 as tf


# The items and mini-batches of `plan_sequences`, in static shapes: `items`
# like the sequences, of tensors `[num_items + 1, steps, ...]` whose last
# item is all padding; their int32 `length`; `batch_indices`, item indices
# `[max_batches, batch_size]` whose first `num_batches` rows are the
# mini-batches in order, the rest the empty item's only; and `num_batches`.
SequencePlan = collections.namedtuple(
    'SequencePlan', 'items, length, batch_indices, num_batches')


def iterate_sequences(
        consumer_fn, output_template, sequences, length, chunk_length=None,
        batch_size=None, num_epochs=1, padding_value=0, shuffle_keys=None):
    """Call a function on shuffled mini-batches of sequences or their chunks;
    its outputs stacked along a new first axis.

    Every epoch visits every non-empty item once in a new random order, in
    mini-batches of `batch_size`, the last filled up with empty items. The
    mini-batches run one after another in a `tf.scan`, so the side effects of
    one (an optimizer step) precede the next. A ValueError when an argument is
    not positive or the sequences lack static batch and time dimensions.

    Args:
        consumer_fn: Function of a mini-batch (like `sequences`, of tensors
            `[batch_size, steps, ...]`) and its int32 lengths, returning a
            structure like `output_template`, e.g. `(0.0, '')`.
        sequences: Nested structure of tensors `[num_sequences, max_length,
            ...]` with static first two dimensions.
        length: Integer tensor `[num_sequences]`; None: full sequences.
        batch_size: Items per mini-batch; None: all items of an epoch.
        shuffle_keys: Optional float tensor `[num_epochs, num_items(...)]` of
            keys in [0, 1) whose order shuffles each epoch (None: random).
    """
    with tf.name_scope('iterate_sequences'):
        plan = plan_sequences(
            sequences, length, chunk_length, batch_size, num_epochs,
            padding_value, shuffle_keys)
        flat_items = tf.nest.flatten(plan.items)
        batch_indices = plan.batch_indices[:plan.num_batches]

        def _consume(unused_output, indices):
            batch = tf.nest.pack_sequence_as(sequences, [
                tf.gather(items, indices) for items in flat_items])
            batch_length = tf.gather(plan.length, indices)
            return consumer_fn(batch, batch_length)

        return tf.scan(
            _consume, batch_indices, output_template, parallel_iterations=1,
            name='consume')


def num_items(num_sequences, max_length, chunk_length=None):
    """How many items (chunks or sequences) a plan shuffles."""
    if not chunk_length:
        return num_sequences
    return num_sequences * -(-max_length // chunk_length)


def plan_sequences(
        sequences, length, chunk_length=None, batch_size=None, num_epochs=1,
        padding_value=0, shuffle_keys=None):
    """The `SequencePlan` of `iterate_sequences` (same arguments and
    errors), of static shapes only, as compiled loops (XLA) need."""
    for name, value in (('chunk_length', chunk_length),
                        ('batch_size', batch_size)):
        if value is not None and value < 1:
            raise ValueError(f'{name} must be positive or None, got {value}')
    if num_epochs < 1:
        raise ValueError(f'num_epochs must be positive, got {num_epochs}')
    with tf.name_scope('plan_sequences'):
        flat_sequences = [
            tf.convert_to_tensor(sequence)
            for sequence in tf.nest.flatten(sequences)]
        num_sequences, max_length = _static_sizes(flat_sequences)
        if length is None:
            length = tf.fill([num_sequences], max_length)
        length = tf.cast(length, tf.int32, name='length')
        flat_sequences = [
            _pad_past_length(sequence, length, padding_value)
            for sequence in flat_sequences]
        if chunk_length:
            flat_items, item_length = _chunk(
                flat_sequences, length, chunk_length, padding_value,
                num_sequences, max_length)
        else:
            flat_items, item_length = flat_sequences, length
        count = num_items(num_sequences, max_length, chunk_length)
        batch_size = int(batch_size or count)
        # An empty item, all padding, fills the last mini-batches.
        flat_items = [
            tf.concat([items, tf.fill(
                tf.concat([[1], tf.shape(items)[1:]], 0),
                tf.cast(padding_value, items.dtype))], 0)
            for items in flat_items]
        item_length = tf.concat([item_length, [0]], 0)
        if shuffle_keys is None:
            shuffle_keys = tf.random.uniform([num_epochs, count])
        batch_indices, num_batches = _define_batch_indices(
            item_length[:count], batch_size, num_epochs, shuffle_keys)
        return SequencePlan(
            tf.nest.pack_sequence_as(sequences, flat_items), item_length,
            batch_indices, num_batches)


def _static_sizes(flat_sequences):
    """Static number of sequences and maximum length shared by all."""
    sizes = set()
    for sequence in flat_sequences:
        shape = sequence.shape
        if shape.ndims is None or shape.ndims < 2:
            raise ValueError(
                f'sequences need batch and time dimensions, got shape {shape}')
        sizes.add((
            tf.compat.dimension_value(shape[0]),
            tf.compat.dimension_value(shape[1])))
    if len(sizes) != 1 or None in next(iter(sizes)):
        raise ValueError(
            f'sequences need equal static batch and time dimensions, got '
            f'{sorted(sizes, key=str)}')
    return next(iter(sizes))


def _pad_past_length(sequence, length, padding_value):
    """Replace the steps past the length of each sequence by padding."""
    max_length = tf.compat.dimension_value(sequence.shape[1])
    mask = tf.range(max_length)[None, :] < length[:, None]
    # Mask [num, max_length, 1, ...], broadcasting over the event.
    mask = tf.reshape(mask, tf.concat([
        tf.shape(mask), tf.ones([sequence.shape.ndims - 2], tf.int32)], 0))
    padding = tf.cast(padding_value, sequence.dtype)
    return tf.where_v2(mask, sequence, padding, name='padded_sequence')


def _chunk(
        flat_sequences, length, chunk_length, padding_value, num_sequences,
        max_length):
    """Chunks `[num * chunks, chunk_length, ...]` and their lengths."""
    num_chunks = -(-max_length // chunk_length)
    padded_length = num_chunks * chunk_length
    flat_chunks = []
    for sequence in flat_sequences:
        event_shape = sequence.shape[2:].as_list()
        paddings = [[0, 0], [0, padded_length - max_length]] + (
            [[0, 0]] * len(event_shape))
        padded = tf.pad(
            sequence, paddings,
            constant_values=tf.cast(padding_value, sequence.dtype))
        flat_chunks.append(tf.reshape(
            padded, [num_sequences * num_chunks, chunk_length] + event_shape,
            name='chunks'))
    chunk_start = tf.range(num_chunks) * chunk_length
    chunk_length_ = tf.clip_by_value(
        length[:, None] - chunk_start[None, :], 0, chunk_length)
    return flat_chunks, tf.reshape(chunk_length_, [-1], name='chunk_length')


def _define_batch_indices(item_length, batch_size, num_epochs, shuffle_keys):
    """Item indices `[max_batches, batch_size]`; the number of real ones."""
    count = tf.compat.dimension_value(item_length.shape[0])
    empty_index = count
    is_empty = tf.cast(tf.equal(item_length, 0), tf.float32)
    # Random keys below one shuffle the items; adding one to empty items
    # sorts them to the end of every epoch, after all items with steps.
    keys = shuffle_keys + is_empty[None]
    order = tf.argsort(keys, axis=1, name='order')
    num_filled = tf.reduce_sum(1 - tf.cast(is_empty, tf.int32))
    num_batches = (num_filled + batch_size - 1) // batch_size
    capacity = -(-count // batch_size) * batch_size
    order = tf.pad(
        order, [[0, 0], [0, capacity - count]], constant_values=empty_index)
    position = tf.range(capacity)[None, :]
    order = tf.where_v2(position < num_filled, order, empty_index)
    per_epoch = capacity // batch_size
    max_batches = num_epochs * per_epoch
    epoch_batches = tf.reshape(order, [max_batches, batch_size])
    # Row `epoch * num_batches + batch` of the result is the batch of that
    # epoch, the row `epoch * per_epoch + batch` of `epoch_batches`.
    row = tf.range(max_batches)
    total_batches = num_epochs * num_batches
    divisor = tf.maximum(num_batches, 1)
    source = tf.minimum(
        row // divisor * per_epoch + row % divisor, max_batches - 1)
    batch_indices = tf.where_v2(
        (row < total_batches)[:, None], tf.gather(epoch_batches, source),
        empty_index, name='batch_indices')
    return batch_indices, tf.identity(total_batches, name='num_batches')
