r"""Train a reinforcement learning agent in the TensorFlow graph.

Command line:

  python -m agents.scripts.train --logdir=~/logdir --config=pendulum

A run folder `<logdir>/<timestamp>-<config>` receives `config.yaml`,
checkpoints, and `train/` and `eval/` TensorBoard summaries. Passing the
`--timestamp` of an existing run resumes it from its last checkpoint with its
saved configuration.
"""

import datetime
import functools
import inspect
import logging
import os
import sys

from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import configs
from agents.scripts import utility


FLAGS = flags.FLAGS
flags.DEFINE_string(
    'logdir', None, 'Base directory of the run folders; without it the run '
    'trains without writing anything.')
flags.DEFINE_string(
    'config', None, 'Name of a configuration function in '
    'agents/scripts/configs.py.')
flags.DEFINE_string(
    'timestamp', None, 'Sub directory prefix; an existing run folder is '
    'resumed from its last checkpoint.')
flags.DEFINE_boolean(
    'env_processes', True, 'Step each environment in its own process.')
flags.DEFINE_integer(
    'seed', None, 'Seed of TensorFlow, NumPy and the environments '
    '(overrides the config).')


def config_names():
    """Names of the configuration functions in `agents.scripts.configs`."""
    return sorted(
        name for name, value in inspect.getmembers(configs, inspect.isfunction)
        if value.__module__ == configs.__name__ and name != 'default'
        and not name.startswith('_'))


def load_named_config(name):
    """Build the locked configuration of a config function by name.

    Args:
      name: Name of a function in `agents.scripts.configs`.

    Raises:
      utility.ConfigError: Listing the valid names when `name` is unknown.

    Returns:
      Locked `tools.AttrDict`.
    """
    if name not in config_names():
        raise utility.ConfigError(
            f"Unknown config '{name}'; valid configs: "
            f"{', '.join(config_names())}.")
    config = tools.AttrDict(getattr(configs, name)())
    config.lock()
    return config


def _create_environment(config, seed=None):
    """Environment constructor shared by all agents of the batch."""
    return utility.create_environment(config, seed)


def _define_loop(graph, logdir, train_steps, eval_steps):
    """Alternate a training and an evaluation phase.

    Args:
      graph: AttrDict of the simulation graph's tensors.
      logdir: Run folder for summaries and checkpoints, or None.
      train_steps: Env steps of each training phase.
      eval_steps: Env steps of each evaluation phase.

    Returns:
      `tools.Loop`.
    """
    loop = tools.Loop(
        logdir, graph.step, graph.should_log, graph.do_report,
        graph.force_reset)
    loop.add_phase(
        'train', graph.done, graph.score, graph.summary, train_steps,
        report_every=None,
        log_every=max(1, train_steps // 2),
        checkpoint_every=None,
        feed={graph.is_training: True})
    loop.add_phase(
        'eval', graph.done, graph.score, graph.summary, eval_steps,
        report_every=eval_steps,
        log_every=max(1, eval_steps // 2),
        checkpoint_every=10 * eval_steps,
        feed={graph.is_training: False})
    return loop


def train(config, env_processes):
    """Train an agent as the configuration describes.

    Args:
      config: Configuration object; `config.logdir` may be None.
      env_processes: Whether to step the environments in separate processes.

    Yields:
      The mean evaluation score at every evaluation report.
    """
    config = _complete_config(config)
    graph = tf.Graph()
    with graph.as_default():
        if config.seed is not None:
            tf.set_random_seed(config.seed)
            np.random.seed(config.seed)
        batch_env = utility.define_batch_env(
            functools.partial(_create_environment, config),
            config.num_agents, env_processes, config.seed)
        try:
            simulation = utility.define_simulation_graph(
                batch_env, config.algorithm, config)
            loop = _define_loop(
                simulation, config.logdir,
                config.update_every * config.max_length,
                config.eval_episodes * config.max_length)
            saver = utility.define_saver(exclude=(r'.*_temporary.*',))
        except BaseException:
            batch_env.close()
            raise
    total_steps = int(
        config.steps / config.update_every *
        (config.update_every + config.eval_episodes))
    session_config = tf.ConfigProto(allow_soft_placement=True)
    session_config.gpu_options.allow_growth = True
    try:
        with tf.Session(graph=graph, config=session_config) as sess:
            utility.initialize_variables(sess, saver, config.logdir)
            yield from loop.run(sess, saver, total_steps)
            if config.logdir:
                saver.save(
                    sess, os.path.join(config.logdir, 'model.ckpt'),
                    sess.run(simulation.step))
    finally:
        batch_env.close()


def _complete_config(config):
    """Fill values derived from the environment into a copy of the config."""
    config = tools.AttrDict(config)
    with config.unlocked:
        config.setdefault('logdir', None)
        config.setdefault('seed', None)
        if not config.get('max_length'):
            env = utility.create_environment(config)
            config.max_length = env.spec.max_episode_steps if env.spec else None
            env.close()
            if not config.max_length:
                raise utility.ConfigError(
                    'Config max_length is not set and the environment has '
                    'no time limit; set max_length.')
    config.lock()
    return config


def _prepare_run(logdir, config_name, timestamp):
    """Decide the run folder and its configuration (resumed or new)."""
    if not logdir:
        if not config_name:
            raise utility.ConfigError('Pass --config (and usually --logdir).')
        return load_named_config(config_name), None
    logdir = os.path.expanduser(logdir)
    timestamp = timestamp or datetime.datetime.now().strftime(
        '%Y%m%dT%H%M%S')
    run_dir = None
    if os.path.isdir(logdir):
        matches = sorted(
            name for name in os.listdir(logdir)
            if name.startswith(timestamp + '-'))
        if matches and timestamp:
            run_dir = os.path.join(logdir, matches[-1])
    if run_dir and os.path.exists(os.path.join(run_dir, 'config.yaml')):
        logging.getLogger('agents').info('Resuming run %s.', run_dir)
        config = utility.load_config(run_dir)
        with config.unlocked:
            config.logdir = run_dir
        return config, run_dir
    if not config_name:
        raise utility.ConfigError(
            'Pass --config to start a new run (no run folder with timestamp '
            f"'{timestamp}' in {logdir}).")
    config = load_named_config(config_name)
    run_dir = os.path.join(logdir, f'{timestamp}-{config_name}')
    _check_writable(logdir)
    with config.unlocked:
        config.logdir = run_dir
    return config, run_dir


def _check_writable(logdir):
    """Fail early with one line when the log directory cannot be written."""
    try:
        os.makedirs(logdir, exist_ok=True)
    except OSError as error:
        raise utility.ConfigError(
            f'Cannot create --logdir {logdir}: {error.strerror}.') from error
    if not os.access(logdir, os.W_OK | os.X_OK):
        raise utility.ConfigError(f'--logdir {logdir} is not writable.')


def main(argv):
    """Parse flags, prepare the run folder, and train."""
    del argv
    utility.set_up_logging()
    try:
        config, run_dir = _prepare_run(
            FLAGS.logdir, FLAGS.config, FLAGS.timestamp)
        if FLAGS.seed is not None:
            with config.unlocked:
                config.seed = FLAGS.seed
        if isinstance(config.env, str):
            utility.check_env_id(config.env)
        if run_dir:
            utility.save_config(config, run_dir)
        for score in train(config, FLAGS.env_processes):
            logging.getLogger('agents').info('Score %s.', score)
    except utility.ConfigError as error:
        print(f'Error: {error}', file=sys.stderr)
        sys.exit(2)


if __name__ == '__main__':
    app.run(main)
