r"""Run a grid of training runs on Ray: every config, seed and setting.

Command line, on one machine (starts a local Ray) or on a cluster
(`--ray_address`, with `--logdir` on a shared file system):

  python -m agents.scripts.sweep --logdir=~/logdir --configs=cheetah,hopper \
      --seeds=0,1,2 [--set=KEY=VALUE ...] [--ray_address=HEAD:6379]

docs/sweeps.md describes the run folders, the progress lines, the results,
and what happens on faults and Ctrl-C. Exit codes: 0 when every run
finished; 1 when a run failed; 2 when the flags or configs cannot be used,
before anything was written; 130 or 143 after SIGINT or SIGTERM.
"""

import contextlib
import datetime
import json
import os
import re
import signal
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

from agents.environments import env_modes
from agents.tools import batch_env as batch_env_lib
from agents.tools import ray_batch_env
from agents.tools import seed_statistics
from agents.training import config_io
from agents.training import console
from agents.training import run_folder
from agents.training import stopping
from agents.training import sweep_grid
from agents.training import sweep_records
from agents.training import sweep_runs

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
STOP_NAME = sweep_runs.STOP_NAME
# Seconds to wait for the runs to save their checkpoints after Ctrl-C.
_STOP_SECONDS = 600.0
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
      settings: Sequence of 'KEY=VALUE' overrides (see `sweep_grid.grid`).
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
    _check_numbers(cpus_per_run, max_retries)
    env_mode = env_modes.check_env_mode(env_mode)
    runs = sweep_grid.grid(configs, seeds, settings)
    timestamp = _check_timestamp(timestamp)
    sweep_dir = os.path.join(os.path.expanduser(logdir), timestamp)
    run_folder.check_writable(sweep_dir)
    todo, records = _plan(runs, sweep_dir, cpus_per_run, echo)
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
    results = _write_results(timestamp, sweep_dir, runs, records, echo)
    if interrupted is not None:
        if any(row['status'] != 'finished' for row in results['runs']):
            echo(
                f'Resume with the same command and --timestamp={timestamp}.')
        raise interrupted
    return results


def _check_numbers(cpus_per_run, max_retries):
    """Refuse a bad `cpus_per_run` or `max_retries`."""
    if isinstance(cpus_per_run, bool) or not (
            isinstance(cpus_per_run, (int, float)) and 0 < cpus_per_run
            < float('inf')):
        raise config_io.ConfigError(
            f'--cpus_per_run={cpus_per_run!r} must be a positive number.')
    if isinstance(max_retries, bool) or not isinstance(
            max_retries, int) or max_retries < 0:
        raise config_io.ConfigError(
            f'--max_retries={max_retries!r} must be an integer >= 0.')


def _check_timestamp(timestamp):
    """The sweep's folder name: `timestamp`, or the current time."""
    timestamp = timestamp or datetime.datetime.now().strftime(
        '%Y%m%dT%H%M%S')
    if not re.fullmatch(r'[\w.-]+', timestamp):
        raise config_io.ConfigError(
            f'--timestamp={timestamp} must be a folder name (letters, '
            'digits, _ . -).')
    return timestamp


def _plan(runs, sweep_dir, cpus_per_run, echo):
    """Build every run's config; return the `(run, config)` to train and
    the records of the runs that finished earlier."""
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
    return todo, records


def _write_results(timestamp, sweep_dir, runs, records, echo):
    """Write `results.json` and `curves.csv`, print the table; return the
    results."""
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
    return results


def _train_runs(ray, todo, records, options, echo):
    """Submit the runs, print their progress, and collect their records.

    `options` holds `cpus_per_run`, `env_mode`, `max_retries` and
    `sweep_dir`; `records` (run names to records) is filled in. Raises
    KeyboardInterrupt on Ctrl-C, once every run stopped.
    """
    if not todo:
        return
    progress = ray.remote(num_cpus=0)(sweep_runs.Progress).remote()
    # A fresh worker process per run: TensorFlow's process-wide settings
    # and memory stay with the run.
    task = ray.remote(max_calls=1)(sweep_runs.train_run).options(
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
    """Wait for the pending runs (emptied as they end) until `deadline` of
    `time.monotonic()`, printing their progress meanwhile."""
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


def _drain(ray, progress, echo):
    """Print the lines that the runs reported since the last call."""
    for line in ray.get(progress.take.remote()):
        echo(line)


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
    """The integer seeds of `--seeds`."""
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
    """Print a line at once."""
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
