"""A session call of fixed fetches, as fast as TensorFlow makes one."""

import tensorflow.compat.v1 as tf


class SessionCallable:
    """A session call of fixed fetches that feeds only placeholders.

    Args:
        sess: The session.
        fetches: What each call fetches.
        target: Op each call runs too.
        placeholders: The placeholders each call feeds, in order.
        caller_thread: Whether the ops run in the calling thread.
    """

    def __init__(self, sess, fetches, target, placeholders, caller_thread):
        self._placeholders = placeholders
        # Any feed list, also an empty one, takes the slow path of
        # `Session.run`; only None makes the fast callable.
        self._call = sess.make_callable(
            (fetches, target), placeholders or None,
            accept_options=caller_thread)
        self._options = {}
        if caller_thread:
            self._options['options'] = tf.RunOptions(inter_op_thread_pool=-1)

    def __call__(self, values):
        """Run with the values of the placeholders; return the fetches.

        Args:
            values: Dict from references of tensors (`tensor.ref()`) to
                values, for at least the placeholders.
        """
        fetched, _ = self._call(
            *[values[tensor.ref()] for tensor in self._placeholders],
            **self._options)
        return fetched
