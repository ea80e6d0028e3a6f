"""Building the environments of a run, and how their batch steps: env modes.

An env mode is one entry of `MODES`: its name, the function that builds the
batch of environments from their constructors, and the check of what it
needs. The mode 'auto' builds the candidates of `AUTO_CANDIDATES` briefly,
times them, and keeps the fastest (see `choose_env_mode`). Adding a mode is
one entry and its builder:

    def _build_mine(constructors, timeout, restart):
        ...  # Return a batch env: step, reset, close, spaces, len.

    MODES['mine'] = EnvMode(_build_mine, 'one line for the --env_mode help')

This module does not import TensorFlow: worker processes import it when they
unpickle the constructors of their environments.
"""

import collections
import functools
import logging
import time

import gymnasium as gym
import numpy as np

from agents import tools
from agents.scripts.config_io import ConfigError


class EnvMode(collections.namedtuple(
        'EnvMode', 'build, description, check')):
    """How a batch of environments steps.

    Attributes:
      build: Function `(constructors, timeout, restart) -> batch env` taking
          one constructor without arguments per environment, the seconds to
          wait for a worker (or None for the default), and whether to replace
          failed environments; returns a `tools.BatchEnv` or an object with
          its interface.
      description: One line for the help of the --env_mode flags.
      check: None, or a function `() -> None` that raises a `ConfigError`
          saying what to install when the mode cannot run here.
    """

    def __new__(cls, build, description, check=None):
        return super().__new__(cls, build, description, check)


def _build_inprocess(constructors, timeout, restart):
    """All environments in this process, stepped one after the other."""
    del timeout

    def create(index):
        return constructors[index]()
    return _batch_of(create, len(constructors), True, restart)


def _build_processes(constructors, timeout, restart):
    """One worker process per environment, stepped in parallel."""

    def create(index):
        return tools.wrappers.ExternalProcess(
            constructors[index], timeout=timeout, main_module=False)
    return _batch_of(create, len(constructors), False, restart)


def _build_slices(constructors, timeout, restart):
    """One worker per CPU core, each stepping a slice of the batch."""
    # pylint: disable-next=not-callable
    return tools.SlicedBatchEnv(constructors, restart=restart, timeout=timeout)


def _build_ray(constructors, timeout, restart):
    """Ray actors, one per free CPU of the cluster, a slice each."""
    from agents.tools import ray_batch_env
    return ray_batch_env.RayBatchEnv(
        constructors, restart=restart, timeout=timeout)


def _check_ray():
    """Raise a ConfigError naming the extra when Ray is not installed."""
    from agents.tools import ray_batch_env
    try:
        ray_batch_env.import_ray()
    except ImportError as error:
        raise ConfigError(f'--env_mode=ray: {error}') from None


def _build_envpool(constructors, timeout, restart):
    """EnvPool's C++ thread pool, from the configured gymnasium id."""
    del timeout, restart  # EnvPool's environments neither hang nor restart.
    task, seed = _envpool_task(constructors[0])
    if task is None:
        raise ConfigError(
            '--env_mode=envpool builds the environments from the gymnasium '
            'id of the config, whose standard wrappers the batch applies; '
            'expected the constructors of environment_constructor(config, '
            'batch_wrappers=True) with a config that names its env by id.')
    try:
        # pylint: disable-next=not-callable
        return tools.EnvPoolBatchEnv(task, len(constructors), seed)
    except ValueError as error:
        raise ConfigError(f'--env_mode=envpool: {error}') from None


def _check_envpool():
    """Raise a ConfigError naming the extra when EnvPool is not installed."""
    from agents.tools import envpool_batch_env
    try:
        envpool_batch_env.import_envpool()
    except ImportError as error:
        raise ConfigError(f'--env_mode=envpool: {error}') from None


def _envpool_task(constructor):
    """The gymnasium id and seed that EnvPool can build, or (None, None).

    Args:
      constructor: `EnvironmentConstructor` with batch wrappers, maybe bound
          to a seed by `functools.partial`.

    Returns:
      Tuple of the id and the seed (or None).
    """
    seed = None
    if isinstance(constructor, functools.partial) and len(
            constructor.args) == 1 and not constructor.keywords:
        constructor, seed = constructor.func, constructor.args[0]
    if not isinstance(constructor, EnvironmentConstructor) or (
            not constructor.batch_wrappers or
            not isinstance(constructor.config.env, str)):
        return None, None
    return constructor.config.env, seed


MODES = {
    'inprocess': EnvMode(
        _build_inprocess, 'every environment in this process'),
    'processes': EnvMode(
        _build_processes, 'one worker process per environment'),
    'slices': EnvMode(
        _build_slices, 'one worker per CPU core, stepping a slice of the '
        'batch each'),
    'ray': EnvMode(
        _build_ray, 'Ray actors on the nodes of a Ray cluster (RAY_ADDRESS, '
        'else a local one), one per free CPU, stepping a slice each',
        _check_ray),
    'envpool': EnvMode(
        _build_envpool, "EnvPool's C++ thread pool, for the gymnasium ids "
        'it has (extra envpool; Linux, Python >= 3.11)', _check_envpool),
}
# The modes that 'auto' times against each other; 'envpool' joins them
# where EnvPool is installed and has the task.
AUTO_CANDIDATES = ('inprocess', 'slices')
# Modes with worker processes, which 'auto' uses only with several cores.
_WORKER_MODES = ('processes', 'slices', 'ray')

# Seconds of random steps that each candidate of the 'auto' mode takes per
# round, and the rounds, which alternate between the candidates.
_AUTO_BURST_SECONDS = 0.05
_AUTO_ROUNDS = 3
# How much faster than in-process stepping a mode with worker processes must
# step to be chosen: its workers cost CPU and memory, and in training the
# graph's work competes with them for the cores, which the bursts leave out.
# EnvPool's threads step only while the graph waits for them, so it needs
# no margin.
_WORKER_MARGIN = 1.25


def mode_names():
    """Names of the env modes: 'auto' and those of `MODES`."""
    return ('auto',) + tuple(MODES)


def flag_help():
    """Help text of an --env_mode flag, listing every mode."""
    modes = '; '.join(
        f'{name}: {mode.description}' for name, mode in MODES.items())
    return (
        'How to step the environments: auto (the default) times '
        f"{' and '.join(AUTO_CANDIDATES)} (and envpool, where installed "
        'and it has the task) briefly and keeps the fastest; '
        f'{modes}.')


def check_env_mode(env_mode):
    """Validate how to step the environments, accepting the old booleans.

    Args:
      env_mode: One of `mode_names()` (see `MODES`); 'auto' measures which of
          `AUTO_CANDIDATES` steps faster. True stands for 'processes' and
          False for 'inprocess'.

    Raises:
      ConfigError: Naming the value and the choices when it is none of them,
          or saying what to install when the mode cannot run here.

    Returns:
      The mode's name.
    """
    if env_mode is True:
        return 'processes'
    if env_mode is False:
        return 'inprocess'
    if not isinstance(env_mode, str) or env_mode not in mode_names():
        raise ConfigError(
            f'Unknown env mode {env_mode!r}; expected one of '
            f"{', '.join(mode_names())}.")
    if env_mode != 'auto' and MODES[env_mode].check:
        MODES[env_mode].check()
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


def create_batch_env(
        constructor, num_agents, env_mode, seed=None, timeout=None,
        restart=False):
    """Create the batch of environments of a mode, outside the graph.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      env_mode: A name of `MODES`, or a boolean (see `check_env_mode`).
      seed: Base seed; environment i gets `seed + i`, or None.
      timeout: Seconds to wait for an answer of a worker process, or None.
      restart: Whether to replace environments that fail.

    Raises:
      ConfigError: When `env_mode` is unknown or 'auto'.

    Returns:
      The batch env the mode builds: `tools.BatchEnv`, or
      `tools.SlicedBatchEnv` for 'slices'.
    """
    env_mode = check_env_mode(env_mode)
    if env_mode == 'auto':
        raise ConfigError(
            "create_batch_env needs a mode other than 'auto'; see "
            'choose_env_mode.')
    constructors = [
        functools.partial(constructor, None if seed is None else seed + index)
        for index in range(num_agents)]
    return MODES[env_mode].build(constructors, timeout, restart)


def _batch_of(create, num_agents, blocking, restart):
    """A `tools.BatchEnv` of `create(index)` for every index.

    Environments created before one fails are closed again.
    """
    envs = []
    try:
        for index in range(num_agents):
            envs.append(create(index))
    except BaseException:
        for env in envs:
            env.close()
        raise
    return tools.BatchEnv(
        envs, blocking=blocking, restart=create if restart else None)


def choose_env_mode(
        constructor, num_agents, candidates=AUTO_CANDIDATES, timeout=None):
    """Measure which mode steps a batch of the environments fastest.

    Each candidate batch is built, reset, and stepped with random actions
    (sampled before timing; finished environments are reset as in training)
    in short bursts that alternate between the candidates, so that load from
    elsewhere on the machine affects all alike; a candidate's rate is that of
    its best burst, and `pick_env_mode` chooses by the rates. All candidates
    are closed before this returns. With one
    environment or one CPU core, in-process stepping wins over worker
    processes without measuring: a worker process can only add a round trip.
    (Training builds the candidates while it builds its graph instead, see
    `auto_batch_env.AutoBatchEnv`.)

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      candidates: Names of `MODES` to compare; by default those of
          `auto_candidates(constructor)`.
      timeout: Seconds to wait for an answer of a worker process, or None.

    Returns:
      Tuple of the fastest mode and a dict from the measured modes to their
      environment steps per second.
    """
    candidates = usable_candidates(constructor, num_agents, candidates)
    if len(candidates) == 1:
        return candidates[0], {}
    batch_envs = {}
    try:
        for mode in candidates:
            batch_envs[mode] = create_batch_env(
                constructor, num_agents, mode, timeout=timeout)
        return time_candidates(batch_envs)
    finally:
        for batch_env in batch_envs.values():
            batch_env.close()


def usable_candidates(constructor, num_agents, candidates=AUTO_CANDIDATES):
    """The modes worth timing for a batch, checked.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      candidates: Names of `MODES`; by default those of
          `auto_candidates(constructor)`.

    Raises:
      ConfigError: When a candidate is unknown or cannot run here.

    Returns:
      List of mode names: without the modes of worker processes where the
      batch has one environment or the machine one core, and in-process
      stepping is a candidate.
    """
    if candidates is AUTO_CANDIDATES:
        candidates = auto_candidates(constructor)
    candidates = [check_env_mode(mode) for mode in candidates]
    from agents.tools import sliced_batch_env
    if (num_agents == 1 or sliced_batch_env.available_cpus() == 1) and (
            'inprocess' in candidates):
        candidates = [
            mode for mode in candidates if mode not in _WORKER_MODES]
    return candidates


def time_candidates(batch_envs):
    """Time candidate batches against each other and pick the fastest.

    Args:
      batch_envs: Dict from mode names to batches of the same environments;
          they are reset and stepped, and left open.

    Returns:
      Tuple of the chosen mode (see `pick_env_mode`) and a dict from the
      modes to their environment steps per second, also logged in one line.
    """
    modes = list(batch_envs)
    rates = {mode: 0.0 for mode in modes}
    num_agents = len(batch_envs[modes[0]])
    space = batch_envs[modes[0]].action_space
    space.seed(0)
    actions = [np.stack([space.sample() for _ in range(num_agents)])
               for _ in range(16)]
    for mode in modes:
        batch_envs[mode].reset()
        batch_envs[mode].step(actions[0])
    for _ in range(_AUTO_ROUNDS):
        for mode in modes:
            rates[mode] = max(rates[mode], _burst_rate(
                batch_envs[mode], actions, _AUTO_BURST_SECONDS))
    mode = pick_env_mode(rates)
    logging.getLogger('agents').info(
        'Env mode auto: %s; using %s.', ', '.join(
            f'{name} {rate:,.0f} steps/s' for name, rate in rates.items()),
        mode)
    return mode, rates


def auto_candidates(constructor):
    """The modes that 'auto' times for the environments of a constructor.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.

    Returns:
      `AUTO_CANDIDATES`, and 'envpool' where EnvPool is installed and has
      the task of an `EnvironmentConstructor` with batch wrappers.
    """
    from agents.tools import envpool_batch_env
    task, _ = _envpool_task(constructor)
    if envpool_batch_env.has_task(task):
        return AUTO_CANDIDATES + ('envpool',)
    return AUTO_CANDIDATES


def pick_env_mode(rates):
    """The mode to use given measured environment steps per second.

    In-process stepping wins unless another mode steps faster, and a mode
    with worker processes at least `_WORKER_MARGIN` (1.25) times as fast;
    of those, the fastest wins.

    Args:
      rates: Dict from env modes to their measured steps per second.

    Returns:
      The chosen mode.
    """
    fastest = max(rates, key=rates.get)
    if 'inprocess' not in rates or fastest == 'inprocess':
        return fastest
    eligible = [
        mode for mode, rate in rates.items()
        if mode == 'inprocess' or rate >= rates['inprocess'] * (
            _WORKER_MARGIN if mode in _WORKER_MODES else 1.0)]
    return max(eligible, key=rates.get)


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


def create_environment(
        config, seed=None, render_mode=None, batch_wrappers=False):
    """Construct the configured environment with the standard wrappers.

    The standard wrappers limit the episodes to `max_length` steps, map
    finite bounds to [-1, 1] (`normalize_ranges`), clip Box actions and
    convert 64-bit values to 32 bits. A batch of environments applies them
    once to all its environments' arrays instead (see `wrap_batch_env`):
    with `batch_wrappers`, the environment comes without them.

    Args:
      config: Configuration with `env` (gymnasium id or constructor),
          `max_length` and `normalize_ranges`.
      seed: Seed of the environment's random generators, or None.
      render_mode: Gymnasium render mode, e.g. 'rgb_array', or None.
      batch_wrappers: Whether to leave the standard wrappers to the batch.

    Raises:
      ConfigError: When the env id is unknown, the env constructor returns
          no environment, or a space is unsupported.

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
    if not all(hasattr(env, name) for name in _ENV_ATTRIBUTES):
        name = getattr(config.env, '__qualname__', None) or repr(config.env)
        module = getattr(config.env, '__module__', None)
        name = f'{module}:{name}' if module else name
        shown = repr(env)
        shown = shown if len(shown) <= 60 else shown[:57] + '...'
        raise ConfigError(
            f"Config env '{name}' returned {shown}, a "
            f'{type(env).__name__}; expected a gymnasium environment.')
    check_spaces(env)
    if not batch_wrappers:
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


def wrap_batch_env(config, batch_env):
    """Apply the standard wrappers to a batch, on its stacked arrays.

    The same wrappers as `create_environment` applies to one environment,
    from `tools.batch_wrappers`: one NumPy operation per step for the whole
    batch instead of a few Python calls per environment.

    Args:
      config: Configuration with `max_length` and `normalize_ranges`.
      batch_env: Batch of environments built with `batch_wrappers=True`.

    Returns:
      The wrapped batch.
    """
    wrappers = tools.batch_wrappers
    if config.get('max_length'):
        batch_env = wrappers.LimitDuration(batch_env, config.max_length)
    if config.get('normalize_ranges', True):
        batch_env = wrappers.RangeNormalize(batch_env)
    if isinstance(batch_env.action_space, gym.spaces.Box):
        batch_env = wrappers.ClipAction(batch_env)
    return wrappers.ConvertTo32Bit(batch_env)


_ENV_ATTRIBUTES = ('observation_space', 'action_space', 'reset', 'step')


def environment_constructor(config, batch_wrappers=False):
    """Constructor `(seed, render_mode=None) -> env` of the configured env.

    It holds only the settings of the environment, not the algorithm,
    network or optimizer, so that worker processes receive it without
    importing TensorFlow.

    Args:
      config: Configuration with `env`, `max_length` and `normalize_ranges`.
      batch_wrappers: Whether to leave the standard wrappers to the batch
          (see `batch_wrapper`).

    Returns:
      `EnvironmentConstructor`, a callable taking a seed or None, and
      optionally a render mode.
    """
    return EnvironmentConstructor(_env_config(config), batch_wrappers)


class EnvironmentConstructor:
    """Builds the configured environment: `create_environment` bound to a
    config.

    Env modes that build their environments themselves, like 'envpool',
    read the environment's id from `config`.

    Attributes:
      config: Locked AttrDict of `env`, `max_length` and `normalize_ranges`.
      batch_wrappers: Whether the standard wrappers are left to the batch.
    """

    def __init__(self, config, batch_wrappers=False):
        """Bind the settings of the environment.

        Args:
          config: AttrDict with `env` and optionally `max_length` and
              `normalize_ranges`.
          batch_wrappers: Whether to leave the standard wrappers to the
              batch.
        """
        self.config = config
        self.batch_wrappers = batch_wrappers

    def __call__(self, seed=None, render_mode=None):
        """Build one environment.

        Args:
          seed: Seed of the environment's random generators, or None.
          render_mode: Gymnasium render mode, e.g. 'rgb_array', or None.

        Returns:
          The environment of `create_environment`.
        """
        return create_environment(
            self.config, seed, render_mode, self.batch_wrappers)


def batch_wrapper(config):
    """Function `(batch_env) -> batch_env` applying the standard wrappers.

    Args:
      config: Configuration with `max_length` and `normalize_ranges`.

    Returns:
      Callable wrapping a batch built from `environment_constructor(config,
      batch_wrappers=True)`.
    """
    return functools.partial(wrap_batch_env, _env_config(config))


def _env_config(config):
    """The settings of the environment alone, as a locked AttrDict."""
    keys = ('env', 'max_length', 'normalize_ranges')
    env_config = tools.AttrDict(
        {key: config[key] for key in keys if key in config})
    env_config.lock()
    return env_config


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
