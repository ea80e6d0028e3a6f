r"""Microseconds per environment step and compile seconds of each path.

Training steps its environments one of several ways: one session call per
batch step (`tools.simulate`, any env mode), or many steps per compiled
call on an in-graph task (`PPO.collect`, `--env_mode=graph`); evaluation
likewise (`tools.compiled_rollout`); the update runs as plain graph ops or
as one XLA call (`compile_update`). For each path this builds the graph of
a config as the training script does, in a fresh process (a cold start:
no persistent XLA cache), and runs its training and evaluation tensors
directly, call by call, timing:

  build s        building the graph (environments, PPO, loop tensors)
  first train s  the first training call (Grappler, XLA compilation)
  first eval s   the first evaluation call
  train us/step  a training call without update, per environment step
  update ms      a training call that updates, less its steps at the rate
                 of the row before
  train call ms  a training call that updates, where every call of a phase
                 updates (with `rollout_length`, or a whole update's steps
                 on an in-graph task): its steps and the update together;
                 `update ms` then comes from a compiled collection's node
                 alone, and is left out on environments behind the
                 numpy_function bridge, whose loop is many nodes
  eval us/step   an evaluation call, per environment step

With --compile_cache, every path keeps its XLA programs in a persistent
cache of its own: the first process of a path compiles and is reported as
the path's "cold" row, the processes after it load and make its "warm" row
(as the seeds of a sweep, or `BATCH_PPO_XLA_CACHE`).

Medians over `--rounds` phases (a phase: the training steps up to and
including an update, then one evaluation). Every path runs in its own
subprocess, paths in turn and round-robin over `--repeats`, so that load
from elsewhere spreads over all of them; compare rows of one run only.

    python benchmarks/profile_paths.py
    python benchmarks/profile_paths.py --paths=graph_compiled,inprocess \
        --repeats=3 --json=benchmarks/results/profile_paths.json
"""

import json
import os
import statistics
import subprocess
import sys
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)

from agents.training import provenance  # pylint: disable=wrong-import-position

# The env mode and the config overrides of each path.
PATHS = {
    'graph_compiled': ('graph', dict(
        compile_rollout=True, compile_update=True)),
    'graph_compiled_plain_update': ('graph', dict(
        compile_rollout=True, compile_update=False)),
    'graph_one_step': ('graph', dict(
        compile_rollout=False, compile_update=False)),
    'inprocess': ('inprocess', dict(
        compile_rollout=True, compile_update=False)),
    'inprocess_one_step': ('inprocess', dict(
        compile_rollout=False, compile_update=False)),
    'inprocess_compiled_update': ('inprocess', dict(
        compile_rollout=True, compile_update=True)),
}

_COLUMNS = (
    ('build_s', 'build s', '{:.2f}'),
    ('first_train_s', 'first train s', '{:.2f}'),
    ('first_eval_s', 'first eval s', '{:.2f}'),
    ('train_us_per_step', 'train us/step', '{:.1f}'),
    ('update_ms', 'update ms', '{:.1f}'),
    ('call_ms', 'train call ms', '{:.1f}'),
    ('eval_us_per_step', 'eval us/step', '{:.1f}'),
)

FLAGS = flags.FLAGS
flags.DEFINE_list('paths', list(PATHS), f'Subset of {", ".join(PATHS)}.')
flags.DEFINE_string('config', 'pendulum', 'Name of a config function.')
flags.DEFINE_integer('rounds', 8, 'Phases (training up to an update, '
                     'then an evaluation) timed per process.')
flags.DEFINE_integer('repeats', 1, 'Processes per path, in turn.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_string('compile_cache', None, 'A folder for a persistent '
                    'cache of XLA programs per path: its first process '
                    'compiles (a row "cold"), later ones load (a row '
                    '"warm"). Default: none, every process compiles.')
flags.DEFINE_string('worker', None, 'Internal: profile this path.')


def profile(path, config_name, rounds):
    """Time the calls of one path in this process; see the module doc.

    Returns:
        Dict of the figures of `_COLUMNS`, each per call where it is a
        list, and the path's env mode and overrides.
    """
    # pylint: disable=import-outside-toplevel,protected-access
    import tensorflow.compat.v1 as tf
    from agents.training import config_spec
    from agents.environments import graph_env
    from agents.training import simulation
    from agents.training import trainer
    env_mode, overrides = PATHS[path]
    config = config_spec.load_named_config(config_name)
    with config.unlocked:
        config.update(overrides, seed=0, logdir=None)
    config = config_spec.complete_config(config)
    start = time.perf_counter()
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        _, batch_env, eval_batch_env = graph_env.define_run_batches(
            config, env_mode)
        graph_ = simulation.define_simulation(
            batch_env, eval_batch_env, config)
        start_training = graph_.is_training.assign(True)
        start_evaluation = tf.group(
            graph_.is_training.assign(False), graph_.force_reset.assign(True))
        end_reset = graph_.force_reset.assign(False)
        made_steps = graph_.get('made_steps')
        if made_steps is None:  # One batch step a call.
            made_steps = tf.constant(0)
        with tf.control_dependencies([graph_.done, graph_.score]):
            # Read once the call's steps (and update) are done.
            num_updates = graph_.algo._num_updates.read_value()
        train_fetch = (graph_.done, num_updates, made_steps)
        eval_fetch = (graph_.eval_done, graph_.eval_score)
        initialize = tf.global_variables_initializer()
    result = dict(
        path=path, env_mode=env_mode, overrides=overrides,
        build_s=time.perf_counter() - start, train_us_per_step=[],
        update_ms=[], eval_us_per_step=[], compiled_call_s=[],
        collect_s=[])
    num_agents = len(batch_env)
    eval_run = graph_.eval_run_steps or len(eval_batch_env)
    eval_calls = len(eval_batch_env) * config.max_length // eval_run
    # Untraced and traced (step stats of the nodes, see `_train_phase`).
    options = (
        tf.RunOptions(inter_op_thread_pool=-1),
        tf.RunOptions(inter_op_thread_pool=-1,
                      trace_level=tf.RunOptions.SOFTWARE_TRACE))
    compiled = bool(graph_.get('run_steps')) and hasattr(
        batch_env, 'transition')
    try:
        with tf.Session(graph=graph, config=trainer.make_session_config(
                config, env_mode)) as sess:
            sess.run(initialize)
            train_call = sess.make_callable(
                train_fetch, accept_options=True)
            eval_call = sess.make_callable(eval_fetch, accept_options=True)
            for index in range(rounds + 1):
                sess.run(start_training)
                _train_phase(
                    train_call, options, result, num_agents,
                    sess.run(graph_.algo._num_updates),
                    first=index == 0, traced=compiled and index % 2 == 1)
                sess.run(start_evaluation)
                _eval_phase(
                    sess, eval_call, end_reset, options[0], result,
                    len(eval_batch_env) * config.max_length, eval_calls,
                    first=index == 0)
    finally:
        batch_env.close()
        eval_batch_env.close()
    result['call_ms'] = [
        1e3 * seconds for seconds in result['compiled_call_s']]
    if result['compiled_call_s'] and result['collect_s']:
        # An untraced call less the median collection of the traced ones.
        collect = statistics.median(result['collect_s'])
        result['update_ms'] = [
            1e3 * (seconds - collect) for seconds in result['compiled_call_s']]
    return result


def _train_phase(
        call, options, result, num_agents, updates, first, traced):
    """Training calls up to and including the one that updates.

    A call of many steps collects until the memory is full and updates in
    the same call. Where every call of a phase updates (in-graph tasks: a
    call holds a whole update's steps), the time of its compiled collection
    (the node `collect`, from the step stats of a traced call) is
    told apart from the rest; the update's time comes from untraced calls
    (tracing slows the plain graph's nodes). Elsewhere the calls without
    update give the time per step.
    """
    per_step = []
    first_call = True
    while True:
        metadata = tf_run_metadata() if traced else None
        start = time.perf_counter()
        _, num_updates, made = call(
            options=options[traced], run_metadata=metadata)
        seconds = time.perf_counter() - start
        made = made or num_agents
        if first and first_call:
            result['first_train_s'] = seconds
        elif num_updates == updates:
            per_step.append(seconds / made)
        if num_updates > updates:
            break
        first_call = False
    if first:
        return
    if per_step:
        step_seconds = statistics.median(per_step)
        result['train_us_per_step'].append(1e6 * step_seconds)
        result['update_ms'].append(1e3 * (seconds - step_seconds * made))
    elif traced:
        collect = _node_seconds(metadata, 'collect/')
        result['train_us_per_step'].append(1e6 * collect / made)
        result['collect_s'].append(collect)
    else:
        result['compiled_call_s'].append(seconds)


def tf_run_metadata():
    """A `RunMetadata` to fill (TensorFlow loads only in the workers)."""
    import tensorflow.compat.v1 as tf  # pylint: disable=import-outside-toplevel
    return tf.RunMetadata()


def _node_seconds(metadata, prefix):
    """Seconds of the longest traced node whose name starts with prefix."""
    return max(
        node.all_end_rel_micros
        for device in metadata.step_stats.dev_stats
        for node in device.node_stats
        if node.node_name.startswith(prefix)) / 1e6


def _eval_phase(sess, call, end_reset, options, result, steps, calls, first):
    """One evaluation: its calls, the first with the reset switch on."""
    start = time.perf_counter()
    for index in range(calls):
        call(options=options)
        if index == 0:
            sess.run(end_reset)
    seconds = time.perf_counter() - start
    if first:
        result['first_eval_s'] = seconds
    else:
        result['eval_us_per_step'].append(1e6 * seconds / steps)


def _run_worker(path, repeat):
    """Profile a path in a fresh process; return its result."""
    command = [
        sys.executable, os.path.abspath(__file__), f'--worker={path}',
        f'--config={FLAGS.config}', f'--rounds={FLAGS.rounds}']
    if FLAGS.compile_cache:
        command.append('--compile_cache=' + os.path.join(
            os.path.abspath(os.path.expanduser(FLAGS.compile_cache)), path))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    output = subprocess.run(
        command, env=env, check=True, capture_output=True, text=True,
        cwd=_ROOT).stdout
    result = json.loads(output.strip().splitlines()[-1])
    if FLAGS.compile_cache:
        result['path'] += ' (warm)' if repeat else ' (cold)'
    return result


def _summarize(runs):
    """Medians per path over its processes and calls."""
    rows = {}
    for run in runs:
        row = rows.setdefault(run['path'], {key: [] for key, *_ in _COLUMNS})
        for key, *_ in _COLUMNS:
            value = run.get(key)
            row[key].extend(value if isinstance(value, list) else [value])
    return {
        path: {key: statistics.median(values) for key, values in row.items()
               if values}
        for path, row in rows.items()}


def main(argv):
    """Profile the paths of the flags and print the table."""
    del argv
    if FLAGS.worker:
        if FLAGS.compile_cache:
            # Before TensorFlow loads, which reads the flag once.
            from agents.training import xla_cache  # pylint: disable=import-outside-toplevel
            xla_cache.use_persistent_cache(FLAGS.compile_cache)
        print(json.dumps(profile(FLAGS.worker, FLAGS.config, FLAGS.rounds)))
        return
    unknown = sorted(set(FLAGS.paths) - set(PATHS))
    if unknown:
        raise app.UsageError(
            f'Unknown paths {unknown}; expected some of {", ".join(PATHS)}.')
    record = provenance.record()
    runs = [
        _run_worker(path, repeat)
        for repeat in range(FLAGS.repeats) for path in FLAGS.paths]
    table = _summarize(runs)
    print('$ python benchmarks/profile_paths.py ' + ' '.join(sys.argv[1:]))
    print(f'config {FLAGS.config}, medians of {FLAGS.repeats} processes of '
          f'{FLAGS.rounds} phases each')
    print('| path | ' + ' | '.join(title for _, title, _ in _COLUMNS) + ' |')
    print('| --- ' * (len(_COLUMNS) + 1) + '|')
    for path in sorted(table, key=lambda name: (
            FLAGS.paths.index(name.split(' ')[0]), name)):
        row = table[path]
        print(f'| {path} | ' + ' | '.join(
            form.format(row[key]) if key in row else '-'
            for key, _, form in _COLUMNS) + ' |')
    if FLAGS.json:
        provenance.write_json(FLAGS.json, dict(
            config=FLAGS.config, rounds=FLAGS.rounds, table=table,
            runs=runs), record)


if __name__ == '__main__':
    app.run(main)
