"""Building blocks of the training and visualization scripts."""

import contextlib
import importlib
import io
import logging
import os
import re
import sys
import tempfile
import time

import cloudpickle
import gymnasium as gym
import numpy as np
import ruamel.yaml
import tensorflow.compat.v1 as tf

from agents import tools


_CALLABLE_TAG = '!callable'


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


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


def create_environment(config, seed=None, render_mode=None):
    """Construct the configured environment with the standard wrappers.

    Args:
      config: Configuration with `env` (gymnasium id or constructor),
          `max_length` and `normalize_ranges`.
      seed: Seed of the environment's random generators, or None.
      render_mode: Gymnasium render mode, e.g. 'rgb_array', or None.

    Raises:
      ConfigError: When the env id is unknown or a space is unsupported.

    Returns:
      Wrapped gymnasium environment.
    """
    if isinstance(config.env, str):
        check_env_id(config.env)
        kwargs = {'render_mode': render_mode} if render_mode else {}
        env = gym.make(config.env, **kwargs)
    elif render_mode:
        env = config.env(render_mode=render_mode)
    else:
        env = config.env()
    check_spaces(env)
    if config.get('max_length'):
        env = tools.wrappers.LimitDuration(env, config.max_length)
    if config.get('normalize_ranges', True):
        env = tools.wrappers.RangeNormalize(env)
    if isinstance(env.action_space, gym.spaces.Box):
        env = tools.wrappers.ClipAction(env)
    env = tools.wrappers.ConvertTo32Bit(env)
    if seed is not None:
        env.reset(seed=int(seed))
        env.action_space.seed(int(seed))
    return env


def check_env_id(env_id):
    """Raise a one-line ConfigError when gymnasium does not know an env id.

    Args:
      env_id: Gymnasium environment id such as 'Pendulum-v1'.

    Raises:
      ConfigError: Listing the registered ids when `env_id` is unknown.
    """
    if env_id not in gym.envs.registry:
        choices = ', '.join(sorted(gym.envs.registry))
        raise ConfigError(
            f"Unknown env id '{env_id}'; valid ids: {choices}.")


def check_spaces(env):
    """Raise a ConfigError for spaces the in-graph environment cannot hold.

    Args:
      env: Gymnasium environment.

    Raises:
      ConfigError: Naming the space and the supported kinds.
    """
    observ_space, action_space = env.observation_space, env.action_space
    if not isinstance(observ_space, gym.spaces.Box):
        raise ConfigError(
            f'Unsupported observation space {observ_space!r}; expected a '
            'Box.')
    if not isinstance(action_space, (gym.spaces.Box, gym.spaces.Discrete)):
        raise ConfigError(
            f'Unsupported action space {action_space!r}; expected a Box '
            'or Discrete.')


ENV_MODES = ('auto', 'inprocess', 'processes', 'slices')
# Seconds of random steps that each candidate of the 'auto' mode takes per
# round, and the rounds, which alternate between the candidates.
_AUTO_BURST_SECONDS = 0.05
_AUTO_ROUNDS = 3
# How much faster than in-process stepping a mode with worker processes must
# step to be chosen: its workers cost CPU and memory, and in training the
# graph's work competes with them for the cores, which the bursts leave out.
_WORKER_MARGIN = 1.25


def check_env_mode(env_mode):
    """Validate how to step the environments, accepting the old booleans.

    Args:
      env_mode: One of `ENV_MODES`: 'inprocess' steps every environment in
          this process; 'processes' steps each in its own worker process;
          'slices' has one worker per CPU core step a slice of the batch
          each; 'auto' measures which of 'inprocess' and 'slices' steps
          faster. True stands for 'processes' and False for 'inprocess'.

    Raises:
      ConfigError: Naming the value and the choices when it is none of them.

    Returns:
      The mode's name.
    """
    if env_mode is True:
        return 'processes'
    if env_mode is False:
        return 'inprocess'
    if not isinstance(env_mode, str) or env_mode not in ENV_MODES:
        raise ConfigError(
            f'Unknown env mode {env_mode!r}; expected one of '
            f"{', '.join(ENV_MODES)}.")
    return env_mode


def env_mode_from_flags(env_mode, env_processes):
    """The env mode of the --env_mode and --env_processes flags.

    `--env_processes` and `--noenv_processes` are shorthands for
    `--env_mode=processes` and `--env_mode=inprocess`.

    Args:
      env_mode: Value of --env_mode, or None when it was not passed.
      env_processes: Value of --env_processes, or None when it was not
          passed.

    Raises:
      ConfigError: When the mode is unknown or the flags disagree.

    Returns:
      The name of the mode; 'auto' when neither flag was passed.
    """
    if env_processes is None:
        return check_env_mode('auto' if env_mode is None else env_mode)
    implied = check_env_mode(bool(env_processes))
    if env_mode is not None and check_env_mode(env_mode) != implied:
        flag = '--env_processes' if env_processes else '--noenv_processes'
        raise ConfigError(
            f'{flag} means --env_mode={implied} and conflicts with '
            f'--env_mode={env_mode}; pass one of them.')
    return implied


def define_batch_env(
        constructor, num_agents, env_mode, seed=None, timeout=None,
        restart=False):
    """Create a batch of environments wrapped into the graph.

    The functions of this module that the constructor uses, such as
    `create_environment`, travel to worker processes by value, and workers do
    not import the main module, so that they import neither the scripts nor
    TensorFlow.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      env_mode: How to step the environments, one of `ENV_MODES` or a
          boolean; see `check_env_mode`. 'auto' builds and times the
          candidates briefly (see `choose_env_mode`), closes them, and builds
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

    Raises:
      ConfigError: When `env_mode` is unknown.

    Returns:
      `tools.InGraphBatchEnv`.
    """
    env_mode = check_env_mode(env_mode)
    if env_mode == 'auto':
        env_mode, _ = choose_env_mode(
            constructor, num_agents, timeout=timeout)
    with tf.variable_scope('environments'):
        batch_env = create_batch_env(
            constructor, num_agents, env_mode, seed, timeout, restart)
        return tools.InGraphBatchEnv(batch_env)


def create_batch_env(
        constructor, num_agents, env_mode, seed=None, timeout=None,
        restart=False):
    """Create the batch of environments of a mode, outside the graph.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      env_mode: 'inprocess', 'processes' or 'slices', or a boolean.
      seed: Base seed; environment i gets `seed + i`, or None.
      timeout: Seconds to wait for an answer of a worker process, or None.
      restart: Whether to replace environments that fail.

    Raises:
      ConfigError: When `env_mode` is unknown or 'auto'.

    Returns:
      `tools.BatchEnv`, or `tools.SlicedBatchEnv` for 'slices'.
    """
    env_mode = check_env_mode(env_mode)
    if env_mode == 'auto':
        raise ConfigError(
            "create_batch_env needs a mode other than 'auto'; see "
            'choose_env_mode.')
    seeds = [None if seed is None else seed + index
             for index in range(num_agents)]
    if env_mode == 'slices':
        with _pickle_by_value(sys.modules[__name__]):
            # pylint: disable-next=not-callable
            return tools.SlicedBatchEnv(
                [_bind(constructor, seed_) for seed_ in seeds],
                restart=restart, timeout=timeout)
    if env_mode == 'processes':
        def create(index):
            with _pickle_by_value(sys.modules[__name__]):
                return tools.wrappers.ExternalProcess(
                    _bind(constructor, seeds[index]), timeout=timeout,
                    main_module=False)
    else:
        def create(index):
            return constructor(seeds[index])
    envs = []
    try:
        for index in range(num_agents):
            envs.append(create(index))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return tools.BatchEnv(
        envs, blocking=env_mode == 'inprocess',
        restart=create if restart else None)


def choose_env_mode(
        constructor, num_agents, candidates=('inprocess', 'slices'),
        timeout=None):
    """Measure which mode steps a batch of the environments fastest.

    Each candidate batch is built, reset, and stepped with random actions
    (sampled before timing; finished environments are reset as in training)
    in short bursts that alternate between the candidates, so that load from
    elsewhere on the machine affects all alike; a candidate's rate is that of
    its best burst, and `pick_env_mode` chooses by the rates. All candidates
    are closed before this returns. With one
    environment or one CPU core, in-process stepping wins without measuring:
    a worker process can only add a round trip.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      candidates: Modes to compare, of 'inprocess', 'processes', 'slices'.
      timeout: Seconds to wait for an answer of a worker process, or None.

    Returns:
      Tuple of the fastest mode and a dict from the measured modes to their
      environment steps per second.
    """
    candidates = [check_env_mode(mode) for mode in candidates]
    if len(candidates) == 1:
        return candidates[0], {}
    from agents.tools import sliced_batch_env
    if (num_agents == 1 or sliced_batch_env.available_cpus() == 1) and (
            'inprocess' in candidates):
        return 'inprocess', {}
    rates = {mode: 0.0 for mode in candidates}
    batch_envs = {}
    try:
        for mode in candidates:
            batch_envs[mode] = create_batch_env(
                constructor, num_agents, mode, timeout=timeout)
        space = batch_envs[candidates[0]].action_space
        space.seed(0)
        actions = [np.stack([space.sample() for _ in range(num_agents)])
                   for _ in range(16)]
        for mode in candidates:
            batch_envs[mode].reset()
            batch_envs[mode].step(actions[0])
        for _ in range(_AUTO_ROUNDS):
            for mode in candidates:
                rates[mode] = max(rates[mode], _burst_rate(
                    batch_envs[mode], actions, _AUTO_BURST_SECONDS))
    finally:
        for batch_env in batch_envs.values():
            batch_env.close()
    mode = pick_env_mode(rates)
    logging.getLogger('agents').info(
        'Env mode auto: %s; using %s.', ', '.join(
            f'{name} {rate:,.0f} steps/s' for name, rate in rates.items()),
        mode)
    return mode, rates


def pick_env_mode(rates):
    """The mode to use given measured environment steps per second.

    In-process stepping wins unless a mode with worker processes steps at
    least `_WORKER_MARGIN` (1.25) times as fast; of those, the fastest wins.

    Args:
      rates: Dict from env modes to their measured steps per second.

    Returns:
      The chosen mode.
    """
    fastest = max(rates, key=rates.get)
    if 'inprocess' not in rates or fastest == 'inprocess':
        return fastest
    if rates[fastest] >= _WORKER_MARGIN * rates['inprocess']:
        return fastest
    return 'inprocess'


def _burst_rate(batch_env, actions, seconds):
    """Environment steps per second of stepping a batch for some seconds."""
    steps = 0
    start = time.perf_counter()
    while True:
        _, _, done, _ = batch_env.step(actions[steps % len(actions)])
        if done.any():
            batch_env.reset(np.flatnonzero(done))
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and steps >= 2:
            return steps * len(batch_env) / elapsed


def _bind(constructor, seed):
    """A picklable zero-argument constructor (lambdas capture by name)."""
    return lambda: constructor(seed)


@contextlib.contextmanager
def _pickle_by_value(module):
    """Have cloudpickle send the code of a module by value meanwhile.

    Args:
      module: Imported module; left alone when already registered.

    Yields:
      Nothing; the registration lasts for the `with` block.
    """
    if module.__name__ in cloudpickle.list_registry_pickle_by_value():
        yield
        return
    cloudpickle.register_pickle_by_value(module)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(module)


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


def save_config(config, logdir=None):
    """Write the configuration to `logdir/config.yaml` atomically.

    Callables (algorithm, network, optimizer, ...) are stored as their
    import paths, so loading never constructs arbitrary Python objects.

    Args:
      config: Configuration mapping.
      logdir: Directory to write to; nothing is written when None.

    Raises:
      ConfigError: When a value cannot be stored, before anything is
          written, or when the file cannot be written.

    Returns:
      The configuration.
    """
    if not logdir:
        return config
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Representer = _ConfigRepresenter
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump(_to_yaml(dict(config)), buffer)
    path = os.path.join(logdir, 'config.yaml')
    try:
        os.makedirs(logdir, exist_ok=True)
        write_atomic(path, buffer.getvalue())
    except OSError as error:
        raise ConfigError(
            f'Cannot write {path}: {error.strerror or error}.') from error
    return config


def load_config(logdir):
    """Load the configuration stored in a run folder.

    Args:
      logdir: Run folder containing config.yaml.

    Raises:
      ConfigError: When the file is missing, is not valid YAML, or names a
          callable that cannot be imported.

    Returns:
      Locked `tools.AttrDict` of the configuration.
    """
    path = os.path.join(logdir, 'config.yaml')
    if not os.path.exists(path):
        raise ConfigError(f'No config.yaml in run folder {logdir}.')
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Constructor = _ConfigConstructor
    try:
        with open(path, encoding='utf-8') as file_:
            values = yaml.load(file_)
    except ruamel.yaml.YAMLError as error:
        detail = ' '.join(str(error).split())
        raise ConfigError(f'Invalid YAML in {path}: {detail}') from error
    if not isinstance(values, dict):
        raise ConfigError(
            f'Expected a mapping in {path}, got {type(values).__name__}.')
    values = {key: _from_yaml(value) for key, value in values.items()}
    config = tools.AttrDict(values)
    config.lock()
    return config


def write_atomic(path, content):
    """Write text to a file so that readers see the old or the new content.

    Args:
      path: Destination file.
      content: Text to write.
    """
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp_path = tempfile.mkstemp(
        dir=directory, prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as file_:
            file_.write(content)
            file_.flush()
            os.fsync(file_.fileno())
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise


def import_callable(path):
    """Resolve an import path 'package.module:Qual.name' to the object.

    Args:
      path: Module path and qualified name separated by a colon.

    Raises:
      ConfigError: When the module or attribute does not exist or the
          object is not callable.

    Returns:
      The callable.
    """
    module_name, _, qualname = str(path).partition(':')
    if not module_name or not qualname:
        raise ConfigError(
            f"Callable '{path}' must look like 'package.module:name'.")
    try:
        value = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(
            f"Cannot import module '{module_name}' of callable '{path}': "
            f'{error}') from error
    for part in qualname.split('.'):
        if part.startswith('_') or not hasattr(value, part):
            raise ConfigError(
                f"Module '{module_name}' has no public callable "
                f"'{qualname}' (from '{path}').")
        value = getattr(value, part)
    if not callable(value):
        raise ConfigError(f"'{path}' is not callable.")
    return value


def callable_path(value):
    """The import path of a module-level callable, 'module:qualname'."""
    module = getattr(value, '__module__', None)
    qualname = getattr(value, '__qualname__', None)
    if not module or not qualname or '<' in qualname:
        raise ConfigError(
            f'Cannot store {value!r} in config.yaml: only module-level '
            'functions and classes have an import path.')
    return f'{module}:{qualname}'


class _CallablePath(str):
    """Marks a string as an import path to dump with the callable tag."""


def _to_yaml(value):
    if isinstance(value, dict):
        return {str(key): _to_yaml(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_to_yaml(item) for item in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if callable(value):
        return _CallablePath(callable_path(value))
    return value


def _from_yaml(value):
    if isinstance(value, dict):
        return {key: _from_yaml(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_from_yaml(item) for item in value)
    return value


class _ConfigRepresenter(ruamel.yaml.representer.SafeRepresenter):
    """Safe representer that also writes tagged callable import paths."""


class _ConfigConstructor(ruamel.yaml.constructor.SafeConstructor):
    """Safe constructor that resolves tagged callables by import path only."""


def _represent_callable(representer, value):
    return representer.represent_scalar(_CALLABLE_TAG, str(value))


def _construct_callable(constructor, node):
    return import_callable(constructor.construct_scalar(node))


_ConfigRepresenter.add_representer(_CallablePath, _represent_callable)
_ConfigConstructor.add_constructor(_CALLABLE_TAG, _construct_callable)
