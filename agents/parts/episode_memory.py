"""In-graph storage of whole episodes, one row per episode."""

import tensorflow.compat.v1 as tf


class EpisodeMemory:
    """Stores episodes of transitions in non-trainable variables.

    Every tensor of the template gets a buffer `[capacity, max_length] +
    shape`; clearing only resets the rows' lengths. Methods take `rows`, a
    1-D integer tensor of rows (None: all).
    """

    def __init__(self, template, capacity, max_length, scope):
        """Create the buffers of `capacity` rows in the variable `scope`; a
        ValueError when capacity or max_length is not positive, or a
        template shape is not fully defined.

        Args:
            template: Nested structure of tensors of the shapes and dtypes of
                a single step, without batch dimension.
            max_length: Maximum number of steps per row.
        """
        if capacity < 1 or max_length < 1:
            raise ValueError(
                f'capacity and max_length must be positive, got capacity '
                f'{capacity} and max_length {max_length}')
        self._template = template
        self._capacity = int(capacity)
        self._max_length = int(max_length)
        flat_template = tf.nest.flatten(template)
        for index, element in enumerate(flat_template):
            if not element.shape.is_fully_defined():
                raise ValueError(
                    f'template element {index} needs a fully defined shape, '
                    f'got {element.shape}')
        with tf.variable_scope(scope):
            self._length = tf.get_variable(
                'length', [self._capacity], tf.int32,
                tf.zeros_initializer(), trainable=False)
            self._buffers = [
                tf.get_variable(
                    f'buffer_{index}',
                    [self._capacity, self._max_length] +
                    element.shape.as_list(),
                    element.dtype.base_dtype, tf.zeros_initializer(),
                    trainable=False)
                for index, element in enumerate(flat_template)]

    @property
    def variables(self):
        """The buffer variables, flat in the template's order; the lengths'."""
        return tuple(self._buffers), self._length

    def length(self, rows=None):
        """Int32 tensor of the number of steps stored in the rows."""
        with tf.name_scope('episode_memory_length'):
            return tf.gather(self._length, self._rows(rows), name='length')

    def append(self, transitions, rows=None):
        """Operation that appends one step (`transitions` like the template,
        of tensors `[len(rows), ...]`) to each of the rows, which must not
        repeat; it fails naming the rows and lengths where one is full."""
        with tf.name_scope('episode_memory_append'):
            rows = self._rows(rows)
            flat_transitions = self._flatten(transitions)
            # Reading the lengths waits for the range check, whose message is
            # clearer than that of an out-of-range gather.
            with tf.control_dependencies([self._assert_rows_in_range(rows)]):
                timestep = tf.gather(self._length, rows)
            not_full = tf.assert_less(
                timestep, self._max_length,
                data=['EpisodeMemory rows', rows, 'have lengths', timestep,
                      'and are full at max_length', self._max_length],
                summarize=self._capacity, message='Appending past max_length.')
            with tf.control_dependencies([not_full]):
                indices = tf.stack([rows, timestep], 1, name='indices')
                writes = [
                    tf.scatter_nd_update(buffer_, indices, elements)
                    for buffer_, elements in zip(
                        self._buffers, flat_transitions)]
            with tf.control_dependencies(writes):
                return tf.scatter_add(
                    self._length, rows, tf.ones_like(rows)).op

    def replace(self, episodes, length, rows=None):
        """Operation that overwrites whole rows with new `episodes` (like the
        template, of tensors `[len(rows), max_length, ...]`) and their 1-D
        integer `length`; it fails naming the lengths past `max_length`."""
        with tf.name_scope('episode_memory_replace'):
            rows = self._rows(rows)
            length = tf.cast(length, tf.int32)
            flat_episodes = self._flatten(episodes)
            not_too_long = tf.assert_less_equal(
                length, self._max_length,
                data=['EpisodeMemory rows', rows, 'get lengths', length,
                      'beyond max_length', self._max_length],
                summarize=self._capacity,
                message='Replacing with episodes past max_length.')
            with tf.control_dependencies(
                    [self._assert_rows_in_range(rows), not_too_long]):
                writes = [
                    tf.scatter_update(buffer_, rows, elements)
                    for buffer_, elements in zip(self._buffers, flat_episodes)]
            with tf.control_dependencies(writes):
                return tf.scatter_update(self._length, rows, length).op

    def data(self, rows=None):
        """The episodes of the rows, like the template of tensors
        `[len(rows), max_length, ...]` stale past the length, and the int32
        length of each row."""
        with tf.name_scope('episode_memory_data'):
            rows = self._rows(rows)
            episodes = tf.nest.pack_sequence_as(self._template, [
                tf.gather(buffer_, rows) for buffer_ in self._buffers])
            return episodes, tf.gather(self._length, rows, name='length')

    def clear(self, rows=None):
        """Operation that resets the length of the rows to zero."""
        with tf.name_scope('episode_memory_clear'):
            rows = self._rows(rows)
            return tf.scatter_update(
                self._length, rows, tf.zeros_like(rows)).op

    def _rows(self, rows):
        """The rows argument as a 1-D int32 tensor."""
        if rows is None:
            return tf.range(self._capacity, name='rows')
        rows = tf.cast(tf.convert_to_tensor(rows), tf.int32, name='rows')
        if rows.shape.ndims is not None and rows.shape.ndims != 1:
            raise ValueError(f'rows must be a vector, got shape {rows.shape}')
        return rows

    def _flatten(self, structure):
        """Flatten a structure that must match the template."""
        tf.nest.assert_same_structure(
            self._template, structure, check_types=False)
        return [
            tf.convert_to_tensor(element, dtype=buffer_.dtype.base_dtype)
            for element, buffer_ in zip(
                tf.nest.flatten(structure), self._buffers)]

    def _assert_rows_in_range(self, rows):
        """Assertion that all rows index the memory."""
        in_range = tf.logical_and(
            tf.reduce_all(rows >= 0), tf.reduce_all(rows < self._capacity))
        return tf.Assert(
            in_range,
            ['EpisodeMemory rows', rows, 'outside the capacity',
             self._capacity],
            summarize=self._capacity, name='rows_in_range')
