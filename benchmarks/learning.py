r"""Learning benchmark: train a configuration for a step budget over seeds.

Prints the evaluation score curve of every seed, then one table with the
final score (the mean evaluation return of the last report), the best score,
the wall-clock time, the environment steps per second (training and
evaluation steps together), and the wall-clock time and training steps until
the evaluation score first reached the target.

  python benchmarks/learning.py --config=pendulum --steps=1e6 \
      --seeds=0,1,2 --target=-250 --noenv_processes

The configuration's own `steps` is replaced by --steps (training env steps).
"""

import json
import statistics
import sys
import time

from absl import app
from absl import flags

from agents.scripts import train as train_lib
from agents.scripts import utility

FLAGS = flags.FLAGS
_LAST_REPORTS = 10
flags.DEFINE_float('steps', 1e6, 'Training environment steps per seed.')
flags.DEFINE_list('seeds', ['0', '1', '2'], 'Seeds to train.')
flags.DEFINE_float('target', -250.0, 'Evaluation score to reach.')
# --config, --env_mode and --env_processes come from agents.scripts.train.
flags.DEFINE_integer('curve_every', 5, 'Print every n-th report.')
flags.DEFINE_list(
    'set', [], 'Config overrides as KEY=JSON, e.g. learning_rate=3e-4.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')


def run_seed(config_name, steps, seed, env_mode, overrides):
    """Train one seed and record every evaluation report.

    Args:
      config_name: Name of a function in agents/scripts/configs.py.
      steps: Training environment steps.
      seed: Seed of TensorFlow, NumPy and the environments.
      env_mode: How the environments step, as `train_lib.train` takes it.
      overrides: Dict of config values to replace.

    Returns:
      Dict with the config, the reports and the wall-clock time.
    """
    config = train_lib.load_named_config(config_name)
    with config.unlocked:
        config.steps = steps
        config.seed = seed
        config.logdir = None
        config.update(overrides)
    config = train_lib._complete_config(config)  # pylint: disable=protected-access
    train_steps = config.update_every * config.max_length
    eval_steps = config.eval_episodes * config.max_length
    reports = []
    start = time.monotonic()
    for index, score in enumerate(train_lib.train(config, env_mode)):
        reports.append(dict(
            train_steps=(index + 1) * train_steps,
            total_steps=(index + 1) * (train_steps + eval_steps),
            seconds=time.monotonic() - start,
            score=score))
    return dict(seed=seed, reports=reports, seconds=time.monotonic() - start)


def summarize(result, target):
    """Final score, best score, speed and time to target of one seed.

    Besides the last report, the mean of the last ten: the evaluation
    episodes of a report begin in the same states in every run, so a single
    report can be a hard or an easy set for all runs alike.
    """
    reports = result['reports']
    final = reports[-1]
    reached = next(
        (report for report in reports if report['score'] >= target), None)
    return dict(
        seed=result['seed'],
        final=final['score'],
        last_ten=statistics.mean(
            report['score'] for report in reports[-_LAST_REPORTS:]),
        best=max(report['score'] for report in reports),
        seconds=result['seconds'],
        steps_per_second=final['total_steps'] / result['seconds'],
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


def print_table(config_name, steps, target, rows):
    """Print the per-seed results and their mean as a markdown table."""
    print(f'\n{config_name}, {steps:,.0f} training steps, target {target}\n')
    print(f'| seed | final | last {_LAST_REPORTS} mean | best | '
          'wall-clock s | env steps/s | to target s | to target steps |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for row in rows:
        target_seconds = (
            f"{row['target_seconds']:.0f}" if row['target_seconds'] else '-')
        target_steps = (
            f"{row['target_steps']:,d}" if row['target_steps'] else '-')
        print(f"| {row['seed']} | {row['final']:.1f} | "
              f"{row['last_ten']:.1f} | {row['best']:.1f} | "
              f"{row['seconds']:.0f} | {row['steps_per_second']:,.0f} | "
              f'{target_seconds} | {target_steps} |')
    finals = [row['final'] for row in rows]
    spread = statistics.pstdev(finals) if len(finals) > 1 else 0.0
    print(f'\nmean final score {statistics.mean(finals):.1f} '
          f'(std {spread:.1f}); seeds reaching the target: '
          f"{sum(row['target_steps'] is not None for row in rows)}"
          f'/{len(rows)}')


def _parse_overrides(pairs):
    overrides = {}
    for pair in pairs:
        key, _, value = pair.partition('=')
        overrides[key] = json.loads(value)
    return overrides


def main(argv):
    """Run the benchmark as the flags say."""
    del argv
    utility.set_up_logging()
    overrides = _parse_overrides(FLAGS.set)
    env_mode = utility.env_mode_from_flags(
        FLAGS.env_mode, FLAGS.env_processes)
    results = []
    for seed in FLAGS.seeds:
        result = run_seed(
            FLAGS.config, FLAGS.steps, int(seed), env_mode, overrides)
        print_curve(result, FLAGS.curve_every)
        sys.stdout.flush()
        results.append(result)
    rows = [summarize(result, FLAGS.target) for result in results]
    print_table(FLAGS.config, FLAGS.steps, FLAGS.target, rows)
    if FLAGS.json:
        with open(FLAGS.json, 'w', encoding='utf-8') as file_:
            json.dump(dict(results=results, rows=rows), file_, indent=1)


if __name__ == '__main__':
    app.run(main)
