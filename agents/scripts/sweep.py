r"""Run a grid of training runs on Ray: every config, seed and setting.

Command line, on one machine (starts a local Ray with its cores):

  python -m agents.scripts.sweep --logdir=~/logdir --configs=cheetah,hopper \
      --seeds=0,1,2

on a cluster started with `ray start --head` (and `ray start
--address=HEAD:6379` on the other nodes), whose nodes all see `--logdir`
on a shared file system:

  python -m agents.scripts.sweep --ray_address=HEAD:6379 --logdir=... \
      --configs=cheetah,hopper --seeds=0,1,2

Every combination of a config, a seed and a setting is one training run, a
Ray task holding `--cpus_per_run` CPUs, with its run folder
`<logdir>/<sweep timestamp>/<config>[-<setting>]-seed<seed>`. `--set=KEY=VALUE`
overrides a config value in every run; a key given several values makes
one setting per value (`--set=learning_rate=1e-3 --set=learning_rate=3e-4`
runs each config and seed twice).

While the runs train, the sweep prints one line per evaluation report of any
run and one when a run finishes, fails or is restarted; at the end a table
of the runs (final and best score, steps, wall-clock, status) and, per
config and setting, the mean, the median and the interquartile mean with
its 95% stratified bootstrap confidence interval of the final scores over
seeds. The same goes to `<logdir>/<sweep timestamp>/results.json`, and
every evaluation report of every run to `curves.csv` beside it
(`config,seed,step,score`).

A run whose Ray worker or node dies is retried by Ray (`--max_retries`)
and resumes from its last checkpoint in the same run folder. A run that
fails for its own reasons (a bad setting, NaN) is not retried; its one-line
error shows in the table. Rerunning the command with `--timestamp` of an
earlier sweep resumes its unfinished runs and skips the finished ones.
Ctrl-C (or SIGTERM, to the sweep or its process group) stops every run with
a checkpoint: Ray's cancellation interrupts the run, and the file
`stop-requested` beside the run folders, which a run looks for between its
session runs, stops it where the interruption misses.

The runs are plain Ray tasks rather than Ray Tune trials: Ray's own task
retries are exactly "retry when the worker dies, never for the task's own
exception" (`max_retries`, `retry_exceptions=False`), run folders and
checkpoints stay those of `train.py`, so a retry or a later sweep resumes
with the code that resumes a single run, and `ray.cancel` delivers the
`KeyboardInterrupt` with which training saves a checkpoint.

Exit codes: 0 when every run finished; 1 when a run failed; 2 when the
flags or configs cannot be used, before anything was written; 130 or 143
after SIGINT or SIGTERM.
"""

import contextlib
import datetime
import json
import logging
import math
import os
import re
import signal
import socket
import sys
import threading
import time

from agents.training import quiet_start
from agents.training import xla_cache

if __name__ == '__main__':
    # Before anything imports TensorFlow: where BATCH_PPO_XLA_CACHE asks
    # for it, the Ray workers that this process starts inherit the flag, so
    # the runs of a sweep after the first of a graph load its compiled code
    # (see xla_cache).
    xla_cache.use_requested_cache()
# Also when imported, since `sweep` is the Python API.
quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags

from agents.training import config_io
from agents.training import config_spec
from agents.environments import env_modes
from agents.training import run_folder
from agents.training import simulation
from agents.training import stopping
from agents.training import sweep_grid
from agents.training import sweep_records
from agents.training import trainer
from agents.training import checkpoints as checkpoints_lib
from agents.training import console
from agents.training import errors
from agents.tools import batch_env as batch_env_lib
from agents.tools import ray_batch_env
from agents.tools import seed_statistics

FLAGS = flags.FLAGS
# Flags that train.py defines too take this module's meaning here.
flags.DEFINE_string(
    'logdir', None, 'Base directory; the sweep writes its run folders to '
    '<logdir>/<timestamp>/.', allow_override=True)
flags.DEFINE_list(
    'configs', None, 'Comma-separated configs: names of '
    'agents/scripts/configs.py, package.module:function or '
    'path/to/file.py:function.')
flags.DEFINE_list('seeds', ['0'], 'Comma-separated integer seeds.')
flags.DEFINE_multi_string(
    'set', [], 'KEY=VALUE override of a config value in every run, as for '
    'train.py; a key given several times makes one setting per value.',
    allow_override=True)
flags.DEFINE_string(
    'ray_address', None, 'Address of a Ray cluster to join (or set '
    'RAY_ADDRESS); without it the sweep starts a local Ray.')
flags.DEFINE_float('cpus_per_run', 1, 'CPUs Ray reserves for each run.')
flags.DEFINE_string(
    'env_mode', 'inprocess', 'How each run steps its environments, as for '
    'train.py; inprocess keeps a run within its CPUs.', allow_override=True)
flags.DEFINE_string(
    'timestamp', None, 'Folder name of the sweep; that of an earlier sweep '
    'resumes its unfinished runs and skips the finished ones.',
    allow_override=True)
flags.DEFINE_integer(
    'max_retries', 3, 'How often Ray retries a run whose worker or node '
    'died.')

RESULTS_NAME = 'results.json'
# Every evaluation report of every run: config, seed, step, score.
CURVES_NAME = 'curves.csv'
# The file by which the sweep asks its runs to save and stop, beside them.
STOP_NAME = 'stop-requested'
# Seconds to wait for the runs to save their checkpoints after Ctrl-C.
_STOP_SECONDS = 600.0
# Seconds between a run's looks for the sweep's stop file.
_STOP_POLL_SECONDS = 0.25
_POLL_SECONDS = 0.5




def sweep(
        logdir, configs, seeds=(0,), settings=(), timestamp=None,
        cpus_per_run=1, env_mode='inprocess', max_retries=3,
        ray_address=None, echo=print):
    """Train every run of the grid on Ray; return the results.

    Ray is joined when running already, else started (`ray.init`) at
    `ray_address`, `RAY_ADDRESS`, or locally.

    Args:
      logdir: Base directory of the sweep's folder.
      configs: Sequence of config names.
      seeds: Sequence of integer seeds.
      settings: Sequence of 'KEY=VALUE' overrides (see `grid`).
      timestamp: Name of the sweep's folder; None uses the current time. An
          existing sweep is resumed: finished runs are skipped.
      cpus_per_run: CPUs Ray reserves for each run.
      env_mode: Env mode of every run (see `train.train`).
      max_retries: How often Ray retries a run whose worker died.
      ray_address: Address of a Ray cluster, or None.
      echo: Function that prints a line of progress.

    Raises:
      config_io.ConfigError: When a flag or config cannot be used; nothing was
          written then.
      KeyboardInterrupt: After every run stopped with a checkpoint, and the
          table and results were written.

    Returns:
      The results, as written to `results.json`.
    """
    ray = _import_ray()
    if isinstance(cpus_per_run, bool) or not (
            isinstance(cpus_per_run, (int, float)) and 0 < cpus_per_run
            < float('inf')):
        raise config_io.ConfigError(
            f'--cpus_per_run={cpus_per_run!r} must be a positive number.')
    if isinstance(max_retries, bool) or not isinstance(
            max_retries, int) or max_retries < 0:
        raise config_io.ConfigError(
            f'--max_retries={max_retries!r} must be an integer >= 0.')
    env_mode = env_modes.check_env_mode(env_mode)
    runs = sweep_grid.grid(configs, seeds, settings)
    logdir = os.path.expanduser(logdir)
    timestamp = timestamp or datetime.datetime.now().strftime(
        '%Y%m%dT%H%M%S')
    if not re.fullmatch(r'[\w.-]+', timestamp):
        raise config_io.ConfigError(
            f'--timestamp={timestamp} must be a folder name (letters, '
            'digits, _ . -).')
    sweep_dir = os.path.join(logdir, timestamp)
    run_folder.check_writable(sweep_dir)
    # Every config builds here first, so that a bad name or setting stops
    # the sweep before anything is written or started.
    todo = []
    records = {}
    for run in runs:
        run.run_dir = os.path.join(sweep_dir, run.name)
        config = sweep_grid.build_config(run, run.run_dir, cpus_per_run)
        record = sweep_records.read_record(run.run_dir)
        if record and record['status'] == 'finished':
            echo(f'[{run.name}] finished earlier; skipped.')
            records[run.name] = record
        else:
            todo.append((run, config))
    _init_ray(ray, ray_address)
    _check_cpus(ray, cpus_per_run)
    # Of an earlier sweep of this timestamp that was interrupted.
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(sweep_dir, STOP_NAME))
    if todo:
        echo(f'Sweep {sweep_dir}: {len(todo)} runs to train '
             f'({len(runs) - len(todo)} finished earlier), '
             f'{cpus_per_run:g} CPUs each.')
    interrupted = None
    try:
        _train_runs(ray, todo, records, dict(
            cpus_per_run=cpus_per_run, env_mode=env_mode,
            max_retries=max_retries, sweep_dir=sweep_dir), echo)
    except KeyboardInterrupt as interrupt:
        interrupted = interrupt
    results = sweep_records.summarize(timestamp, sweep_dir, runs, records)
    os.makedirs(sweep_dir, exist_ok=True)
    results['curves'] = os.path.join(sweep_dir, CURVES_NAME)
    seed_statistics.write_curves_csv(
        results['curves'], sweep_records.curve_rows(runs, records))
    config_io.write_atomic(
        os.path.join(sweep_dir, RESULTS_NAME),
        json.dumps(results, indent=2) + '\n')
    for line in sweep_records.format_table(results):
        echo(line)
    echo(f'Results in {os.path.join(sweep_dir, RESULTS_NAME)}.')
    if interrupted is not None:
        if any(row['status'] != 'finished' for row in results['runs']):
            echo(
                f'Resume with the same command and --timestamp={timestamp}.')
        raise interrupted
    return results



def _train_runs(ray, todo, records, options, echo):
    """Submit the runs, print their progress, and collect their records.

    Args:
      ray: The `ray` module, initialized.
      todo: List of `(run, config)` to train.
      records: Dict from run names to records, filled in.
      options: Dict of `cpus_per_run`, `env_mode`, `max_retries` and
          `sweep_dir`.
      echo: Function that prints a line.

    Raises:
      KeyboardInterrupt: On Ctrl-C, once every run stopped.
    """
    if not todo:
        return
    progress = ray.remote(num_cpus=0)(_Progress).remote()
    # A fresh worker process per run: TensorFlow's process-wide settings
    # and memory stay with the run.
    task = ray.remote(max_calls=1)(_train_run).options(
        num_cpus=options['cpus_per_run'], max_retries=options['max_retries'],
        retry_exceptions=False)
    pending = {}
    try:
        with _interruptible():
            # Within: runs submitted before an interruption stop with it.
            for run, config in todo:
                ref = task.remote(
                    config, options['env_mode'],
                    sweep_records.new_record(run), progress)
                pending[ref] = run
            _wait(ray, pending, records, progress, echo)
    except KeyboardInterrupt:
        # Every run looks for the file between its session runs, whatever
        # becomes of Ray's cancellation, which interrupts the run's thread
        # (its start-up too) but can miss it.
        _request_stop(options['sweep_dir'])
        echo(f'Interrupted; stopping {len(pending)} runs with a checkpoint '
             '(interrupt again to stop them without).')
        for ref in pending:
            ray.cancel(ref)
        try:
            with _interruptible():
                _wait(ray, pending, records, progress, echo,
                      deadline=time.monotonic() + _STOP_SECONDS)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
        for run in pending.values():
            records[run.name] = _stored_record(run)
        raise
    finally:
        _drain(ray, progress, echo)
        ray.kill(progress)


def _wait(ray, pending, records, progress, echo, deadline=None):
    """Wait for the pending runs, printing their progress meanwhile.

    Args:
      ray: The `ray` module.
      pending: Dict from task references to runs; emptied as they end.
      records: Dict from run names to records, filled in.
      progress: Handle of the `_Progress` actor.
      echo: Function that prints a line.
      deadline: None, or the `time.monotonic()` at which to stop waiting.
    """
    while pending:
        if deadline is not None and time.monotonic() > deadline:
            return
        ready, _ = ray.wait(
            list(pending), num_returns=1, timeout=_POLL_SECONDS)
        _drain(ray, progress, echo)
        for ref in ready:
            run = pending.pop(ref)
            try:
                record = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                record = _stored_record(run)
                if record['status'] == 'running':
                    record['status'] = 'interrupted'
            except ray.exceptions.RayError as error:
                # The worker or node died more often than Ray retries.
                record = _stored_record(run)
                record.update(status='failed', error=(
                    f'{type(error).__name__}: '
                    f'{batch_env_lib.first_line(error)}'))
                echo(f'[{run.name}] failed: {record["error"]}')
            records[run.name] = record


def _request_stop(sweep_dir):
    """Write the file that asks the sweep's runs to save and stop."""
    os.makedirs(sweep_dir, exist_ok=True)
    with open(os.path.join(sweep_dir, STOP_NAME), 'w', encoding='utf-8'):
        pass


class _RunStop(stopping.StopRequest):
    """What asks a run of the sweep to save and stop, in its Ray worker.

    Ray's cancellation interrupts the worker's main thread as SIGINT does:
    during training the trainer stops before its next session run (see
    `stopping.StopRequest`), before it at once. The sweep's stop file asks
    the same where that interruption is lost. Repeated cancellations only
    ask again, and a step stuck meanwhile is left to `worker_timeout`: the
    worker never exits without its record, since Ray would take that for
    a dead worker.
    """

    abandon_stuck = False

    def __init__(self, marker):
        """Watch for the stop file `marker` too."""
        super().__init__(lambda signum, again=False: '')
        self._marker = marker
        self._looked = None

    def handle(self, signum, unused_frame):
        """The signal handler; only the first signal counts."""
        if self.signum is None:
            super().handle(signum, unused_frame)

    def requested(self):
        """Whether a signal or the stop file asked to stop."""
        now = time.monotonic()
        if self.signum is None and (
                self._looked is None
                or now - self._looked >= _STOP_POLL_SECONDS):
            self._looked = now
            if os.path.exists(self._marker):
                self.signum = signal.SIGINT
        return self.signum is not None


def _drain(ray, progress, echo):
    """Print the lines that the runs reported since the last call."""
    for line in ray.get(progress.take.remote()):
        echo(line)


class _Progress:
    """Collects the progress lines of the runs for the sweep to print."""

    def __init__(self):
        self._lines = []

    def put(self, line):
        """Add a line."""
        self._lines.append(line)

    def take(self):
        """Return the lines added since the last call."""
        lines, self._lines = self._lines, []
        return lines




def _train_run(config, env_mode, record, progress):
    """Train one run in a Ray worker; resume its folder if it has one.

    Runs its own errors into its record instead of raising them, so that
    Ray retries a run only when its worker dies.

    Args:
      config: The run's configuration; the run folder's `config.yaml`
          takes its place when it exists.
      env_mode: Env mode of the run.
      record: The record of a new run (see `new_record`); the run folder's
          record takes its place when it exists.
      progress: Handle of the sweep's `_Progress` actor.

    Returns:
      The run's final record.
    """
    import tensorflow as tf
    run_dir = config.logdir
    name = record['run']
    os.makedirs(run_dir, exist_ok=True)
    record = sweep_records.read_record(run_dir) or record
    _log_to_file(os.path.join(run_dir, 'train.log'))
    resumed = _checkpoint_steps(run_dir)
    import ray
    record['attempts'].append(dict(
        pid=os.getpid(), host=socket.gethostname(),
        node=ray.get_runtime_context().get_node_id(), resumed_from=resumed))
    record.update(status='running', error=None)
    wall_clock = record['wall_clock']
    start = time.monotonic()

    def save():
        record['wall_clock'] = wall_clock + time.monotonic() - start
        config_io.write_atomic(
            os.path.join(run_dir, sweep_records.RECORD_NAME),
            json.dumps(record, indent=1) + '\n')

    def on_report(step, score):
        score = None if math.isnan(score) else float(score)
        # A retried run reports again the steps after its checkpoint.
        record['reports'] = [
            report for report in record['reports'] if report[0] < step]
        record['reports'].append([step, score])
        record['steps'] = step
        save()
        progress.put.remote(
            f'[{name}] step {step:,}: score '
            f'{sweep_records.format_score(score)}')

    save()
    if len(record['attempts']) > 1:
        progress.put.remote(
            f'[{name}] attempt {len(record["attempts"])} resumes from step '
            f'{resumed:,}.')
    try:
        if os.path.exists(os.path.join(run_dir, 'config.yaml')):
            config = config_io.load_config(run_dir)
            with config.unlocked:
                config.logdir = run_dir
        with config.unlocked:
            # `ray.cancel` raises KeyboardInterrupt in this thread; the
            # environments' Python must not run here, or the interrupt
            # lands inside a step instead of between steps.
            config.caller_thread = False
        # The default where the config leaves the seed out; training itself
        # completes the config, after checking its required keys.
        if config_spec.with_defaults(config).seed is not None:
            # Process-wide, as in train.py; each run has its own worker.
            tf.config.experimental.enable_op_determinism()
        stop = _RunStop(os.path.join(os.path.dirname(run_dir), STOP_NAME))
        with stop.install() if threading.current_thread() is (
                threading.main_thread()) else contextlib.nullcontext():
            if stop.requested():
                raise stopping.Interrupted(stop.signum)
            for _ in trainer.train(config, env_mode, on_report=on_report):
                pass
    except KeyboardInterrupt:
        # Training saved a checkpoint of its last step before it stopped.
        record['steps'] = max(record['steps'], _checkpoint_steps(run_dir))
        record['status'] = 'interrupted'
        save()
        # Waited for, as the lines below: the sweep prints its runs' lines
        # once their tasks returned, and must find this one there.
        ray.get(progress.put.remote(
            f'[{name}] stopped with a checkpoint at step '
            f'{record["steps"]:,}.'))
        return record
    except Exception as error:
        message = batch_env_lib.first_line(error)
        if not isinstance(error, (config_io.ConfigError,
                                  errors.TrainingError)):
            message = f'{type(error).__name__}: {message}'
        record.update(status='failed', error=message)
        save()
        ray.get(progress.put.remote(f'[{name}] failed: {message}'))
        return record
    record['status'] = 'finished'
    save()
    final, best = sweep_records.final_and_best(record)
    ray.get(progress.put.remote(
        f'[{name}] finished at step {record["steps"]:,} in '
        f'{record["wall_clock"]:.0f} s: final score '
        f'{sweep_records.format_score(final)}, best '
        f'{sweep_records.format_score(best)}.'))
    return record


def _checkpoint_steps(run_dir):
    """The training steps of the latest checkpoint of a run folder; 0
    without one.

    Its name holds the global step, training and evaluation steps, which
    the run's `config.yaml` (written before any checkpoint) divides.
    """
    checkpoints = checkpoints_lib.list_checkpoints(run_dir)
    if not checkpoints:
        return 0
    global_step = int(checkpoints[0].rsplit('-', 1)[1])
    return simulation.training_steps(
        config_io.load_config(run_dir), global_step)


def _log_to_file(path):
    """Send the 'agents' log lines of this worker to a file."""
    logger = logging.getLogger('agents')
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, encoding='utf-8')
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(message)s', '%Y-%m-%d %H:%M:%S'))
    logger.addHandler(handler)




def _stored_record(run):
    """The record in the run's folder, or that of a run not started."""
    return sweep_records.read_record(run.run_dir) or sweep_records.new_record(
        run)


def _import_ray():
    """Import Ray; without it, a ConfigError naming the extra."""
    try:
        return ray_batch_env.import_ray()
    except ImportError as error:
        raise config_io.ConfigError(str(error)) from error


def _init_ray(ray, address):
    """Join or start Ray quietly, unless this process did already."""
    if ray.is_initialized():
        return
    ray.init(
        address=address, include_dashboard=False, log_to_driver=False,
        logging_level='ERROR')


def _check_cpus(ray, cpus_per_run):
    """Refuse runs that need more CPUs than any node of the cluster has."""
    most = max((
        node['Resources'].get('CPU', 0) for node in ray.nodes()
        if node.get('Alive')), default=0)
    if cpus_per_run > most:
        raise config_io.ConfigError(
            f'--cpus_per_run={cpus_per_run:g} exceeds the CPUs of every '
            f'node of the Ray cluster (at most {most:g}).')


def _parse_seeds(texts):
    seeds = []
    for text in texts:
        try:
            seeds.append(int(text))
        except ValueError:
            raise config_io.ConfigError(
                f"--seeds: '{text}' is not an integer; expected e.g. "
                '--seeds=0,1,2.') from None
    return seeds


def main(argv):
    """Parse the flags and run the sweep."""
    del argv
    console.set_up_logging()
    try:
        for name in ('config', 'seed', 'env_processes'):
            if name in FLAGS and FLAGS[name].present:
                raise config_io.ConfigError(
                    f'--{name} is a flag of train.py; the sweep takes '
                    '--configs, --seeds and --env_mode.')
        if not FLAGS.logdir:
            raise config_io.ConfigError('Pass --logdir.')
        results = sweep(
            FLAGS.logdir, FLAGS.configs or (), _parse_seeds(FLAGS.seeds),
            FLAGS.set, FLAGS.timestamp, FLAGS.cpus_per_run, FLAGS.env_mode,
            FLAGS.max_retries, FLAGS.ray_address, echo=_echo)
    except config_io.ConfigError as error:
        stopping.exit_with(f'Error: {error}', 2)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, 'signum', signal.SIGINT)
        stopping.exit_with(
            f'Interrupted by {signal.Signals(signum).name}.', 128 + signum)
    failed = [row['run'] for row in results['runs']
              if row['status'] != 'finished']
    if failed:
        stopping.exit_with(
            f'Error: {len(failed)} of {len(results["runs"])} runs did not '
            f'finish: {", ".join(failed)}.', 1)


def _echo(line):
    print(line, flush=True)


def _interruptible():
    """Have SIGINT and SIGTERM raise `KeyboardInterrupt` meanwhile.

    Only the main thread can set signal handlers; elsewhere, such as in
    tests that run a sweep in a thread, nothing changes.
    """
    if threading.current_thread() is threading.main_thread():
        return stopping.StopRequest(_describe_interrupt).install()
    return contextlib.nullcontext()


def _describe_interrupt(signum, again=False):
    """The line of a second signal, which ends the sweep at once."""
    twice = ' twice: stopped at once' if again else ''
    return f'Interrupted by {signal.Signals(signum).name}{twice}.'


if __name__ == '__main__':
    # Config modules may import this module by name: they get this one,
    # instead of a second copy that would define the flags again.
    sys.modules.setdefault('agents.scripts.sweep', sys.modules[__name__])
    app.run(main)
