"""In-graph storage of whole episodes, one row per episode."""

import tensorflow.compat.v1 as tf


class EpisodeMemory:
    """Stores episodes of transitions in non-trainable variables.

    Every tensor of the template gets a buffer `[capacity, max_length] +
    shape`, and a vector holds the steps stored in each row. Clearing only
    resets lengths, so readers mask by the returned length. A scope name
    ending in `_temporary` keeps the buffers out of checkpoints.
    """

    def __init__(self, template, capacity, max_length, scope):
        """Create the buffer variables.

        Args:
            template: Nested structure of tensors of the shapes and dtypes of
                a single step, without batch dimension.
            capacity: Number of rows, that is episodes held at once.
            max_length: Maximum number of steps per row.
            scope: Name of the variable scope for the buffers.

        Raises:
            ValueError: When capacity or max_length is not positive, or a
                template shape is not fully defined.
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
        with tf.variable_scope(scope) as variable_scope:
            self._scope = variable_scope
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
    def capacity(self):
        """Number of rows."""
        return self._capacity

    @property
    def variables(self):
        """Tuple of the buffer variables, flat in the template's order, and
        the variable of the rows' lengths."""
        return tuple(self._buffers), self._length

    @property
    def max_length(self):
        """Maximum number of steps per row."""
        return self._max_length

    def length(self, rows=None):
        """Number of steps stored in the rows.

        Args:
            rows: Optional 1-D integer tensor of rows; all rows by default.

        Returns:
            Int32 tensor with one length per row.
        """
        with tf.name_scope('episode_memory_length'):
            rows = self._rows(rows)
            return tf.gather(self._length, rows, name='length')

    def append(self, transitions, rows=None):
        """Append one step to each of the rows, which must not repeat.

        Args:
            transitions: Structure like the template of tensors with a leading
                dimension of the size of `rows`.
            rows: Optional 1-D integer tensor of rows; all rows by default.

        Returns:
            Operation that appends; it fails with an assertion naming the
            rows, their lengths and `max_length` when a row is full.
        """
        with tf.name_scope('episode_memory_append'):
            rows = self._rows(rows)
            flat_transitions = self._flatten(transitions)

            def _define_assertions():
                # Reading the lengths must wait for the range check, whose
                # message is clearer than that of an out-of-range gather.
                with tf.control_dependencies(
                        [self._assert_rows_in_range(rows)]):
                    row_length = tf.gather(self._length, rows)
                return [tf.assert_less(
                    row_length, self._max_length,
                    data=[
                        'EpisodeMemory rows', rows, 'have lengths',
                        row_length, 'and are full at max_length',
                        self._max_length],
                    summarize=self._capacity,
                    message='Appending past max_length.')]

            def _define_writes():
                timestep = tf.gather(self._length, rows)
                indices = tf.stack([rows, timestep], 1, name='indices')
                return [
                    tf.scatter_nd_update(buffer_, indices, elements)
                    for buffer_, elements in zip(
                        self._buffers, flat_transitions)]

            with tf.control_dependencies(_define_assertions()):
                writes = _define_writes()
            with tf.control_dependencies(writes):
                increment = tf.ones_like(rows)
                return tf.scatter_add(self._length, rows, increment).op

    def replace(self, episodes, length, rows=None):
        """Overwrite whole rows with new episodes.

        Args:
            episodes: Structure like the template of tensors of shape
                `[len(rows), max_length] + template_shape`.
            length: 1-D integer tensor of the new lengths of the rows.
            rows: Optional 1-D integer tensor of rows; all rows by default.

        Returns:
            Operation that replaces; it fails with an assertion naming the
            lengths when one exceeds `max_length`.
        """
        with tf.name_scope('episode_memory_replace'):
            rows = self._rows(rows)
            length = tf.cast(length, tf.int32)
            flat_episodes = self._flatten(episodes)

            def _define_assertions():
                return [
                    self._assert_rows_in_range(rows),
                    tf.assert_less_equal(
                        length, self._max_length,
                        data=[
                            'EpisodeMemory rows', rows, 'get lengths',
                            length, 'beyond max_length', self._max_length],
                        summarize=self._capacity,
                        message='Replacing with episodes past max_length.')]

            with tf.control_dependencies(_define_assertions()):
                writes = [
                    tf.scatter_update(buffer_, rows, elements)
                    for buffer_, elements in zip(self._buffers, flat_episodes)]
            with tf.control_dependencies(writes):
                return tf.scatter_update(self._length, rows, length).op

    def data(self, rows=None):
        """Read the episodes stored in the rows.

        Args:
            rows: Optional 1-D integer tensor of rows; all rows by default.

        Returns:
            Tuple of the episodes, like the template of tensors `[len(rows),
            max_length, ...]`, and the int32 length of each row. Steps past
            the length hold stale values.
        """
        with tf.name_scope('episode_memory_data'):
            rows = self._rows(rows)
            flat_episodes = [
                tf.gather(buffer_, rows) for buffer_ in self._buffers]
            episodes = tf.nest.pack_sequence_as(self._template, flat_episodes)
            length = tf.gather(self._length, rows, name='length')
            return episodes, length

    def clear(self, rows=None):
        """Reset the length of the rows to zero.

        Args:
            rows: Optional 1-D integer tensor of rows; all rows by default.

        Returns:
            Operation.
        """
        with tf.name_scope('episode_memory_clear'):
            rows = self._rows(rows)
            return tf.scatter_update(
                self._length, rows, tf.zeros_like(rows)).op

    def _rows(self, rows):
        """Convert the rows argument to a 1-D int32 tensor."""
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
