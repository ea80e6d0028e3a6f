r"""Train a reinforcement learning agent in the TensorFlow graph.

  python -m agents.scripts.train --logdir=~/logdir --config=pendulum

`--env_mode` picks where the environments step; its help below lists the
modes and says what `auto`, the default, does.

A run folder `<logdir>/<timestamp>-<config>` receives `config.yaml`,
checkpoints and `train/`, `eval/` summaries; the `--timestamp` of an
existing run resumes it. `--seeds=0-15` trains a population of the config
(on its in-graph task, or one batch of every member's environments), a
member per seed, each member's evaluations in
`seed-S/` and the final scores in `results.json`; a key given several
times with `--set` (e.g. `--set=learning_rate=1e-3
--set=learning_rate=3e-4`) adds a member per value (and combination) and
seed, in `learning_rate=1e-3/seed-S/`. Exit codes: 0 finished;
1 an environment failed or a value was not finite; 2 unusable flags,
configuration or run folder, nothing written; 130 or 143 after SIGINT or
SIGTERM, saved first.
"""

import contextlib
import logging
import os
import signal
import sys

from agents.training import quiet_start
from agents.training import xla_cache

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    xla_cache.use_requested_cache()
# Also when imported, since `train` is the Python API.
quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags

from agents.training import config_io
from agents.training import config_spec
from agents.environments import env_modes
from agents.environments import graph_env
from agents.training import population_run
from agents.training import run_folder
from agents.training import stopping
from agents.training import trainer
from agents.training import console
from agents.training import errors
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports

# The library names that Python code has imported from this module.
train = trainer.train
config_names = config_spec.config_names
load_named_config = config_spec.load_named_config


FLAGS = flags.FLAGS
flags.DEFINE_string(
    'logdir', None, 'Base directory of the run folders; without it the run '
    'trains without writing anything.')
flags.DEFINE_string(
    'config', None, 'Configuration function: a name in '
    'agents/scripts/configs.py, package.module:function, or '
    'path/to/file.py:function.')
flags.DEFINE_string(
    'timestamp', None, 'Sub directory prefix (letters, digits, ".", "_", '
    '"+", "-"); an existing run folder is resumed from its last checkpoint.')
flags.DEFINE_string('env_mode', None, env_modes.flag_help())
flags.DEFINE_boolean(
    'env_processes', None, 'Shorthand for --env_mode=processes; '
    '--noenv_processes for --env_mode=inprocess.')
flags.DEFINE_multi_string(
    'set', [], 'KEY=VALUE: replace a value of the config; VALUE is YAML '
    '(or JSON), e.g. --set=learning_rate=5e-4 --set=policy_layers=[64,64]. '
    'Recorded in config.yaml; a resumed run refuses changes. With --seeds, '
    'a key given several times makes a member of each value and seed.')
flags.DEFINE_integer(
    'seed', None, 'Seed of TensorFlow, NumPy and the environments '
    '(overrides the config).')
flags.DEFINE_string(
    'seeds', None, 'Train a population, a member per seed, in one graph '
    '(its environments one batch): seeds and ranges, e.g. 0-15 or 0,3,7; '
    "each member's summaries go below seed-S (VARIANT/seed-S) in the run "
    'folder.')


def main(argv):
    """Parse flags, prepare the run folder, and train."""
    del argv
    console.set_up_logging()
    run_dir = timestamp = None

    def describe_interrupt(signum, again=False):
        message = f'Interrupted by {signal.Signals(signum).name}'
        if again:
            message += ' twice: stopped without saving'
        if run_dir and os.path.exists(os.path.join(run_dir, 'config.yaml')):
            message += (
                f'; resume with --logdir={FLAGS.logdir} '
                f'--timestamp={timestamp}')
        return message + '.'

    try:
        env_mode = env_modes.env_mode_from_flags(
            FLAGS.env_mode, FLAGS.env_processes)
        config_spec.check_seed(FLAGS.seed, '--seed')
        seeds = _population_seeds()
        settings, variants = population_run.split_settings(FLAGS.set, seeds)
        config, run_dir, timestamp = run_folder.prepare_run(
            FLAGS.logdir, FLAGS.config, FLAGS.timestamp, settings)
        # Before the trainer builds the environment, which may print.
        if seeds:
            population_run.check_population(
                config, seeds, env_mode, f'--seeds={FLAGS.seeds}', variants)
        elif env_modes.in_graph_mode(env_mode):
            graph_env.check_task(config)
        if FLAGS.seed is not None:
            with config.unlocked:
                config.seed = FLAGS.seed
        trainer.enable_determinism(config)
        # Closing the generator saves also between two scores.
        stop = stopping.StopRequest(describe_interrupt)
        with stop.install(), contextlib.closing(
                trainer.train(config, env_mode, seeds=seeds,
                              variants=variants)) as scores:
            for _ in scores:
                pass
            if stop.requested():
                # The signal came as the run ended; it finished all the
                # same, with its final checkpoint.
                stopping.exit_with(
                    'Training finished; '
                    f'{signal.Signals(stop.signum).name} arrived at its end '
                    'and waited for the final checkpoint.', 0)
    except config_io.ConfigError as error:
        stopping.exit_with(f'Error: {error}', 2)
    except errors.TrainingError as error:
        stopping.exit_with(f'Error: {error}', 1)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, 'signum', signal.SIGINT)
        # Training saved and closed everything; the interpreter's teardown
        # (about a second of TensorFlow's) would only delay the exit.
        sys.stdout.flush()
        logging.shutdown()
        stopping.exit_now(describe_interrupt(signum), 128 + signum)


def _population_seeds():
    """The seeds of `--seeds` (None without); a ConfigError where they are
    bad or come with `--seed`."""
    if FLAGS.seeds is None:
        return None
    if FLAGS.seed is not None:
        raise config_io.ConfigError(
            f'--seeds={FLAGS.seeds} and --seed={FLAGS.seed} conflict: '
            '--seeds trains a member per seed; pass one of them.')
    return config_spec.parse_seeds(FLAGS.seeds)


def parse_flags(argv):
    """Parse the command line, program name first, and return the arguments
    left; a bad flag exits with one line and code 2."""
    try:
        return FLAGS(argv)
    except flags.Error as error:
        stopping.exit_with(f'Error: {error}', 2)
        raise  # Unreachable; sys.exit raised.


if __name__ == '__main__':
    app.run(main, flags_parser=parse_flags)
