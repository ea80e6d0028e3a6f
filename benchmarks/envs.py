r"""Environment steps per second of the ways to step a batch of environments.

Measures, for each task and batch size, in one run:

  inprocess         BatchEnv of environments in this process
  process_blocking  BatchEnv of ExternalProcess workers, stepped in turn
  process           BatchEnv of ExternalProcess workers, stepped in parallel
                    (`--env_mode=processes`)
  slices            SlicedBatchEnv: one worker per CPU core steps a slice of
                    the batch each (`--env_mode=slices`)
  auto              the mode that `--env_mode=auto` picks, measuring the
                    real constructor as training does; its cell shows the
                    mode's name and that mode's ratio from this table
  sync              gymnasium SyncVectorEnv (the baseline of the ratios)
  async             gymnasium AsyncVectorEnv, one process per environment
  envpool           EnvPool, where it imports (see --envpool_path)
  simulate          the fused `tools.simulate` op with a trivial algorithm
                    (`tools.MockAlgorithm(record=False)`)
                    on an InGraphBatchEnv over the fastest of our BatchEnv
                    modes of the row; its cell also gives the ratio to that
                    mode's raw rate, timed side by side once more

Actions are sampled once up front, outside the timing. BatchEnv modes reset
finished environments as part of the timed loop, like the vector envs do on
their own. Each rate is the median over several chunks of the steps, which
damps interference from other work on the machine; the chunks of all
modes take turns, and each chunk starts with freshly reset environments
(untimed). Run from the repository root:

    python benchmarks/envs.py
    python benchmarks/envs.py --envs=1,8 --tasks=Pendulum-v1 --steps=500
    python benchmarks/envs.py \
        --envpool_path=/tmp/envpool-venv/lib/python3.11/site-packages
"""

import contextlib
import functools
import os
import platform
import sys
import tempfile
import time

from absl import app
from absl import flags
import gymnasium as gym
import numpy as np

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# pylint: disable=wrong-import-position
from agents.training import provenance
from agents.tools.batch_env import BatchEnv
from agents.tools.external_process import ExternalProcess
from agents.tools.sliced_batch_env import SlicedBatchEnv
# pylint: enable=wrong-import-position

MODES = (
    'inprocess', 'process_blocking', 'process', 'slices', 'auto', 'sync',
    'async', 'envpool', 'simulate')
# Our BatchEnv modes, of which the fastest carries the simulate column.
OURS = ('inprocess', 'process_blocking', 'process', 'slices')
# Columns timed by `_time_interleaved`; the others derive from them.
TIMED = ('inprocess', 'process_blocking', 'process', 'slices', 'sync',
         'async', 'envpool')
BASELINE = 'sync'
_WARMUP_STEPS = 20
_CHUNKS = 10

FLAGS = flags.FLAGS
flags.DEFINE_list('envs', ['1', '2', '4', '8', '16'], 'Batch sizes.')
flags.DEFINE_list('tasks', ['Pendulum-v1', 'HalfCheetah-v5'],
                  'Gymnasium environment ids.')
flags.DEFINE_integer('steps', 1000, 'Timed batch steps per cell.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_list('modes', list(MODES), f'Subset of {", ".join(MODES)}.')
flags.DEFINE_string(
    'envpool_path', None, 'Directory to append to sys.path to import '
    'EnvPool from, e.g. the site-packages of a separate virtualenv with the '
    'same Python and NumPy; the envpool column is left out when it does not '
    'import.')


def _time_interleaved(modes, steps):
    """Median env steps per second by mode name, chunks timed in turn;
    `modes`: name -> (`prepare()` before each chunk, `step(index)`, size)."""
    for prepare, step, _ in modes.values():
        prepare()
        for index in range(_WARMUP_STEPS):
            step(index)
    chunk = max(1, steps // _CHUNKS)
    rates = {name: [] for name in modes}
    names = list(modes)
    # Chunks of all modes alternate, in a rotating order, so that load from
    # elsewhere on the machine affects every mode alike.
    for round_ in range(_CHUNKS):
        start = _WARMUP_STEPS + round_ * chunk
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            prepare, step, size = modes[name]
            prepare()
            begin = time.perf_counter()
            for index in range(start, start + chunk):
                step(index)
            rates[name].append(size * chunk / (time.perf_counter() - begin))
    return {name: float(np.median(values)) for name, values in rates.items()}


def _batch_env_mode(batch_env, actions):
    """Mode of a BatchEnv that resets finished environments as it goes."""

    def prepare():
        batch_env.reset()

    def step(index):
        _, _, done, _ = batch_env.step(actions[index])
        if done.any():
            batch_env.reset(np.flatnonzero(done))

    return prepare, step, len(batch_env)


def _vector_env_mode(vector_env, actions):
    """Mode of a vector env, which resets itself."""

    def step(index):
        vector_env.step(actions[index])

    return vector_env.reset, step, vector_env.num_envs


def _simulate_mode(batch_env, stack):
    """Mode of the simulate op of a `tools.MockAlgorithm(record=False)`,
    run through a callable made once, without feeds, as `tools.Loop` does."""
    # TensorFlow loads only here, after the workers forked, and only when
    # this mode runs.
    import tensorflow.compat.v1 as tf
    from agents import tools
    graph = tf.Graph()
    with graph.as_default():
        env = tools.InGraphBatchEnv(batch_env)
        algo = tools.MockAlgorithm(env, record=False)
        reset = tf.Variable(False, trainable=False)
        # Pylint takes the name for the submodule of the same name.
        tensors = tools.simulate(  # pylint: disable=not-callable
            env, algo, log=False, reset=reset)
        switches = {value: reset.assign(value) for value in (False, True)}
        init = tf.global_variables_initializer()
    sess = stack.enter_context(tf.Session(graph=graph))
    sess.run(init)
    call = sess.make_callable(tensors)

    def prepare():
        sess.run(switches[True])
        call()
        sess.run(switches[False])

    def step(index):
        del index
        call()

    return prepare, step, len(batch_env)


def _make_env(task, unused_seed=None):
    """One environment of the task; the seed argument is for `utility`."""
    return gym.make(task)


def _auto_choice(task, size):
    """The mode that `define_batch_env(..., 'auto')` picks for the task."""
    from agents.environments import auto_batch_env
    from agents.environments import env_modes
    batch_env = env_modes.create_batch_env(
        functools.partial(_make_env, task), size, 'auto')
    try:
        # The first reset times the candidates and chooses.
        batch_env.reset()
        mode = (batch_env.mode if isinstance(
            batch_env, auto_batch_env.AutoBatchEnv) else 'inprocess')
    finally:
        batch_env.close()
    return {'inprocess': 'inprocess', 'slices': 'slices',
            'processes': 'process'}[mode]


def _benchmark_task(task, sizes, modes, steps, envpool):
    """Measure the modes for every batch size of one task."""
    constructor = functools.partial(_make_env, task)
    largest = max(sizes)
    # Each in-process mode has its own environments. The per-environment
    # worker modes share workers, since every chunk starts with a reset;
    # batches take the first `size` of them. Batches close their
    # environments when collected, so all of them stay referenced until the
    # task is done.
    inprocess_envs = [constructor() for _ in range(largest)]
    sync_envs = [constructor() for _ in range(largest)]
    workers = []
    if {'process', 'process_blocking'} & set(modes):
        workers = [ExternalProcess(constructor, main_module=False)
                   for _ in range(largest)]
    space = inprocess_envs[0].action_space
    # Wait for the workers' handshakes, so that no worker still builds its
    # environment while a mode is timed.
    for worker in workers:
        assert worker.action_space == space
    space.seed(0)
    count = steps + _WARMUP_STEPS
    actions = np.stack([space.sample() for _ in range(count * largest)])
    actions = actions.reshape((count, largest) + space.shape)
    rows, kept = [], []
    try:
        for size in sizes:
            choice = _auto_choice(task, size) if 'auto' in modes else None
            batches = {}
            kept.append(batches)
            with contextlib.ExitStack() as stack:
                measured = {}
                for mode in modes:
                    if mode not in TIMED:
                        continue
                    measured[mode] = _make_mode(
                        mode, task, size, constructor, inprocess_envs,
                        sync_envs, workers, actions[:, :size], batches, stack,
                        envpool)
                rates = _time_interleaved(measured, steps)
                if 'simulate' in modes:
                    rates.update(_time_simulate(
                        rates, batches, actions[:, :size], steps, stack))
            if choice:
                rates['auto'] = choice
            for mode, rate in rates.items():
                if mode in MODES and isinstance(rate, float):
                    print(f'{task} envs={size} {mode}: {rate:,.0f} steps/s',
                          file=sys.stderr, flush=True)
            rows.append((task, size, rates))
    finally:
        for env in workers + inprocess_envs + sync_envs:
            env.close()
    return rows


def _time_simulate(rates, batches, actions, steps, stack):
    """Time simulate over the fastest of our modes, beside that mode raw."""
    ours = [mode for mode in OURS if mode in batches]
    if not ours:
        return {}
    best = max(ours, key=lambda mode: rates[mode])
    pair = _time_interleaved({
        best: _batch_env_mode(batches[best], actions),
        'simulate': _simulate_mode(batches[best], stack)}, steps)
    return {'simulate': pair['simulate'], 'simulate_over': best,
            'simulate_ratio': pair['simulate'] / pair[best]}


def _make_mode(mode, task, size, constructor, inprocess_envs, sync_envs,
               workers, actions, batches, stack, envpool):
    """Set up one mode for a batch size; see `_time_interleaved`."""
    if mode == 'inprocess':
        batches[mode] = BatchEnv(inprocess_envs[:size], blocking=True)
        return _batch_env_mode(batches[mode], actions)
    if mode in ('process', 'process_blocking'):
        batches[mode] = BatchEnv(
            workers[:size], blocking=mode == 'process_blocking')
        return _batch_env_mode(batches[mode], actions)
    if mode == 'slices':
        batches[mode] = SlicedBatchEnv([constructor] * size)
        stack.callback(batches[mode].close)
        # Wait for the handshakes before timing.
        assert batches[mode].action_space == inprocess_envs[0].action_space
        return _batch_env_mode(batches[mode], actions)
    if mode == 'sync':
        # Closing the vector env would close the reused environments, so it
        # is left to the garbage collector.
        return _vector_env_mode(gym.vector.SyncVectorEnv(
            [lambda env=env: env for env in sync_envs[:size]]), actions)
    if mode == 'async':
        vector_env = gym.vector.AsyncVectorEnv(
            [constructor] * size, context='forkserver')
        stack.callback(vector_env.close)
        return _vector_env_mode(vector_env, actions)
    if mode == 'envpool':
        vector_env = envpool.make_gymnasium(task, num_envs=size)
        stack.callback(vector_env.close)
        return _vector_env_mode(_EnvPoolSteps(vector_env), actions)
    raise ValueError(f'Unknown mode {mode!r}.')


class _EnvPoolSteps:
    """EnvPool's vector env with the float64 actions of its spaces."""

    def __init__(self, env):
        self._env = env
        self.num_envs = env.config['num_envs']

    def reset(self):
        """Reset every environment."""
        return self._env.reset()

    def step(self, actions):
        """Step every environment."""
        return self._env.step(np.asarray(actions, np.float64))


def _format_table(rows, modes):
    """Markdown table of steps per second and ratios to the baseline."""
    lines = [
        '| task | envs | ' + ' | '.join(modes) + ' |',
        '| --- | ---: | ' + ' | '.join('---:' for _ in modes) + ' |']
    for task, size, rates in rows:
        cells = []
        for mode in modes:
            cells.append(_format_cell(mode, rates))
        lines.append(f'| {task} | {size} | ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def _format_cell(mode, rates):
    """One cell: the rate and its ratio to the baseline, or the choice."""
    if mode == 'auto':
        choice = rates['auto']
        if choice in rates and BASELINE in rates:
            return f'{choice} ({rates[choice] / rates[BASELINE]:.2f}x)'
        return choice
    cell = f'{rates[mode]:,.0f}'
    if BASELINE in rates:
        cell += f' ({rates[mode] / rates[BASELINE]:.2f}x)'
    if mode == 'simulate':
        cell += (f'; {rates["simulate_ratio"]:.2f}x of '
                 f'{rates["simulate_over"]}')
    return cell


def _machine():
    """One line describing the CPUs, memory and software."""
    model = provenance.cpu_model()
    memory = ''
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open('/proc/meminfo', encoding='utf-8') as file_:
            kilobytes = int(file_.readline().split()[1])
            memory = f', {kilobytes / 2 ** 20:.0f} GiB'
    return (f'{os.cpu_count()} CPUs ({model}){memory}; Python '
            f'{platform.python_version()}, NumPy {np.__version__}, gymnasium '
            f'{gym.__version__}')


def _import_envpool(path):
    """The envpool module, or None when it does not import."""
    if path:
        sys.path.append(os.path.abspath(os.path.expanduser(path)))
    try:
        import envpool
    except ImportError:
        return None
    return envpool


def main(argv):
    """Run the benchmark and print the table."""
    del argv
    unknown = sorted(set(FLAGS.modes) - set(MODES))
    modes = [mode for mode in MODES if mode in FLAGS.modes]
    if unknown or not modes:
        raise app.UsageError(
            f'Unknown modes {unknown}; expected some of {", ".join(MODES)}.')
    sizes = sorted({int(size) for size in FLAGS.envs})
    if not sizes or sizes[0] < 1:
        raise app.UsageError(f'--envs must be positive, got {FLAGS.envs}.')
    if FLAGS.steps < _CHUNKS:
        raise app.UsageError(
            f'--steps must be at least {_CHUNKS}, got {FLAGS.steps}.')
    envpool = None
    if 'envpool' in modes:
        envpool = _import_envpool(FLAGS.envpool_path)
        if envpool is None:
            print('EnvPool does not import; leaving out its column (see '
                  '--envpool_path).', file=sys.stderr)
            modes.remove('envpool')
    record = provenance.record()
    json_path = FLAGS.json and os.path.abspath(FLAGS.json)
    # MuJoCo writes deprecation warnings of gymnasium's models into
    # MUJOCO_LOG.TXT in the working directory; keep the checkout clean.
    os.chdir(tempfile.mkdtemp(prefix='benchmark_envs_'))
    rows = []
    for task in FLAGS.tasks:
        rows += _benchmark_task(task, sizes, modes, FLAGS.steps, envpool)
    if json_path:
        provenance.write_json(json_path, dict(
            steps=FLAGS.steps,
            envpool=envpool.__version__ if envpool else None,
            rows=[dict(task=task, envs=size, rates=rates)
                  for task, size, rates in rows]), record)
    versions = f', EnvPool {envpool.__version__}' if envpool else ''
    print(f'Steps per second (ratio to {BASELINE}); {FLAGS.steps} batch '
          f'steps per cell; {_machine()}{versions}.\n')
    print(_format_table(rows, modes))


if __name__ == '__main__':
    app.run(main)
