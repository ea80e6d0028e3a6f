"""What the update benchmarks measure against: a plain matmul chain's FLOP
rate under XLA on the same machine, and the FLOP of a gradient step."""

import statistics
import time


def rate(rounds):
    """GFLOP/s of a chain of [6400,128]x[128,128] matmuls under XLA, the
    median of `rounds` calls."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents.tools import compiled_ops
    graph = tf.Graph()
    with graph.as_default():
        left = tf.random.normal([6400, 128], seed=1)
        right = tf.random.normal([128, 128], seed=2)

        def _chain():
            # Each product feeds the next, so none can be skipped.
            return tf.reduce_sum(tf.while_loop(
                lambda index, _: index < 200,
                lambda index, value: (
                    index + 1, tf.matmul(value, right) * 0.01),
                (0, left))[1])

        run = compiled_ops.compiled_function(_chain)()
    with tf.Session(graph=graph) as session:
        session.run(run)
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            session.run(run)
            times.append(time.perf_counter() - start)
    return 200 * 2 * 6400 * 128 * 128 / statistics.median(times) / 1e9


def training_flops(networks, observ_size, samples):
    """FLOP of forward and backward passes (3x the forward's 2 per weight
    and sample) of `samples` through the `networks`, hidden layer sizes
    each, from `observ_size` inputs to one output."""
    weights = 0
    for layers in networks:
        sizes = (observ_size,) + tuple(layers) + (1,)
        weights += sum(a * b for a, b in zip(sizes, sizes[1:]))
    return 2 * 3 * weights * samples
