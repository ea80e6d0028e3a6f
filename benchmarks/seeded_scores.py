r"""Seeded scores of every config in every env mode at a small budget.

A check for refactors, not a speed or learning benchmark: each (config,
env mode) trains with seed 0 for a few updates on small settings and the
evaluation scores are written with full precision, so two commits can be
compared score by score (exact where the computation did not change).

  python benchmarks/seeded_scores.py --json=/tmp/before.json
  python benchmarks/seeded_scores.py --compare=/tmp/before.json,/tmp/after.json

Each run is a process of its own (`--run=CONFIG/MODE` runs one and prints
its scores as JSON), so that one failing mode does not stop the rest.
"""

import json
import os
import subprocess
import sys
import time

from absl import app
from absl import flags

flags.DEFINE_string('json', None, 'Where to write every run\'s scores.')
flags.DEFINE_string('compare', None, 'BEFORE,AFTER: compare two JSON files.')
flags.DEFINE_string('run', None, 'CONFIG/MODE: run one and print JSON.')
flags.DEFINE_list(
    'configs', ['pendulum', 'pendulum_partial', 'cartpole', 'reacher',
                'cheetah', 'hopper', 'walker', 'ant', 'humanoid'],
    'Config names.')
flags.DEFINE_list(
    'modes', ['graph', 'inprocess', 'processes', 'slices', 'envpool', 'ray'],
    'Env modes; a mode a config cannot use is recorded with its error.')
FLAGS = flags.FLAGS

# Small settings: a few updates of a few short episodes.
_OVERRIDES = dict(
    num_agents=4, update_every=4, eval_episodes=2, max_length=40,
    steps=960, eval_every=320, update_epochs=2, chunk_length=20,
    batch_size=4, policy_layers=(32, 32), value_layers=(32, 32))


def _run_one(spec):
    """Train one config in one mode and return its scores."""
    config_name, mode = spec.split('/')
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents.scripts import train
    tf.compat.v2.config.experimental.enable_op_determinism()
    config = train.load_named_config(config_name)
    with config.unlocked:
        for key, value in _OVERRIDES.items():
            config[key] = value
        config.seed = 0
        config.logdir = None
        if config.get('rollout_length'):
            config.rollout_length = 20
    return [float(score) for score in train.train(config, mode)]


def _run_all():
    """Run every config in every mode, each in a process of its own."""
    # pylint: disable-next=import-outside-toplevel
    from agents.training import provenance
    record = provenance.record()
    results = {}
    for config_name in FLAGS.configs:
        for mode in FLAGS.modes:
            spec = f'{config_name}/{mode}'
            start = time.time()
            process = subprocess.run(
                [sys.executable, __file__, f'--run={spec}'],
                capture_output=True, text=True, check=False)
            lines = process.stdout.strip().splitlines()
            if process.returncode == 0 and lines:
                results[spec] = json.loads(lines[-1])
            else:
                tail = (process.stderr.strip().splitlines() or ['?'])[-1]
                results[spec] = f'error: {tail}'
            print(f'{spec:28} {time.time() - start:5.1f}s {results[spec]}',
                  flush=True)
            if FLAGS.json:
                provenance.write_json(FLAGS.json, results, record)


def _compare(before_path, after_path):
    with open(before_path, encoding='utf-8') as file:
        before = json.load(file)
    with open(after_path, encoding='utf-8') as file:
        after = json.load(file)
    # Every key but the provenance is a config/mode of scores.
    before.pop('provenance', None)
    after.pop('provenance', None)
    specs = [spec for spec in before if spec in after]
    same = 0
    for spec in specs:
        if _normal(before[spec]) == _normal(after[spec]):
            same += 1
            continue
        print(f'{spec:28} before {before[spec]}\n{"":28} after  '
              f'{after[spec]}')
    print(f'{same} of {len(specs)} compared identical '
          f'({len(before) - len(specs)} not run after).')
    return same == len(specs)


def _normal(result):
    """Scores, or an error's message without its type's module path (the
    modules moved)."""
    if isinstance(result, str):
        return result.split(': ', 2)[-1]
    return result


def main(argv):
    """Run, or compare, the seeded scores."""
    del argv
    if FLAGS.run:
        print(json.dumps(_run_one(FLAGS.run)))
    elif FLAGS.compare:
        before_path, after_path = FLAGS.compare.split(',')
        sys.exit(0 if _compare(before_path, after_path) else 1)
    else:
        _run_all()


if __name__ == '__main__':
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
        __file__))))
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    app.run(main)
