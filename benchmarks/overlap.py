r"""Can the environments' Python overlap the graph's kernels? A measurement.

Issue 10 proposed two ways to let the environments step (Python, holding
the GIL) while TensorFlow computes (kernels, not holding it):

- Groups: split the batch in two and step group A's environments while the
  graph computes group B's actions and training ops, all in one
  `session.run`. Measured here as the fused PPO step of the whole batch
  against two independent fused steps of half the batch each (their own
  algorithm and variables) fetched in one `session.run`, with one or two
  inter-op threads. That is an upper bound of the groups design: one
  algorithm serving both groups would add ordering between them.
- A stepping thread with a promise the graph waits on: the next actions
  need the next observations, so only work that does not feed the next
  actions can run beside the stepping, which is `algo.experience` (memory
  writes, normalizer updates) and the summaries. Its time is the difference
  between a training step and an evaluation step (PPO's `experience` does
  nothing in evaluation), which bounds what this design can save.

    python benchmarks/overlap.py --tasks=pendulum,cheetah --num_envs=16 \
        --json=benchmarks/results/overlap.json

Rows run in alternation, twice each; compare rows of one run only.
"""

import os
import sys
import time

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from absl import app  # pylint: disable=wrong-import-position
from absl import flags  # pylint: disable=wrong-import-position

from agents.training import provenance  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_list('tasks', ['pendulum', 'cheetah'], 'Config names whose '
                  'environment, network and algorithm settings to use.')
flags.DEFINE_integer('num_envs', 16, 'Environments in the whole batch.')
flags.DEFINE_integer('steps', 1000, 'Timed batch steps per row and round.')
flags.DEFINE_integer('rounds', 2, 'Times each row runs, in alternation.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')

_WARMUP = 200
# Episodes the memory holds: more than the timed steps fill, so that no
# update runs while timing; small enough to allocate quickly.
_CAPACITY_STEPS = 5000


def _config(task, num_envs):
    """The task's config with `num_envs` agents and no update while timed."""
    from agents.training import config_spec
    config = config_spec.load_named_config(task)
    with config.unlocked:
        config.num_agents = num_envs
        config.seed = 0
        config.update_steps = None
        max_length = config.max_length or 1000
        steps = _CAPACITY_STEPS + FLAGS.steps + _WARMUP
        config.update_every = -(-steps * num_envs // max_length) + num_envs
    return config


def _build(task, groups, inter_threads, training):
    """A callable of one fused step of every group, in one session.run."""
    import tensorflow.compat.v1 as tf
    from agents import tools
    from agents.environments import env_modes
    from agents.scripts import utility
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        sims = []
        for index in range(groups):
            config = _config(task, FLAGS.num_envs // groups)
            with tf.variable_scope(f'group_{index}'):
                with tf.variable_scope('environments'):
                    batch_env = tools.InGraphBatchEnv(
                        env_modes.make_batch_env(
                            config, 100 * index, 'inprocess'))
                sims.append(utility.define_simulation_graph(
                    batch_env, config.algorithm, config))
        init = tf.global_variables_initializer()
    session = tf.Session(graph=graph, config=tf.ConfigProto(
        inter_op_parallelism_threads=inter_threads,
        intra_op_parallelism_threads=1, use_per_session_threads=True))
    session.run(init)
    for sim in sims:
        session.run(sim.is_training.assign(training))
    call = session.make_callable([(sim.done, sim.score) for sim in sims])
    return call, session, [sim.batch_env for sim in sims]


def _time(call):
    """Wall and CPU seconds of `FLAGS.steps` calls after a warm-up."""
    for _ in range(_WARMUP):
        call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(FLAGS.steps):
        call()
    return time.perf_counter() - wall, time.process_time() - cpu


def _rows():
    """(label, groups, inter-op threads, training) of every row."""
    return [
        ('whole batch, training, 1 thread', 1, 1, True),
        ('whole batch, training, 2 threads', 1, 2, True),
        ('two groups, training, 1 thread', 2, 1, True),
        ('two groups, training, 2 threads', 2, 2, True),
        ('whole batch, evaluation, 2 threads', 1, 2, False),
    ]


def measure(task):
    """Median microseconds per batch step and CPU share of every row."""
    samples = {row[0]: [] for row in _rows()}
    for _ in range(FLAGS.rounds):
        for label, groups, threads, training in _rows():
            call, session, batch_envs = _build(
                task, groups, threads, training)
            try:
                wall, cpu = _time(call)
            finally:
                session.close()
                for batch_env in batch_envs:
                    batch_env.close()
            samples[label].append((wall / FLAGS.steps, cpu / wall))
    results = []
    for label, values in samples.items():
        values.sort()
        seconds, cpu_share = values[len(values) // 2]
        results.append(dict(
            row=label, us_per_step=seconds * 1e6,
            env_steps_per_second=FLAGS.num_envs / seconds,
            cores_used=cpu_share,
            samples_us=[value[0] * 1e6 for value in values]))
    return results


def _print_table(task, results):
    whole = results[1]['us_per_step']
    print(f'\n{task}, {FLAGS.num_envs} environments in process, '
          f'{FLAGS.steps} steps x {FLAGS.rounds} rounds (median):\n')
    print('| row | µs per batch step | env steps/s | vs whole batch, '
          '2 threads | cores used |')
    print('| --- | ---: | ---: | ---: | ---: |')
    for result in results:
        print(f"| {result['row']} | {result['us_per_step']:,.0f} | "
              f"{result['env_steps_per_second']:,.0f} | "
              f"{whole / result['us_per_step']:.2f}x | "
              f"{result['cores_used']:.2f} |")
    experience = whole - results[-1]['us_per_step']
    print(f'\nWork a stepping thread could hide (training minus '
          f'evaluation step): {experience:,.0f} µs, '
          f'{experience / whole:.0%} of the training step.')


def main(argv):
    """Measure every task and print its table."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import tensorflow.compat.v1 as tf
    tf.disable_eager_execution()
    record = provenance.record()
    report = dict(tasks={})
    for task in FLAGS.tasks:
        results = measure(task)
        _print_table(task, results)
        report['tasks'][task] = results
        if FLAGS.json:
            provenance.write_json(FLAGS.json, report, record)


if __name__ == '__main__':
    app.run(main)
