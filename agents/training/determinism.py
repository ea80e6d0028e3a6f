"""TensorFlow's op determinism for seeded runs, set by the entry points."""

import tensorflow.compat.v1 as tf


def enable_for_seed(seed):
    """Turn on TensorFlow's op determinism where `seed` is not None."""
    if seed is not None:
        tf.compat.v2.config.experimental.enable_op_determinism()
