"""Building blocks of the training and visualization scripts.

The in-graph batch of environments, the simulation graph, the saver and
checkpoints live here. How the environments are built and stepped (the env
modes) lives in `env_modes`, the configuration file in `config_io`; their
names used by the scripts are re-exported here.
"""

import logging
import os
import re

import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import env_modes
from agents.scripts.config_io import ConfigError
from agents.scripts.config_io import callable_path
from agents.scripts.config_io import import_callable
from agents.scripts.config_io import load_config
from agents.scripts.config_io import save_config
from agents.scripts.config_io import write_atomic
from agents.scripts.env_modes import check_env_id
from agents.scripts.env_modes import check_env_mode
from agents.scripts.env_modes import check_spaces
from agents.scripts.env_modes import choose_env_mode
from agents.scripts.env_modes import create_batch_env
from agents.scripts.env_modes import create_environment
from agents.scripts.env_modes import env_mode_from_flags
from agents.scripts.env_modes import pick_env_mode

__all__ = [
    'ConfigError', 'TrainingError', 'set_up_logging', 'define_batch_env',
    'define_simulation_graph', 'define_saver', 'initialize_variables',
    'list_checkpoints', 'save_config', 'load_config', 'write_atomic',
    'import_callable', 'callable_path', 'check_env_id',
    'check_env_mode', 'check_spaces', 'choose_env_mode', 'create_batch_env',
    'create_environment', 'env_mode_from_flags', 'pick_env_mode',
]


class TrainingError(RuntimeError):
    """Training stopped: an environment failed or a value was not finite."""


def set_up_logging(level=logging.INFO):
    """Print the framework's progress lines and quiet TensorFlow's C++ logs.

    Args:
      level: Logging level of the 'agents' logger.
    """
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    logger = logging.getLogger('agents')
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        logger.addHandler(handler)
        logger.propagate = False
    tf.logging.set_verbosity(tf.logging.ERROR)


def define_batch_env(
        constructor, num_agents, env_mode, seed=None, timeout=None,
        restart=False, wrap=None):
    """Create a batch of environments wrapped into the graph.

    Worker processes receive the constructor with cloudpickle and do not
    import the main module; `env_modes.create_environment` reaches them by
    reference without importing TensorFlow.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      env_mode: How to step the environments: a name of
          `env_modes.mode_names()` or a boolean (see
          `env_modes.check_env_mode`). 'auto' builds and times the candidates
          briefly (see `env_modes.choose_env_mode`), closes them, and builds
          the fastest anew, so that seeded runs match those of the chosen
          mode.
      seed: Base seed; environment i gets `seed + i`. None leaves them
          unseeded.
      timeout: Seconds to wait for an answer of a worker process before it
          counts as failed; None uses the default of `ExternalProcess`.
      restart: Whether to replace an environment that fails by a new one
          from the same constructor and seed, instead of failing the step. In
          the 'slices' mode, this replaces the whole worker of the slice and
          restarts all of its environments.
      wrap: None, or a function applied to the batch before it enters the
          graph, such as `env_modes.batch_wrapper(config)`.

    Raises:
      ConfigError: When `env_mode` is unknown.

    Returns:
      `tools.InGraphBatchEnv`.
    """
    env_mode = env_modes.check_env_mode(env_mode)
    if env_mode == 'auto':
        env_mode, _ = env_modes.choose_env_mode(
            constructor, num_agents, timeout=timeout)
    with tf.variable_scope('environments'):
        batch_env = env_modes.create_batch_env(
            constructor, num_agents, env_mode, seed, timeout, restart)
        if wrap is not None:
            try:
                batch_env = wrap(batch_env)
            except BaseException:
                batch_env.close()
                raise
        return tools.InGraphBatchEnv(batch_env)


def define_simulation_graph(batch_env, algo_cls, config):
    """Define the algorithm and the simulation operation.

    Args:
      batch_env: In-graph batch environment.
      algo_cls: Constructor of the algorithm.
      config: Configuration object for the algorithm.

    Returns:
      AttrDict of the graph's interface: step; the bool variables
      is_training, should_log, do_report, force_reset; algo, done, score,
      summary.
    """
    step = tf.train.get_or_create_global_step()
    # Variables rather than placeholders: `tools.Loop` sets them inside the
    # graph, which spares every session run its feeds.
    with tf.variable_scope('simulation_temporary'):
        is_training, should_log, do_report, force_reset = [
            tf.Variable(False, trainable=False, name=name)
            for name in ('is_training', 'should_log', 'do_report',
                         'force_reset')]
    algo = algo_cls(batch_env, step, is_training, should_log, config)
    # Pylint takes these exports for their same-named modules.
    done, score, summary = tools.simulate(  # pylint: disable=not-callable
        batch_env, algo, should_log, force_reset)
    num_weights = tools.count_weights()  # pylint: disable=not-callable
    logging.getLogger('agents').info(
        'Graph contains %d trainable variables.', num_weights)
    return tools.AttrDict(
        step=step, is_training=is_training, should_log=should_log,
        do_report=do_report, force_reset=force_reset, algo=algo,
        batch_env=batch_env, done=done, score=score, summary=summary)


def define_saver(exclude=None, **kwargs):
    """Create a saver for the variables not matching any exclude pattern.

    Args:
      exclude: Regexes over variable names to leave out, e.g. temporary
          episode state.
      **kwargs: Passed on to `tf.train.Saver`.

    Returns:
      `tf.train.Saver`.
    """
    variables = []
    exclude = exclude or ()
    for variable in tf.global_variables():
        if any(re.match(pattern, variable.name) for pattern in exclude):
            continue
        variables.append(variable)
    kwargs.setdefault('max_to_keep', 5)
    return tf.train.Saver(variables, **kwargs)


def initialize_variables(
        sess, saver, logdir=None, checkpoint=None, resume=None):
    """Initialize or restore the variables of a session.

    The latest checkpoint of `logdir` is restored; a truncated or corrupt one
    falls back to the previous checkpoint with a warning.

    Args:
      sess: Session to initialize variables in.
      saver: Saver to restore variables.
      logdir: Directory to search for checkpoints.
      checkpoint: Specify a checkpoint (path or name in logdir) to restore.
      resume: Whether to expect checkpoints to restore from; None accepts
          either.

    Raises:
      ValueError: When resume is requested without checkpoints, or
          checkpoints exist when starting a new run, or none is readable.

    Returns:
      Path of the restored checkpoint, or None.
    """
    sess.run(tf.group(
        tf.local_variables_initializer(), tf.global_variables_initializer()))
    if resume and not (logdir or checkpoint):
        raise ValueError('Need a logdir or checkpoint to resume from.')
    candidates = []
    if checkpoint:
        if logdir and not os.path.isabs(checkpoint):
            checkpoint = os.path.join(logdir, checkpoint)
        candidates = [checkpoint]
    elif logdir:
        candidates = list_checkpoints(logdir)
    if candidates and resume is False:
        raise ValueError(
            f'Found checkpoint {candidates[0]} when starting a new run in '
            f'{logdir}.')
    if not candidates:
        if resume:
            raise ValueError(f'No checkpoint found to resume in {logdir}.')
        return None
    errors = []
    for path in candidates:
        try:
            saver.restore(sess, path)
        except (tf.errors.OpError, ValueError) as error:
            message = str(error).strip().splitlines()[0]
            errors.append(f'{path}: {message}')
            logging.getLogger('agents').warning(
                'Cannot restore checkpoint %s (%s); trying the previous one.',
                path, message)
            continue
        return path
    raise ValueError('No readable checkpoint: ' + '; '.join(errors))


def list_checkpoints(logdir):
    """Checkpoint paths of a directory, newest first.

    Args:
      logdir: Directory holding checkpoints and their 'checkpoint' index.

    Returns:
      List of checkpoint prefixes whose index file exists.
    """
    prefixes = []
    state = tf.train.get_checkpoint_state(logdir)
    if state:
        prefixes = list(state.all_model_checkpoint_paths)[::-1]
        if state.model_checkpoint_path not in prefixes:
            prefixes.insert(0, state.model_checkpoint_path)
    pattern = re.compile(r'^(model\.ckpt-(\d+))\.index$')
    found = []
    for name in os.listdir(logdir) if os.path.isdir(logdir) else ():
        match = pattern.match(name)
        if match:
            found.append((int(match.group(2)), match.group(1)))
    for _, name in sorted(found, reverse=True):
        path = os.path.join(logdir, name)
        if path not in prefixes:
            prefixes.append(path)
    prefixes = [
        path if os.path.isabs(path) else os.path.join(logdir, path)
        for path in prefixes]
    return [path for path in prefixes if os.path.exists(path + '.index')]
