r"""Learning benchmark: train a configuration for a step budget over seeds.

Trains the seeds in parallel worker processes (as many at once as the
machine has cores, or --jobs), prints the evaluation curve of every seed and
one table: the final score (the mean evaluation return of the last ten
reports), the last report, the best report, the wall-clock time, the
environment steps per second (training and evaluation steps together), and
the wall-clock time and training steps until the evaluation score first
reached the target; then per config the mean, the median and the
interquartile mean (IQM) of the final scores with its 95% stratified
bootstrap confidence interval over seeds (agents/tools/seed_statistics.py).
Writes the reports of every seed, those statistics and the provenance of the
run (command line, package versions, commit, host, start time, CPU model,
cores and load) as JSON, every curve as CSV beside it
(`config,seed,step,score`, the JSON's name with .csv) and, with --plot, a
learning curve: the IQM of the evaluation return over seeds and its 95%
stratified bootstrap band, step by step, against training environment
steps, with the target. `--replot=JSON` draws that plot again from a
results JSON, training nothing.

  python benchmarks/learning.py --config=cheetah --steps=1e6 \
      --seeds=0,1,2 --target=5000 \
      --json=benchmarks/results/learning-cheetah.json \
      --plot=docs/learning-cheetah.png
  python benchmarks/learning.py --config=pendulum --steps=1e5 \
      --seeds=0,1,2,3,4,5,6,7,8,9 --population   # one population

The configuration's own `steps` is replaced by --steps (training env steps);
--set=KEY=JSON replaces other values. Seeds running side by side share the
cores, so their wall-clock times are those of a loaded machine; compare
wall-clock figures only between runs made the same way.
"""

import csv
import json
import multiprocessing
import os
import queue
import signal
import statistics
import sys
import tempfile
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# pylint: disable=wrong-import-position
from agents.training import quiet_start
# Before anything imports TensorFlow.
quiet_start.quiet_tensorflow()

from agents.training import config_spec
from agents.environments import env_modes
from agents.training import population_run
from agents.training import provenance
# Defines the flags --config, --env_mode and --env_processes.
from agents.scripts import train  # pylint: disable=unused-import
from agents.training import simulation
from agents.training import trainer
from agents.training import console
from agents.tools import seed_statistics

FLAGS = flags.FLAGS
_LAST_REPORTS = 10
flags.DEFINE_float('steps', 1e6, 'Training environment steps per seed.')
# Replaces the --seeds of agents.scripts.train, which this script imports.
flags.DEFINE_list(
    'seeds', ['0', '1', '2'], 'Seeds to train.', allow_override=True)
flags.DEFINE_float('target', -250.0, 'Evaluation score to reach.')
flags.DEFINE_integer(
    'jobs', None, 'Seeds trained at once; default: the number of cores.')
# --config, --env_mode and --env_processes come from agents.scripts.train.
flags.DEFINE_integer('curve_every', 5, 'Print every n-th report.')
# Replaces the --set of agents.scripts.train, which this script imports.
flags.DEFINE_list(
    'set', [], 'Config overrides as KEY=JSON, e.g. learning_rate=3e-4.',
    allow_override=True)
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_string('plot', None, 'Draw the learning curve to this PNG.')
flags.DEFINE_list(
    'from_progress', None, 'Train nothing: summarize, plot and write to '
    '--json the reports of progress files, e.g. of a benchmark that was cut '
    'short, or of seeds trained by separate commands (a seed found in '
    'several files keeps the reports of the last).')
flags.DEFINE_string(
    'replot', None, 'Train nothing: draw --plot again from a results JSON '
    'of --json (its config, seeds, target and reference), with the '
    'results of --compare beside.')
flags.DEFINE_list(
    'compare', None, 'LABEL=JSON of other results to draw in the plot, '
    'e.g. feed-forward=benchmarks/results/learning-pendulum_partial_ff.json.')
flags.DEFINE_string('reference', None, 'Published score to cite in the '
                    'plot and JSON, e.g. "RL Zoo 5,819 at 1M".')
flags.DEFINE_boolean(
    'population', False, 'Train the seeds as one population in this '
    'process (train.py --seeds), instead of a process per '
    'seed; a report\'s seconds are those of the whole population.')


def run_seed(config_name, steps, seed, env_mode, overrides, progress=None):
    """Train one seed and record every evaluation report.

    Args:
      config_name: Name of a function in agents/scripts/configs.py.
      steps: Training environment steps.
      seed: Seed of TensorFlow, NumPy and the environments.
      env_mode: How the environments step, as `trainer.train` takes it.
      overrides: Dict of config values to replace.
      progress: Optional path of a file that receives every report as a
          line of JSON as soon as it is made, so that a run cut short
          leaves its curve behind.

    Returns:
      Dict with the seed, the reports and the wall-clock time.
    """
    console.set_up_logging()
    config = config_spec.load_named_config(config_name)
    with config.unlocked:
        config.steps = steps
        config.seed = seed
        config.logdir = None
        config.update(overrides)
    config = config_spec.complete_config(config)
    train_steps, eval_steps = simulation.phase_steps(config)
    reports = []
    start = time.monotonic()
    for index, score in enumerate(trainer.train(config, env_mode)):
        reports.append(dict(
            train_steps=(index + 1) * train_steps,
            total_steps=(index + 1) * (train_steps + eval_steps),
            seconds=time.monotonic() - start,
            score=float(score)))
        if progress:
            with open(progress, 'a', encoding='utf-8') as file_:
                file_.write(json.dumps(dict(seed=seed, **reports[-1])) + '\n')
    return dict(seed=seed, reports=reports, seconds=time.monotonic() - start)


def run_population(config_name, steps, seeds, env_mode, overrides):
    """Train the seeds as one population (`trainer.train(seeds=...)`) in
    the env mode in a temporary run folder; the results of every seed as
    `run_seed` returns them, a report's seconds those of the population."""
    console.set_up_logging()
    config = config_spec.load_named_config(config_name)
    with tempfile.TemporaryDirectory() as logdir:
        with config.unlocked:
            config.steps = steps
            config.logdir = logdir
            config.update(overrides)
        config = config_spec.complete_config(config)
        train_steps, eval_steps = simulation.phase_steps(config)
        start, seconds = time.monotonic(), {}

        def _on_report(step, unused_score):
            seconds[step] = time.monotonic() - start

        for _ in trainer.train(config, env_mode, _on_report, seeds=seeds):
            pass
        with open(os.path.join(logdir, population_run.CURVES_NAME),
                  encoding='utf-8') as file_:
            rows = list(csv.DictReader(file_))
    total = time.monotonic() - start
    results = []
    for seed in seeds:
        reports = [dict(
            train_steps=int(row['step']),
            total_steps=int(row['step']) // train_steps * (
                train_steps + eval_steps),
            seconds=seconds[int(row['step'])], score=float(row['score']))
            for row in rows if int(row['seed']) == seed]
        results.append(dict(seed=seed, reports=reports, seconds=total))
    return results


def run_seeds(
        config_name, steps, seeds, env_mode, overrides, jobs, progress=None):
    """Train seeds in parallel processes.

    Each seed trains in a fresh process (started by spawning, as TensorFlow
    does not survive a fork), so seeds share nothing but the cores. The
    processes are not daemons, so that a seed may start environment
    worker processes of its own (`--env_mode=processes`). When the
    benchmark stops early (Ctrl-C, SIGTERM, an error, a seed that fails or
    dies), the other seed processes are terminated with it instead of
    training on unseen.

    Yields:
      The result of each seed as `run_seed` returns it, as they finish.

    Raises:
      RuntimeError: A seed failed; names the seed and the error.
    """
    if jobs <= 1:
        for seed in seeds:
            yield run_seed(
                config_name, steps, seed, env_mode, overrides, progress)
        return
    context = multiprocessing.get_context('spawn')
    answers = context.Queue()
    waiting = list(seeds)
    running = {}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                seed = waiting.pop(0)
                running[seed] = context.Process(
                    target=_seed_process, name=f'seed-{seed}', args=(
                        answers, config_name, steps, seed, env_mode,
                        overrides, progress))
                running[seed].start()
            seed, result, error = _next_answer(answers, running)
            running.pop(seed).join()
            if error:
                raise RuntimeError(f'Seed {seed} failed: {error}')
            yield result
    finally:
        for process in running.values():
            process.terminate()
        for process in running.values():
            process.join()


def _seed_process(answers, *args):
    """Body of a seed process: `run_seed(*args)`, answered on a queue."""
    seed = args[2]
    # The parent stops the seeds; Ctrl-C in a terminal reaches all of them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        answers.put((seed, run_seed(*args), None))
    except Exception as error:  # pylint: disable=broad-except
        answers.put((seed, None, f'{type(error).__name__}: {error}'))


def _next_answer(answers, running):
    """Wait for the next seed's answer; a seed that died answers too."""
    while True:
        try:
            return answers.get(timeout=1.0)
        except queue.Empty:
            pass
        for seed, process in running.items():
            if process.exitcode is not None:
                # It may have answered just before exiting.
                try:
                    return answers.get(timeout=1.0)
                except queue.Empty:
                    return seed, None, (
                        f'its process exited with code {process.exitcode}')


def _raise_interrupt(signum, unused_frame):
    """Turn SIGTERM into KeyboardInterrupt, so that cleanup runs."""
    raise KeyboardInterrupt(f'signal {signum}')


def summarize(result, target):
    """Final score, best score, speed and time to target of one seed.

    The final score is the mean of the last ten reports: a single report
    of a few episodes from random starts is a noisy measure of the policy.
    """
    reports = result['reports']
    last = reports[-1]
    reached = next(
        (report for report in reports if report['score'] >= target), None)
    return dict(
        seed=result['seed'],
        final=statistics.mean(
            report['score'] for report in reports[-_LAST_REPORTS:]),
        last=last['score'],
        best=max(report['score'] for report in reports),
        seconds=result['seconds'],
        steps_per_second=last['total_steps'] / result['seconds'],
        target_seconds=reached['seconds'] if reached else None,
        target_steps=reached['train_steps'] if reached else None)


def print_curve(result, every):
    """Print every `every`-th evaluation report of one seed."""
    print(f"\nseed {result['seed']}: train steps, eval score, seconds")
    reports = result['reports']
    for index, report in enumerate(reports):
        if index % every == 0 or index == len(reports) - 1:
            print(f"  {report['train_steps']:>9,d}  {report['score']:9.1f}  "
                  f"{report['seconds']:7.1f}")


def print_table(config_name, steps, target, rows, compared=()):
    """Print the per-seed results and the statistics over seeds.

    Args:
      config_name: Name of the trained config.
      steps: Training environment steps.
      target: Evaluation score to reach.
      rows: One dict per seed from `summarize`.
      compared: `(label, results)` pairs of --compare, whose final scores
          get a row of statistics each.
    """
    print(f'\n{config_name}, {steps:,.0f} training steps, target {target}\n')
    print(f'| seed | final (last {_LAST_REPORTS} mean) | last | best | '
          'wall-clock s | env steps/s | to target s | to target steps |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for row in rows:
        target_seconds = (
            f"{row['target_seconds']:.0f}" if row['target_seconds'] else '-')
        target_steps = (
            f"{row['target_steps']:,d}" if row['target_steps'] else '-')
        print(f"| {row['seed']} | {row['final']:.1f} | {row['last']:.1f} | "
              f"{row['best']:.1f} | {row['seconds']:.0f} | "
              f"{row['steps_per_second']:,.0f} | "
              f'{target_seconds} | {target_steps} |')
    finals = [row['final'] for row in rows]
    print(f'\nfinal: min {min(finals):.1f}, max {max(finals):.1f}; seeds '
          'reaching the target: '
          f"{sum(row['target_steps'] is not None for row in rows)}"
          f'/{len(rows)}\n')
    summaries = [(config_name, final_statistics(rows))] + [
        (label, final_statistics([
            summarize(result, target) for result in results]))
        for label, results in compared]
    print(f'final (last {_LAST_REPORTS} mean) over seeds:\n')
    for line in seed_statistics.summary_table(summaries):
        print(line)


def final_statistics(rows):
    """Mean, median and IQM with its 95% interval of the final scores.

    Args:
      rows: One dict per seed from `summarize`.

    Returns:
      Dict from `seed_statistics.seed_summary`.
    """
    return seed_statistics.seed_summary([row['final'] for row in rows])


def curve_rows(config_name, results):
    """Rows `(config, seed, step, score)` of every report of every seed.

    Args:
      config_name: Name written in the config column.
      results: One dict per seed, as `run_seed` returns it.

    Returns:
      List of tuples, the step being training environment steps.
    """
    return [
        (config_name, result['seed'], report['train_steps'], report['score'])
        for result in results for report in result['reports']]


def csv_path(json_path):
    """Path of the curves CSV beside a results JSON (`.json` -> `.csv`)."""
    root, extension = os.path.splitext(json_path)
    return (root if extension == '.json' else json_path) + '.csv'


def write_results(path, fields, rows, results, record):
    """Write the results JSON and the curves CSV beside it.

    Args:
      path: Destination of the JSON.
      fields: Dict of the benchmark's settings, written first.
      rows: One dict per seed from `summarize`.
      results: One dict per seed, as `run_seed` returns it.
      record: Provenance dict from `provenance.record`.
    """
    curves = csv_path(path)
    seed_statistics.write_curves_csv(
        curves, curve_rows(FLAGS.config, results))
    provenance.write_json(path, dict(
        fields, statistics=final_statistics(rows), curves=curves, rows=rows,
        results=results), record)


def plot_curves(groups, title, target, path, reference=None):
    """Draw the IQM of the returns over seeds and its 95% confidence band.

    Seeds are aligned report by report (every seed reports at the same
    training steps); a curve stops at its shortest seed. The IQM and its
    stratified bootstrap interval are those of each report's scores over
    seeds (`seed_statistics.curve_band`); a group of one seed is its curve,
    without a band. The title carries the reference on a line of its own,
    and the legend sits below the axes, clear of the curves.

    Args:
      groups: `(label, results)` pairs, the benchmark's own first, then
          those of `--compare`, each in its own colour; `results` as
          `run_seed` returns them.
      title: First line of the title.
      target: Evaluation score to reach, drawn as a dashed line.
      path: PNG file to write.
      reference: Published score to cite on the title's second line, or
          None.
    """
    # pylint: disable=import-outside-toplevel
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import ticker
    import matplotlib.pyplot as plt
    import numpy as np
    figure, axes = plt.subplots(figsize=(6, 3.6), dpi=100)
    for index, (label, group) in enumerate(groups):
        count = min(len(result['reports']) for result in group)
        steps = np.array([
            report['train_steps'] for report in group[0]['reports'][:count]])
        scores = np.array([
            [report['score'] for report in result['reports'][:count]]
            for result in group])
        iqm, low, high = seed_statistics.curve_band(scores)
        axes.fill_between(
            steps, low, high, alpha=0.25, linewidth=0, color=f'C{index}')
        axes.plot(steps, iqm, linewidth=1.5, color=f'C{index}',
                  label=f'{label}: {_band_label(len(group))}')
    axes.axhline(target, color='black', linestyle='--', linewidth=1,
                 label=f'target {target:,g}')
    axes.set_xlabel('training environment steps')
    axes.set_ylabel('evaluation return')
    axes.xaxis.set_major_formatter(ticker.FuncFormatter(_format_steps))
    axes.set_title(
        title + (f'\nreference: {reference}' if reference else ''),
        fontsize=10)
    axes.legend(loc='upper center', bbox_to_anchor=(0.5, -0.16), fontsize=8,
                frameon=False)
    axes.grid(alpha=0.3)
    figure.savefig(path, bbox_inches='tight')
    plt.close(figure)


def _band_label(seeds):
    """What a curve of some seeds shows, for the legend."""
    if seeds == 1:
        return '1 seed'
    return f'IQM and 95% bootstrap CI over {seeds} seeds'


def _format_steps(steps, unused_position):
    """Tick label of a step count: 0, 250k, 1M, 1.5M."""
    if abs(steps) >= 1e6:
        return f'{steps / 1e6:g}M'
    if abs(steps) >= 1e3:
        return f'{steps / 1e3:g}k'
    return f'{steps:g}'


def plot_title(config_name, seeds, steps):
    """First line of a plot's title: the config, seeds and steps."""
    return (f"{config_name}: {seeds} seed{'' if seeds == 1 else 's'}, "
            f'{steps:,.0f} training steps')


def replot(path, plot, compared=(), reference=None):
    """Draw the plot of a results JSON again, training nothing.

    Args:
      path: Results JSON written by `--json`.
      plot: PNG file to write.
      compared: `(label, results)` pairs of `--compare` to draw beside.
      reference: Published score to cite; by default the JSON's.
    """
    with open(path, encoding='utf-8') as file_:
        stored = json.load(file_)
    results = stored['results']
    steps = min(result['reports'][-1]['train_steps'] for result in results)
    plot_curves(
        [(stored['config'], results)] + list(compared),
        plot_title(stored['config'], len(results), steps), stored['target'],
        plot, reference or stored.get('reference'))


def load_compared(specs):
    """(label, results) of every `LABEL=JSON` of --compare."""
    groups = []
    for spec in specs or ():
        label, _, path = spec.partition('=')
        with open(path, encoding='utf-8') as file_:
            groups.append((label, json.load(file_)['results']))
    return groups


def load_progress(paths):
    """Results per seed, as `run_seed` returns them, from progress files.

    The seconds of a seed are those of its last report. A seed in several
    files keeps the reports of the last file that has it.
    """
    by_seed = {}
    for path in paths:
        in_file = {}
        with open(path, encoding='utf-8') as file_:
            for line in file_:
                report = json.loads(line)
                in_file.setdefault(report.pop('seed'), []).append(report)
        by_seed.update(in_file)
    return [
        dict(seed=seed, reports=reports, seconds=reports[-1]['seconds'])
        for seed, reports in sorted(by_seed.items())]


def _parse_overrides(pairs):
    """Config overrides from the comma-split `--set` flag.

    A piece without `=` continues the value before it, so that
    `--set=policy_layers=128,128,discount=0.98` sets a list and a number.
    """
    settings = []
    for pair in pairs:
        if '=' in pair or not settings:
            settings.append(pair)
        else:
            settings[-1] += ',' + pair
    overrides = {}
    for setting in settings:
        key, _, value = setting.partition('=')
        if ',' in value and not value.lstrip().startswith('['):
            value = f'[{value}]'
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError as error:
            raise app.UsageError(
                f'--set={setting}: the value is not JSON ({error}).')
    return overrides


def main(argv):
    """Run the benchmark as the flags say."""
    del argv
    console.set_up_logging()
    signal.signal(signal.SIGTERM, _raise_interrupt)
    record = provenance.record()
    compared = load_compared(FLAGS.compare)
    if FLAGS.replot:
        if not FLAGS.plot:
            raise app.UsageError('--replot needs --plot, the PNG to write.')
        replot(FLAGS.replot, FLAGS.plot, compared, FLAGS.reference)
        print(f'Wrote {FLAGS.plot}.')
        return
    if FLAGS.from_progress:
        results = load_progress(FLAGS.from_progress)
        steps = min(result['reports'][-1]['train_steps'] for result in results)
        rows = [summarize(result, FLAGS.target) for result in results]
        print_table(FLAGS.config, steps, FLAGS.target, rows, compared)
        if FLAGS.json:
            write_results(FLAGS.json, dict(
                config=FLAGS.config, steps=steps, target=FLAGS.target,
                from_progress=FLAGS.from_progress,
                reference=FLAGS.reference), rows, results, record)
        if FLAGS.plot:
            plot_curves(
                [(FLAGS.config, results)] + compared,
                plot_title(FLAGS.config, len(results), steps), FLAGS.target,
                FLAGS.plot, FLAGS.reference)
        return
    overrides = _parse_overrides(FLAGS.set)
    env_mode = env_modes.env_mode_from_flags(
        FLAGS.env_mode, FLAGS.env_processes)
    seeds = [int(seed) for seed in FLAGS.seeds]
    jobs = min(FLAGS.jobs or os.cpu_count() or 1, len(seeds))
    # Reports of all seeds as they come, beside the JSON of the results.
    progress = FLAGS.json and FLAGS.json + '.progress'
    if progress and os.path.exists(progress):
        # The reports of an earlier run would mix with this run's.
        os.remove(progress)
    try:
        _train_seeds(seeds, env_mode, overrides, jobs, progress, record,
                     compared)
    except RuntimeError as error:
        print(f'Error: {error}', file=sys.stderr)
        sys.exit(1)


def _train_seeds(seeds, env_mode, overrides, jobs, progress, record,
                 compared):
    """Train the seeds, print their curves and the tables, write the files."""
    results = []
    trained = run_population(
        FLAGS.config, FLAGS.steps, seeds, env_mode, overrides) if (
            FLAGS.population) else (
            run_seeds(FLAGS.config, FLAGS.steps, seeds, env_mode, overrides,
                      jobs, progress))
    for result in trained:
        print_curve(result, FLAGS.curve_every)
        sys.stdout.flush()
        results.append(result)
        results.sort(key=lambda result: seeds.index(result['seed']))
        rows = [summarize(result, FLAGS.target) for result in results]
        if FLAGS.json:
            # Written after every seed, so that finished seeds survive an
            # interrupted benchmark.
            write_results(FLAGS.json, dict(
                config=FLAGS.config, steps=FLAGS.steps,
                target=FLAGS.target, overrides=overrides, jobs=jobs,
                population=FLAGS.population, reference=FLAGS.reference),
                rows, results, record)
    print_table(FLAGS.config, FLAGS.steps, FLAGS.target, rows, compared)
    if FLAGS.json:
        print(f'Wrote {FLAGS.json} and {csv_path(FLAGS.json)}.')
    if FLAGS.plot:
        plot_curves(
            [(FLAGS.config, results)] + compared,
            plot_title(FLAGS.config, len(results), FLAGS.steps),
            FLAGS.target, FLAGS.plot, FLAGS.reference)
        print(f'Wrote {FLAGS.plot}.')


if __name__ == '__main__':
    app.run(main)
