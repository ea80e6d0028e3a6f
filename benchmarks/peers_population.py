r"""Population benchmark: many seeds of one task, each side's way.

Trains the same seeds of a task for the same step budget in four ways and
prints the wall-clock time of the whole of each (issue 37's targets):

    python benchmarks/peers_population.py --seeds=0-15 --steps=150000 \
        --jax_python=/work/venv-jax/bin/python
    python benchmarks/peers_population.py --seeds=0,1 --steps=3000 \
        --systems=ours_sequential,sb3_same,rejax_vmap   # a quick look

Sides (`--systems`):

  ours_population  one `python -m agents.scripts.train --seeds=...` process:
                   all seeds as one population in one graph; refused with
                   one line while train.py has no `--seeds` flag
  ours_sequential  peers.py's `ours`, one process per seed, one after
                   another
  sb3_same         peers.py's `sb3_same` (Stable-Baselines3 PPO doing our
                   work), one process per seed, `--parallel` processes at a
                   time (2: one per core on a 2-core machine)
  rejax_vmap       rejax PPO doing our work (peers.py's `rejax_same`), the
                   seeds vectorized in one compiled call: `jax.vmap` of
                   rejax's train function over one key per seed, as rejax's
                   README trains populations; in `--jax_python`

A side's wall-clock runs from the start of its first process to the exit of
its last: interpreter starts, imports, graph building and compilation
included, as a researcher waits for them. rejax compiles before it trains,
so its compile time is also reported apart ("of it compile s"); ours
compiles while it trains, so its share is not separable from outside. Env
steps count training and evaluation steps of all seeds (each side
evaluates `eval_episodes` greedy episodes after every `eval_every` training
steps, see peers.py). rejax evaluates between whole updates only, so with
rejax_vmap among the sides every side evaluates on rejax's period and
trains whole periods (Pendulum: every 3,200 steps, 150,400 steps, 47
evaluations), as `--ours_set=eval_every=3200` would; on our config's period
(2,000) rejax evaluated 47 times against our 75 (`--nosame_evaluations`).
The last column is the ratio of ours_population's wall-clock to the
side's, with issue 37's target.

`--env_mode` (default auto) sets the env mode of both of our sides, e.g.
`--env_mode=envpool` for a population of MuJoCo tasks in one EnvPool.

Flags shared with peers.py keep their meaning there: `--seeds` (here also
ranges, `0-15`), `--steps` (per seed), `--tasks`, `--json`,
`--jax_python`, `--compile_cache`, `--ours_set`. The JSON holds every
side's numbers, its runs, and the provenance of the machine (CPU model,
load, package versions; the JAX side's versions as its worker reports them).
"""

import concurrent.futures
import math
import os
import re
import shlex
import subprocess
import sys
import time
import types

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)

# pylint: disable=wrong-import-position
from agents.training import config_spec
from agents.training import provenance
from benchmarks import measured_process
from benchmarks import peers
from benchmarks import peers_rejax
# pylint: enable=wrong-import-position

SIDES = ('ours_population', 'ours_sequential', 'sb3_same', 'rejax_vmap')
# Issue 37: the most that ours_population's wall-clock may be of each side's.
TARGETS = dict(ours_sequential=0.5, sb3_same=0.3, rejax_vmap=0.8)
# The flag of train.py that trains a population, and the module whose
# `--helpfull` section lists it.
POPULATION_FLAG = 'seeds'
_TRAIN_MODULE = 'agents.scripts.train'
_HELP_TIMEOUT = 300

FLAGS = flags.FLAGS
flags.DEFINE_integer('parallel', 2, 'sb3_same: processes at a time.')
flags.DEFINE_boolean(
    'same_evaluations', True, 'With rejax_vmap: every side evaluates on '
    "rejax's period (the first multiple of its update at or after ours), "
    'as if given --ours_set=eval_every=PERIOD, so that all sides do the '
    'same evaluations; --nosame_evaluations keeps our config\'s period.')
flags.DEFINE_string('env_mode', None, 'ours_population and ours_sequential: '
                    'the --env_mode of our runs, e.g. envpool (default: '
                    'auto).')
# peers.py defines the other flags; their defaults here are a population's.
FLAGS.set_default('seeds', ['0-15'])
FLAGS.set_default('systems', list(SIDES))


def seeds_flag(seeds):
    """train.py's `--seeds` value of a list of seeds: a range where the
    seeds are consecutive and ascending (`0-15`), else a list (`0,3,7`)."""
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f'{seeds[0]}-{seeds[-1]}'
    return ','.join(str(seed) for seed in seeds)


def population_command(python, config, seeds, steps, overrides=()):
    """The command line of ours_population.

    Args:
        python: Interpreter.
        config: Name of our config (`TASKS[task]['config']`).
        seeds: List of integer seeds.
        steps: Training steps per seed.
        overrides: `KEY=JSON` strings for `--set` (YAML reads JSON).

    Returns:
        List of strings; without `--logdir` the run writes nothing.
    """
    return [python, '-m', _TRAIN_MODULE, f'--config={config}',
            f'--seeds={seeds_flag(seeds)}', f'--set=steps={int(steps)}'] + [
                f'--set={item}' for item in overrides]


def defines_flag(help_text, name):
    """Whether a module of ours defines `--name`, after `--helpfull`.

    absl's `--helpfull` lists the flags under the module (or the file) that
    defines them; only our modules count, so that a library's flag of the
    same name does not.

    Args:
        help_text: The output of `python -m agents.scripts.train --helpfull`.
        name: Flag name without dashes.

    Raises:
        ValueError: When the text has no section of train.py's flags (the
            script failed before printing them).

    Returns:
        Boolean.
    """
    module, found, seen_train = None, False, False
    for line in help_text.splitlines():
        if line and not line[0].isspace() and line.endswith(':'):
            module = line[:-1]
            seen_train = seen_train or _is_train_module(module)
        elif module and _is_ours(module) and re.match(
                rf'\s+--(?:\[no\])?{re.escape(name)}:', line):
            found = True
    if not seen_train:
        tail = help_text.strip().splitlines()[-1:] or ['no output']
        raise ValueError(
            f'{_TRAIN_MODULE} --helpfull listed no flags of train.py: '
            f'{tail[0]}')
    return found


def _is_train_module(module):
    """Whether a `--helpfull` section is train.py's (a module or a path)."""
    return module == _TRAIN_MODULE or module.replace(os.sep, '/').endswith(
        'agents/scripts/train.py')


def _is_ours(module):
    """Whether a `--helpfull` section is a module of this repository."""
    return module.startswith('agents.') or '/agents/' in module.replace(
        os.sep, '/')


def refusal(other_sides):
    """The one line that refuses ours_population while train.py has no
    `--seeds`; it names the command that runs the other sides."""
    rest = ','.join(other_sides) or 'ours_sequential,sb3_same,rejax_vmap'
    return (
        'Error: ours_population needs `python -m agents.scripts.train '
        '--seeds`, which this checkout\'s train.py does not define yet; '
        f'leave it out with --systems={rest}.')


def train_has_population(python=None):
    """Whether this checkout's train.py takes `--seeds`, from `--helpfull`.

    Raises:
        ValueError: When train.py does not print its flags.
    """
    # absl exits 1 after printing help, so the status says nothing.
    done = subprocess.run(
        [python or sys.executable, '-m', _TRAIN_MODULE, '--helpfull'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=measured_process.child_environment(), cwd=_ROOT,
        timeout=_HELP_TIMEOUT, check=False)
    return defines_flag(done.stdout, POPULATION_FLAG)


def shared_evaluation_period(task, seed, steps):
    """rejax's evaluation period where it differs from ours, else None.

    rejax evaluates between whole updates only, so on its own schedule it
    evaluates less often than our config (Pendulum: every 3,200 training
    steps against our 2,000); with our period set to its, both sides do
    the same evaluations.
    """
    ours = peers.make_spec('ours', task, seed, steps)['eval_every']
    theirs = peers.make_spec('rejax_same', task, seed, steps)['eval_every']
    return None if ours == theirs else theirs


def _side(name, seconds, total_steps, runs, compile_seconds=None,
          **extra):
    """One side's numbers, as the table and the JSON take them."""
    return dict(
        side=name, seconds=seconds, compile_seconds=compile_seconds,
        total_steps=total_steps,
        steps_per_second=total_steps / seconds if seconds else None,
        cpu_seconds=sum(run['cpu_seconds'] for run in runs),
        peak_rss_mib=max(run['peak_rss'] for run in runs) / 2 ** 20,
        runs=runs, **extra)


def _with_cache(spec, compile_cache):
    if compile_cache:
        spec['compile_cache'] = compile_cache
    return spec


def run_ours_population(task, seeds, steps, options):
    """ours_population: one training process for all seeds.

    Args:
        task: Gymnasium id, a key of peers.py's `TASKS`.
        seeds: List of integer seeds.
        steps: Training steps per seed, whole updates of our config.
        options: Namespace of `overrides` (`--ours_set`), `compile_cache`
            (a folder or None), `env_mode` (or None), `parallel` and
            `jax_python`; every side takes these arguments and reads the
            options it needs.

    Returns:
        Dict of the side's numbers, see `format_table`, with its runs.
    """
    command = population_command(
        sys.executable, peers.TASKS[task]['config'], seeds, steps,
        options.overrides) + (
            [f'--env_mode={options.env_mode}'] if options.env_mode else [])
    env = {}
    if options.compile_cache:
        # pylint: disable=import-outside-toplevel
        from agents.training import xla_cache
        env[xla_cache.VARIABLE] = os.path.join(options.compile_cache, 'xla')
    measured = measured_process.run_command(command, 'ours_population', env)
    measured['command'] = shlex.join(command)
    return _side('ours_population', measured['wall_seconds'],
                 len(seeds) * peers.our_total_steps(task, steps), [measured])


def run_ours_sequential(task, seeds, steps, options):
    """ours_sequential: peers.py's `ours`, one seed after another; the
    arguments and result as `run_ours_population`'s."""
    specs = [_with_cache(peers.make_spec('ours', task, seed, steps),
                         options.compile_cache) for seed in seeds]
    for spec in specs:
        spec['env_mode'] = options.env_mode or spec['env_mode']
    start = time.monotonic()
    runs = [peers.run_measured(spec) for spec in specs]
    return _side('ours_sequential', time.monotonic() - start,
                 sum(run['total_steps'] for run in runs), runs)


def run_sb3_parallel(task, seeds, steps, options):
    """sb3_same: one process per seed, `options.parallel` at a time; the
    arguments and result as `run_ours_population`'s."""
    specs = [peers.make_spec('sb3_same', task, seed, steps) for seed in seeds]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(options.parallel) as pool:
        # Each thread waits on its child process, so the GIL is free.
        runs = list(pool.map(peers.run_measured, specs))
    return _side('sb3_same', time.monotonic() - start,
                 sum(run['total_steps'] for run in runs), runs,
                 parallel=options.parallel)


def rejax_vmap_spec(task, seeds, steps):
    """The worker spec of rejax_vmap: peers.py's `rejax_same` settings
    with the list of seeds in place of one seed."""
    spec = peers.make_spec('rejax_same', task, seeds[0], steps)
    del spec['seed']
    spec.update(system='rejax_vmap', seeds=list(seeds))
    return spec


def run_rejax_vmap(task, seeds, steps, options):
    """rejax_vmap: all seeds in one vmapped, compiled call, in
    `options.jax_python`; the arguments and result as
    `run_ours_population`'s."""
    spec = _with_cache(
        rejax_vmap_spec(task, seeds, steps), options.compile_cache)
    result = peers.run_measured(spec, options.jax_python)
    return _side('rejax_vmap', result['wall_seconds'],
                 result['total_steps'], [result],
                 compile_seconds=result['compile_seconds'],
                 steps=spec['steps'])


# Each side's runner, by name.
RUNNERS = dict(
    ours_population=run_ours_population,
    ours_sequential=run_ours_sequential,
    sb3_same=run_sb3_parallel,
    rejax_vmap=run_rejax_vmap)


def _format(value, spec):
    return '-' if value is None else format(value, spec)


def format_table(task, seeds, steps, sides, command):
    """The markdown table of the sides, with the command that made it.

    Args:
        task: Gymnasium id.
        seeds: List of seeds.
        steps: Training steps per seed.
        sides: Dict of side name to the dict of its numbers (`seconds`,
            `compile_seconds`, `cpu_seconds`, `steps_per_second`), in the
            order of the rows.
        command: The command line, a string.

    Returns:
        String of lines.
    """
    population = sides.get('ours_population')
    lines = [
        f'### {task}: {len(seeds)} seeds ({seeds_flag(seeds)}) x '
        f'{steps:,.0f} training steps', '', f'    {command}', '',
        '| side | wall-clock s | of it compile s | CPU s | env steps/s, all '
        'seeds | ours_population / side, wall-clock | target |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: |']
    for name, side in sides.items():
        ratio = (population['seconds'] / side['seconds']
                 if population and side['seconds'] else None)
        target = TARGETS.get(name)
        lines.append(
            f"| {name} | {_format(side['seconds'], '.1f')} | "
            f"{_format(side.get('compile_seconds'), '.1f')} | "
            f"{_format(side.get('cpu_seconds'), '.0f')} | "
            f"{_format(side['steps_per_second'], ',.0f')} | "
            f"{_format(ratio, '.2f')} | "
            f"{'-' if target is None else f'<= {target:g}'} |")
    return '\n'.join(lines)


def check_sides(names, parallel):
    """The sides of `--systems`, checked; raises app.UsageError."""
    for name in names:
        if name not in SIDES:
            raise app.UsageError(
                f"Unknown side '{name}'; expected {', '.join(SIDES)}.")
    if len(set(names)) != len(names):
        raise app.UsageError(
            f"--systems: a side given twice in {','.join(names)}.")
    if not names:
        raise app.UsageError(
            f"--systems: no sides; expected some of {', '.join(SIDES)}.")
    if parallel < 1:
        raise app.UsageError(
            f'--parallel={parallel}; expected at least 1 process.')
    return list(names)


def main(argv):
    """Measure the sides as the flags say."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    names = check_sides(list(FLAGS.systems), FLAGS.parallel)
    try:
        seeds = config_spec.parse_seeds(','.join(FLAGS.seeds))
    except config_spec.ConfigError as error:
        raise app.UsageError(str(error)) from None
    for task in FLAGS.tasks:
        if task not in peers.TASKS:
            raise app.UsageError(
                f"Unknown task '{task}'; expected {', '.join(peers.TASKS)}.")
        if 'rejax_vmap' in names:
            try:
                peers_rejax.check_task(task)
            except ValueError as error:
                raise app.UsageError(str(error)) from None
    if 'rejax_vmap' in names:
        peers.check_jax_python(FLAGS.jax_python)
    if 'ours_population' in names and not train_has_population():
        print(refusal([name for name in names if name != 'ours_population']),
              file=sys.stderr)
        sys.exit(2)
    options = types.SimpleNamespace(
        overrides=list(FLAGS.ours_set), parallel=FLAGS.parallel,
        env_mode=FLAGS.env_mode,
        jax_python=FLAGS.jax_python,
        compile_cache=(
            os.path.abspath(os.path.expanduser(FLAGS.compile_cache))
            if FLAGS.compile_cache else None))
    record = provenance.record(packages=dict(
        provenance.PACKAGES, torch=('torch',),
        stable_baselines3=('stable-baselines3',)))
    command = shlex.join(['python', 'benchmarks/peers_population.py'] +
                         sys.argv[1:])
    everything = {}
    given = list(FLAGS.ours_set)
    for task in FLAGS.tasks:
        FLAGS.ours_set = given
        steps = FLAGS.steps or peers.TASKS[task]['steps']
        period = None
        if (FLAGS.same_evaluations and 'rejax_vmap' in names and not any(
                item.startswith('eval_every=') for item in given)):
            period = shared_evaluation_period(task, seeds[0], steps)
        if period:
            # Whole periods, so that our phases are the period exactly.
            steps = math.ceil(steps / period) * period
            FLAGS.ours_set = given + [f'eval_every={period}']
            print(f'{task}: every side evaluates every {period:,} training '
                  f"steps (rejax's period) for {steps:,} steps; "
                  '--nosame_evaluations: our config\'s.', file=sys.stderr,
                  flush=True)
        options.overrides = list(FLAGS.ours_set)
        steps = peers.make_spec('ours', task, seeds[0], steps)['steps']
        sides = {}
        for name in names:
            side = sides[name] = RUNNERS[name](task, seeds, steps, options)
            print(f"{task} {name}: {side['seconds']:.1f} s, "
                  f"{side['steps_per_second']:,.0f} env steps/s",
                  file=sys.stderr, flush=True)
        print(format_table(task, seeds, steps, sides, command), flush=True)
        everything[task] = dict(seeds=seeds, steps=steps, sides=sides,
                                ours_set=list(FLAGS.ours_set))
    if FLAGS.json:
        provenance.write_json(FLAGS.json, everything, record)


if __name__ == '__main__':
    app.run(main)
