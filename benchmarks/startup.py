r"""Where the time to the first training step goes, and the peak memory.

Runs what `agents.scripts.train.train` runs, part by part, in this process,
and prints seconds per part from the start of the process (interpreter
start-up included) to the first training step and the first evaluation
step, then trains on for `--steps` and prints the peak RSS:

    python benchmarks/startup.py --run_config=pendulum --run_env_mode=auto
    python benchmarks/startup.py --run_env_mode=inprocess --json=out.json
    python benchmarks/startup.py --run_env_mode=graph

Parts: the interpreter and this script's imports, TensorFlow's import, the
framework's imports, the configuration (which builds one environment), the
batch of environments (with `auto`, the in-graph task where the config's
task has one, else the first candidate, the others starting in the
background; see `--run_env_mode`), the algorithm's graph, the loop, saver
and session, the variables' initialization, the first training run (Grappler
optimizes the graph then; with `auto`, the candidates are timed first) and
the first evaluation run (the same session callable: the phases share it,
see `tools.Loop`). Each run of the script is one sample; compare settings
side by side in alternating runs, not against figures from another time.
"""

import os
import sys
import time

_START = time.time()

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from absl import app  # pylint: disable=wrong-import-position
from absl import flags  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_string('run_config', 'pendulum', 'Name of a config function '
                    '(--config of the training script).')
flags.DEFINE_string('run_env_mode', 'auto', 'Env mode of the batch '
                    '(--env_mode of the training script).')
flags.DEFINE_integer('steps', 3200, 'Environment steps to train after the '
                     'first ones, for the peak memory.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')


def _process_start():
    """Wall-clock time at which this process started, from /proc."""
    try:
        with open('/proc/self/stat', encoding='ascii') as file_:
            ticks = int(file_.read().rsplit(')', 1)[1].split()[19])
        with open('/proc/uptime', encoding='ascii') as file_:
            uptime = float(file_.read().split()[0])
        return time.time() - uptime + ticks / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError):
        return _START


def _peak_rss_mib():
    """Peak resident set size of this process, MiB."""
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv):
    """Time the parts of the start-up of a training run."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    parts = [('interpreter and script imports', _START - _process_start())]
    rss = [_peak_rss_mib()]
    last = [_START]

    def mark(name):
        now = time.time()
        parts.append((name, now - last[0]))
        rss.append(_peak_rss_mib())
        last[0] = now

    mark('absl and flags')
    import tensorflow.compat.v1 as tf
    mark('import tensorflow')
    from agents.training import config_spec
    from agents.environments import env_modes
    from agents.environments import graph_env
    from agents.training import simulation as simulation_lib
    from agents.training import trainer
    from agents.scripts import utility
    mark('import agents (scripts, configs, networks, PPO)')
    config = config_spec.complete_config(
        config_spec.load_named_config(FLAGS.run_config))
    mark('configuration (builds one environment)')
    graph = tf.Graph()
    with graph.as_default():
        env_mode, batch_env, _ = graph_env.define_run_batches(
            config, env_modes.check_env_mode(FLAGS.run_env_mode),
            evaluation=False)
        mark('batch of environments' + {
            'auto': ' (auto: the candidates start in the background)',
            'graph': ' (graph: the in-graph task)'}.get(env_mode, ''))
        simulation = utility.define_simulation_graph(
            batch_env, config.algorithm, config)
        mark('algorithm graph')
        saver = utility.define_saver(exclude=(r'.*_temporary.*',))
        train_steps, _ = simulation_lib.phase_steps(config)
        loop = simulation_lib.define_loop(
            simulation, None, *simulation_lib.phase_steps(config))
        mark('saver and loop')
    from agents.tools import loop as loop_lib
    calls = []
    original_call = loop_lib._Callable.__call__

    def timed_call(callable_, values):
        begin = time.time()
        result = original_call(callable_, values)
        calls.append((callable_, begin, time.time()))
        return result

    loop_lib._Callable.__call__ = timed_call
    # The training phase, one evaluation run, and --steps more.
    total = train_steps + config.num_agents + FLAGS.steps
    try:
        with tf.Session(graph=graph, config=trainer.make_session_config(
                config)) as sess:
            utility.initialize_variables(sess, saver, None)
            mark('session and variables')
            start_runs = time.time()
            for _ in loop.run(sess, None, total):
                pass
    finally:
        loop_lib._Callable.__call__ = original_call
        batch_env.close()
    # Each run steps the whole batch; the evaluation follows the training.
    _, train_begin, train_end = calls[0]
    _, eval_begin, eval_end = calls[-(-train_steps // config.num_agents)]
    parts.append(('first training run (Grappler, then the step)',
                  train_end - train_begin))
    rss.append(None)
    to_first_step = train_end - _process_start()
    steady = [end - begin for _, begin, end in calls[1:20]]
    results = dict(
        config=FLAGS.run_config, env_mode=env_mode,
        parts=dict(parts), peak_rss_mib_after_part=dict(
            (name, value) for (name, _), value in zip(parts, rss)),
        first_evaluation_run=eval_end - eval_begin,
        typical_run=sorted(steady)[len(steady) // 2] if steady else None,
        seconds_to_first_training_step=to_first_step,
        peak_rss_mib=_peak_rss_mib(), runs=len(calls),
        loop_seconds=time.time() - start_runs)
    print(f'\n### Start-up of {FLAGS.run_config} ({env_mode}): seconds from '
          'the start of the process\n')
    print('| part | seconds | peak RSS after, MiB |')
    print('| --- | ---: | ---: |')
    for (name, seconds), value in zip(parts, rss):
        value = '' if value is None else f'{value:.0f}'
        print(f'| {name} | {seconds:.2f} | {value} |')
    print(f'| **to the end of the first training step** | '
          f'**{to_first_step:.2f}** | |')
    print(f'| first evaluation run | '
          f'{results["first_evaluation_run"]:.2f} | |')
    print(f'\nPeak RSS after {len(calls)} runs: '
          f'{results["peak_rss_mib"]:.0f} MiB.')
    if FLAGS.json:
        # After the timing, which the provenance's imports and git calls
        # would lengthen.
        # pylint: disable-next=import-outside-toplevel
        from agents.training import provenance
        provenance.write_json(
            FLAGS.json, dict(results=results), provenance.record())


if __name__ == '__main__':
    app.run(main)
