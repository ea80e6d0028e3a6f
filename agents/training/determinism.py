"""TensorFlow's op determinism for seeded runs, set by the entry points."""

import tensorflow.compat.v1 as tf


def enable_for_seed(seed):
    """Turn on TensorFlow's op determinism where a run is seeded.

    Process-wide, so the entry points call it (the training script, the
    worker of a sweep's run), never library code: kernels without a
    deterministic implementation raise instead of silently varying between
    runs (this matters on GPUs).

    Args:
      seed: The run's seed (its config's, else the default's), or None.
    """
    if seed is not None:
        tf.compat.v2.config.experimental.enable_op_determinism()
