r"""What K steps per session call save without XLA, on the in-graph task.

Builds PPO on the in-graph Pendulum (`--env_mode=graph`, 16 environments,
the `pendulum` config) and times, side by side, one fused `tools.simulate`
step per session call (as training runs today) against K of the same steps
in one uncompiled `tf.while_loop` per call, PPO acting greedily (no
update). Calls alternate, medians per env step are printed with the load
average. A measurement for the design of issue 25's K-step driver, not a
driver: episodes end and begin inside the loop as in one-step calls, but
the loop drops the summaries and the scores, and training does not run it.

    python benchmarks/multi_step.py
    python benchmarks/multi_step.py --k=10,50 --calls=200
"""

import os
import statistics
import sys
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

FLAGS = flags.FLAGS
flags.DEFINE_list('k', ['10', '50'], 'Steps per session call to compare.')
flags.DEFINE_integer('calls', 100, 'Timed calls of each K.')
_NUM_ENVS = 16


def build(ks):
    """The graph: one step, and a while loop of K steps for each K.

    Args:
        ks: Steps per call of each loop.

    Returns:
        Tuple of the graph, the one-step fetch and a dict from K to the
        loop's fetch.
    """
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents import tools
    from agents.training import config_spec
    from agents.environments import graph_env
    config = config_spec.complete_config(
        config_spec.load_named_config('pendulum'))
    with config.unlocked:
        config.num_agents = _NUM_ENVS
        config.seed = 0
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        with tf.variable_scope('environments'):
            batch_env = graph_env.define_in_graph_batch(config, 0, 'graph')
        step = tf.train.get_or_create_global_step()
        is_training = tf.Variable(False, trainable=False)
        should_log = tf.Variable(False, trainable=False)
        algo = config.algorithm(
            batch_env, step, is_training, should_log, config)
        # The first call creates simulate's variables, outside any loop.
        # Pylint takes the export for the submodule of the same name.
        one, _, _ = tools.simulate(  # pylint: disable=not-callable
            batch_env, algo, False, False)
        loops = {}
        for k in ks:

            def body(index, ended):
                done, _, summary = tools.simulate(  # pylint: disable=not-callable
                    batch_env, algo, False, False)
                with tf.control_dependencies([summary]):
                    return index + 1, ended + tf.reduce_sum(
                        tf.cast(done, tf.int32))

            loops[k] = tf.while_loop(
                lambda index, _, k=k: index < k, body,
                [tf.constant(0), tf.constant(0)], parallel_iterations=1)
    return graph, one, loops


def main(argv):
    """Time one step per call against K steps per call."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    ks = [int(value) for value in FLAGS.k]
    graph, one, loops = build(ks)
    load_before = os.getloadavg()
    with tf.Session(graph=graph) as sess:
        with graph.as_default():
            sess.run(tf.global_variables_initializer())
        calls = {1: sess.make_callable(one)}
        calls.update({k: sess.make_callable(loops[k]) for k in ks})
        for call in calls.values():
            for _ in range(5):
                call()
        times = {k: [] for k in calls}
        for _ in range(FLAGS.calls):
            for k, call in calls.items():
                begin = time.perf_counter()
                call()
                times[k].append((time.perf_counter() - begin) / k)
    print(f'\n### PPO acting greedily on {_NUM_ENVS} in-graph Pendulums, '
          'µs per batch step (median)\n')
    print('| steps per session call | µs per batch step | against 1 |')
    print('| ---: | ---: | ---: |')
    base = statistics.median(times[1])
    for k, values in times.items():
        value = statistics.median(values)
        print(f'| {k} | {value * 1e6:,.0f} | {base / value:.2f}x |')
    print('\nLoad average (1, 5, 15 min) before %s, after %s.' % (
        ', '.join(f'{value:.2f}' for value in load_before),
        ', '.join(f'{value:.2f}' for value in os.getloadavg())))


if __name__ == '__main__':
    app.run(main)
