r"""Training in the calling thread against TensorFlow's inter-op pool.

Trains a config for `--steps` with `caller_thread` true and false, each
run in a fresh process, alternating, and prints wall-clock and CPU seconds
(graph building included) and the last score, which must agree: the
setting changes where ops run, not what they compute.

    python benchmarks/caller_thread.py --tasks=pendulum:32000,cheetah:20000 \
        --json=benchmarks/results/caller_thread.json
"""

import json
import os
import statistics
import subprocess
import sys
import time

# Run as a script, so make the repository importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)

from absl import app  # pylint: disable=wrong-import-position
from absl import flags  # pylint: disable=wrong-import-position

from agents.training import provenance  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_list('tasks', ['pendulum:32000', 'cheetah:20000'],
                  'CONFIG:STEPS pairs to train.')
flags.DEFINE_integer('rounds', 2, 'Runs of each setting, alternating.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_string('child', None, 'Internal: CONFIG:STEPS:CALLER of one '
                    'run in this process.')


def _child(spec):
    """Train once in this process and print a JSON line of the result."""
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')
    from agents.scripts import train
    name, steps, caller = spec.split(':')
    config = train.load_named_config(name)
    with config.unlocked:
        config.steps = float(steps)
        config.seed = 0
        config.logdir = None
        config.caller_thread = caller == 'True'
    wall, cpu = time.perf_counter(), time.process_time()
    scores = list(train.train(config, 'inprocess'))
    print(json.dumps(dict(
        wall=time.perf_counter() - wall, cpu=time.process_time() - cpu,
        last_score=float(scores[-1]))))


def _run(task, caller):
    """One training run in a fresh process."""
    result = subprocess.run(
        [sys.executable, os.path.abspath(__file__),
         f'--child={task}:{caller}'],
        capture_output=True, text=True, check=True, cwd=_ROOT)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv):
    """Alternate the settings per task and print the table."""
    del argv
    if FLAGS.child:
        _child(FLAGS.child)
        return
    record = provenance.record()
    report = dict(tasks={})
    print('| task, steps | ops of both phases | wall s (median) | CPU s | '
          'last score | pool / caller wall |')
    print('| --- | --- | ---: | ---: | ---: | ---: |')
    for task in FLAGS.tasks:
        runs = {True: [], False: []}
        for _ in range(FLAGS.rounds):
            for caller in (False, True):
                runs[caller].append(_run(task, caller))
        medians = {
            caller: {key: statistics.median(run[key] for run in values)
                     for key in ('wall', 'cpu', 'last_score')}
            for caller, values in runs.items()}
        ratio = medians[False]['wall'] / medians[True]['wall']
        for caller, label in ((False, 'inter-op pool'),
                              (True, 'calling thread')):
            median = medians[caller]
            print(f"| {task} | {label} | {median['wall']:.1f} | "
                  f"{median['cpu']:.1f} | {median['last_score']:.1f} | "
                  f"{ratio:.2f}x |")
        report['tasks'][task] = dict(
            pool=runs[False], caller=runs[True], pool_over_caller=ratio)
        if FLAGS.json:
            provenance.write_json(FLAGS.json, report, record)


if __name__ == '__main__':
    app.run(main)
