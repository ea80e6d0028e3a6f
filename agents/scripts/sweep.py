r"""Run a grid of training runs on Ray, every config, seed and setting
(see docs/sweeps.md), on one machine or a cluster (`--ray_address`):

  python -m agents.scripts.sweep --logdir=~/logdir --configs=cheetah,hopper \
      --seeds=0,1,2 [--set=KEY=VALUE ...] [--ray_address=HEAD:6379]

Runs that differ only in seeds and keys that keep the graph's shapes (e.g.
learning_rate) train as one population (train.py --seeds) unless --nopack.

Exit codes: 0 when every run finished; 1 when a run failed; 2 when the flags
or configs cannot be used, before anything was written; 130 or 143 after
SIGINT or SIGTERM.
"""

import datetime
import functools
import json
import os
import re
import signal
import sys

from agents.training import quiet_start
from agents.training import xla_cache

if __name__ == '__main__':
    # Before anything imports TensorFlow; the Ray workers inherit the flag.
    xla_cache.use_requested_cache()
# Also when imported, since `sweep` is the Python API.
quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags

from agents.environments import env_modes
from agents.tools import atomic_file
from agents.tools import ray_batch_env
from agents.tools import seed_statistics
from agents.training import config_io
from agents.training import config_spec
from agents.training import console
from agents.training import member_checkpoint
from agents.training import population
from agents.training import population_run
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
# No default here: train.py shares the flag, where none means a single run.
flags.DEFINE_string(
    'seeds', None, 'Seeds and ranges of seeds, e.g. 0,1,2 or 0-9 (default: '
    '0).', allow_override=True)
flags.DEFINE_multi_string(
    'set', [], 'KEY=VALUE override of a config value in every run, as for '
    'train.py; a key given several times makes one setting per value.',
    allow_override=True)
flags.DEFINE_string(
    'ray_address', None, 'Address of a Ray cluster to join (or set '
    'RAY_ADDRESS); without it the sweep starts a local Ray.')
flags.DEFINE_float('cpus_per_run', 1, 'CPUs Ray reserves for each run.')
# Its default is None, as train.py's (which a process that imports both
# keeps reading): inprocess, which keeps a run within its CPUs.
flags.DEFINE_string(
    'env_mode', None, 'How each run steps its environments, as for '
    'train.py; by default inprocess, which keeps a run within its CPUs.',
    allow_override=True)
flags.DEFINE_string(
    'timestamp', None, 'Folder name of the sweep; that of an earlier sweep '
    'resumes its unfinished runs and skips the finished ones.',
    allow_override=True)
flags.DEFINE_boolean(
    'pack', True, 'Train the runs of a config that differ only in seeds and '
    'keys that keep the graph\'s shapes (e.g. learning_rate) as one '
    'population, as train.py --seeds; --nopack: a process per run.')
flags.DEFINE_integer(
    'max_retries', 3, 'How often Ray retries a run whose worker or node '
    'died.')

RESULTS_NAME = 'results.json'
# Every evaluation report of every run: config, seed, step, score.
CURVES_NAME = 'curves.csv'


def sweep(
        logdir, configs, seeds=(0,), settings=(), timestamp=None,
        cpus_per_run=1, env_mode='inprocess', max_retries=3,
        ray_address=None, echo=print, pack=True):
    """Train every run of the grid on Ray; return the results, as written
    to `results.json`. The arguments are those of the flags (`settings` for
    `--set`), with `echo` printing a line. A ConfigError where a flag or
    config cannot be used, before anything is written; KeyboardInterrupt
    once every run stopped and the results are written."""
    try:
        ray = ray_batch_env.import_ray()
    except ImportError as error:
        raise config_io.ConfigError(str(error)) from error
    _check_numbers(cpus_per_run, max_retries)
    env_mode = env_modes.check_env_mode(env_mode)
    runs = sweep_grid.grid(configs, seeds, settings)
    timestamp = timestamp or datetime.datetime.now().strftime('%Y%m%dT%H%M%S')
    if not re.fullmatch(r'[\w.-]+', timestamp):
        raise config_io.ConfigError(
            f'--timestamp={timestamp} must be a folder name (letters, '
            'digits, _ . -).')
    sweep_dir = os.path.join(os.path.expanduser(logdir), timestamp)
    run_folder.check_writable(sweep_dir)
    todo, records = _plan(
        runs, sweep_dir, dict(cpus_per_run=cpus_per_run, env_mode=env_mode,
                              pack=pack), echo)
    sweep_runs.join_ray(ray, ray_address, cpus_per_run)
    if todo:
        echo(f'Sweep {sweep_dir}: {len(runs) - len(records)} runs to train '
             f'({len(records)} finished earlier) in {len(todo)} '
             f'program{"s" * (len(todo) > 1)}, {cpus_per_run:g} CPUs each.')
    try:
        sweep_runs.train_runs(ray, todo, records, dict(
            cpus_per_run=cpus_per_run, env_mode=env_mode,
            max_retries=max_retries, sweep_dir=sweep_dir), echo)
    except KeyboardInterrupt:
        results = _write_results(timestamp, sweep_dir, runs, records, echo)
        if any(row['status'] != 'finished' for row in results['runs']):
            echo(f'Resume with the same command and --timestamp={timestamp}.')
        raise
    return _write_results(timestamp, sweep_dir, runs, records, echo)


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


def _plan(runs, sweep_dir, options, echo):
    """The `(pack, config)` to train, and the records of finished runs;
    `options`: dict of `cpus_per_run`, `env_mode` and `pack`."""
    # Every config builds first: a bad one stops the sweep before it writes.
    alone = {run.name: sweep_grid.build_config(
        run, os.path.join(sweep_dir, run.name), options['cpus_per_run'])
             for run in runs}
    todo, records = [], {}
    for pack, config in _packs(runs, sweep_dir, options, echo):
        found = [sweep_records.read_record(run.run_dir) for run in pack.runs]
        if all(record and record['status'] == 'finished'
               for record in found):
            for run, record in zip(pack.runs, found):
                echo(f'[{run.name}] finished earlier; skipped.')
                records[run.name] = record
        else:
            todo.append((pack, config or alone[pack.name]))
    return todo, records


def _packs(runs, sweep_dir, options, echo):
    """`sweep_grid.Pack`s of the runs, their `run_dir` set, each with its
    population's config or None: populations where `options['pack']` (or
    the sweep resumed) packs them, no run has a folder of its own from an
    earlier sweep and `population_run.check_population` passes; else a
    pack per run."""
    packs = []
    for pack in sweep_grid.packs(runs, (
            population.GRAPH_KEYS + population.INITIAL_KEYS)):
        folder = os.path.join(sweep_dir, pack.name)
        if len(pack.runs) > 1 and (options['pack'] or os.path.exists(
                folder)) and not any(os.path.exists(os.path.join(
                    sweep_dir, run.name)) for run in pack.runs):
            config = sweep_grid.build_config(
                pack, folder, options['cpus_per_run'])
            try:
                population_run.check_population(
                    config, pack.seeds, options['env_mode'], '--seeds',
                    pack.variants)
            except config_io.ConfigError as error:
                echo(f'[{pack.name}] trains its {len(pack.runs)} runs one '
                     f'per process: {error}')
            else:
                for run, member in zip(pack.runs, pack.members):
                    run.run_dir = os.path.join(
                        folder, member_checkpoint.member_name(*member))
                packs.append((pack, config))
                continue
        for run in pack.runs:
            run.run_dir = os.path.join(sweep_dir, run.name)
            packs.append((sweep_grid.Pack(run.name, [run]), None))
    return packs


def _write_results(timestamp, sweep_dir, runs, records, echo):
    """Write and print the results; return them."""
    results = sweep_records.summarize(timestamp, sweep_dir, runs, records)
    os.makedirs(sweep_dir, exist_ok=True)
    results['curves'] = os.path.join(sweep_dir, CURVES_NAME)
    seed_statistics.write_curves_csv(
        results['curves'], sweep_records.curve_rows(runs, records))
    atomic_file.write_atomic(
        os.path.join(sweep_dir, RESULTS_NAME),
        json.dumps(results, indent=2) + '\n')
    for line in sweep_records.format_table(results):
        echo(line)
    echo(f'Results in {os.path.join(sweep_dir, RESULTS_NAME)}.')
    return results


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
            FLAGS.logdir, FLAGS.configs or (),
            config_spec.parse_seeds(
                '0' if FLAGS.seeds is None else FLAGS.seeds),
            FLAGS.set, FLAGS.timestamp, FLAGS.cpus_per_run,
            FLAGS.env_mode or 'inprocess',
            FLAGS.max_retries, FLAGS.ray_address,
            echo=functools.partial(print, flush=True), pack=FLAGS.pack)
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


if __name__ == '__main__':
    # Config modules may import this module by name: they get this one,
    # instead of a second copy that would define the flags again.
    sys.modules.setdefault('agents.scripts.sweep', sys.modules[__name__])
    app.run(main)
