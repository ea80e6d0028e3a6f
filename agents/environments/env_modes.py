"""The env modes: how a batch of environments steps, one table of them.

An env mode is one entry of `MODES`: the function that builds the batch
from the environments' constructors, a line of help, and the check of what
it needs. 'auto' times some of them (`auto_batch_env`); 'graph' steps
in-graph tasks (`graph_env`). `make_batch_env` builds the Python batch of a
run; every environment seed is derived here. Worker processes import this
module without TensorFlow when they unpickle their constructors.
"""

import collections

import numpy as np

from agents import tools
from agents.environments import auto_batch_env
from agents.environments import env_construction
from agents.tools.run_errors import ConfigError


class EnvMode(collections.namedtuple(
        'EnvMode', 'build, description, check, in_graph')):
    """How a batch of environments steps.

    Attributes:
      build: Function `(constructors, timeout, restart) -> batch env` of one
          constructor without arguments per environment, the seconds to
          wait for a worker (None: the default), and whether to replace
          failed environments; returns a `tools.BatchEnv` or alike.
      description: One line for the help of the --env_mode flags.
      check: None, or a function raising an `ImportError` that says what
          to install where the mode cannot run.
      in_graph: Whether the environments are graph operations ('graph').
    """

    def __new__(cls, build, description, check=None, in_graph=False):
        return super().__new__(cls, build, description, check, in_graph)


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


def _build_ray(constructors, timeout, restart, **options):
    """Ray actors, one per free CPU of the cluster, a slice each;
    `options` go to `RayBatchEnv`."""
    from agents.tools import ray_batch_env
    return ray_batch_env.RayBatchEnv(
        constructors, restart=restart, timeout=timeout, **options)


def _check_ray():
    """Import Ray, or raise an ImportError naming its extra."""
    from agents.tools import ray_batch_env
    ray_batch_env.import_ray()


def _build_envpool(constructors, timeout, restart):
    """EnvPool's C++ thread pool, from the configured gymnasium id."""
    del timeout, restart  # EnvPool's environments neither hang nor restart.
    task = constructors[0].env_id
    if task is None:
        raise ConfigError(
            '--env_mode=envpool builds the environments from the gymnasium '
            'id of the config, whose standard wrappers the batch applies; '
            'expected the constructors of make_batch_env with a config that '
            'names its env by id.')
    try:
        # pylint: disable-next=not-callable
        return tools.EnvPoolBatchEnv(
            task, len(constructors), constructors[0].seed)
    except ValueError as error:
        raise ConfigError(f'--env_mode=envpool: {error}') from None


def _check_envpool():
    """Import EnvPool, or raise an ImportError naming its extra."""
    from agents.tools import envpool_batch_env
    envpool_batch_env.import_envpool()


def _build_graph(constructors, timeout, restart):
    """Refuse: the in-graph task builds no Python environments."""
    del constructors, timeout, restart
    raise ConfigError(
        '--env_mode=graph builds no Python environments; expected a '
        'Python env mode (the in-graph task of a config comes from '
        'define_in_graph_batch).')


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
    'graph': EnvMode(
        _build_graph, 'the task as TensorFlow operations in the graph where '
        'it has an in-graph version (Pendulum-v1, CartPole-v1, Acrobot-v1, '
        'MountainCar-v0, MountainCarContinuous-v0)', in_graph=True),
}


def mode_names():
    """Names of the env modes: 'auto' and those of `MODES`."""
    return ('auto',) + tuple(MODES)


def in_graph_mode(env_mode):
    """Whether a checked env mode steps in-graph tasks, not Python ones."""
    return env_mode != 'auto' and MODES[env_mode].in_graph


def flag_help():
    """Help text of an --env_mode flag, listing every mode."""
    modes = '; '.join(
        f'{name}: {mode.description}' for name, mode in MODES.items())
    return (
        'How to step the environments: auto (the default): '
        f'{auto_batch_env.describe()}; {modes}.')


def check_env_mode(env_mode):
    """Validate how to step the environments.

    Args:
      env_mode: One of `mode_names()`; True stands for 'processes' and
          False for 'inprocess' (2017).

    Returns:
      The mode's name.

    Raises:
      ConfigError: Naming the value and the choices when it is none of them,
          or saying what to install when the mode cannot run here.
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
        try:
            MODES[env_mode].check()
        except ImportError as error:
            raise ConfigError(f'--env_mode={env_mode}: {error}') from None
    return env_mode


def env_mode_from_flags(env_mode, env_processes):
    """The env mode of the --env_mode and --env_processes flags.

    Args:
      env_mode: Value of --env_mode, or None when it was not passed.
      env_processes: Value of --env_processes, or None when not passed.

    Returns:
      The name of the mode; 'auto' when neither flag was passed.

    Raises:
      ConfigError: When the mode is unknown or the flags disagree.
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
        restart=False, leader=None, **options):
    """Create the batch of environments of a mode, outside the graph.

    Args:
      constructor: Callable taking a seed (or None) and returning an env.
      num_agents: Number of environments in the batch.
      env_mode: A checked name of `mode_names()`.
      seed: None, a base seed or one seed per environment (`env_seeds`).
      timeout: Seconds to wait for an answer of a worker process, or None.
      restart: Whether to replace environments that fail.
      leader: See `auto_batch_env.create`.
      **options: Further keyword arguments of the mode's `build`.

    Raises:
      ConfigError: For the mode 'graph'.

    Returns:
      The batch env the mode builds.
    """
    if env_mode == 'auto':
        return auto_batch_env.create(
            create_batch_env, constructor, num_agents, seed, timeout, restart,
            leader=leader)
    constructors = [
        SeededConstructor(constructor, value)
        for value in _given_seeds(seed, num_agents)]
    return MODES[env_mode].build(constructors, timeout, restart, **options)


# The environment seeds of a run: SeedSequence children of the run's seed.
_PURPOSES = ('train', 'eval')


def env_seeds(seed, count, purpose='train'):
    """The seeds of a run's environments, derived from the run's seed.

    `SeedSequence(seed)` spawns one child for the training and one for the
    evaluation environments, each giving `count` 31-bit seeds (EnvPool takes
    signed 32-bit ones), so runs and purposes do not share seeds.

    Args:
      seed: The run's seed, or None.
      count: Number of environments.
      purpose: 'train' or 'eval', which environments.

    Raises:
      ValueError: When the purpose is neither.

    Returns:
      List of `count` Python ints, or None when `seed` is None.
    """
    if purpose not in _PURPOSES:
        raise ValueError(
            f"Environment seeds for {purpose!r}; expected 'train' or 'eval'.")
    if seed is None:
        return None
    return [int(value >> 1) for value in _seed_words(seed, purpose, count)]


def task_seed(seed, evaluation=False):
    """The seed of a training or evaluation batch of a run's in-graph task.

    Args:
      seed: The run's seed, or None.
      evaluation: Whether the batch evaluates.

    Returns:
      The run's seed for training; for evaluation a 32-bit seed of the
      evaluation child of `SeedSequence(seed)` (see `env_seeds`).
    """
    if seed is None or not evaluation:
        return seed
    return int(_seed_words(seed, 'eval', 1)[0])


def _given_seeds(seed, count):
    """One seed per environment: `seed + i` (the 2017 scheme) for a base
    seed, Nones for None, or a sequence's `count` seeds."""
    if seed is None or isinstance(seed, (int, np.integer)):
        return [None if seed is None else seed + index
                for index in range(count)]
    seeds = [int(value) for value in seed]
    if len(seeds) != count:
        raise ValueError(
            f'Got {len(seeds)} seeds for {count} environments; '
            'expected one seed per environment.')
    return seeds


def _seed_words(seed, purpose, count):
    """`count` 32-bit words of the run seed's child sequence of a purpose."""
    child = np.random.SeedSequence(int(seed)).spawn(len(_PURPOSES))[
        _PURPOSES.index(purpose)]
    return child.generate_state(count, np.uint32)


def make_batch_env(config, seed, env_mode, evaluation=False, leader=None):
    """The batch of the configured environments, with the standard wrappers.

    The batch applies the standard wrappers to its stacked arrays
    (`env_construction.wrap_batch_env`). The training batch has
    `num_agents` environments, the evaluation batch `eval_episodes`.

    Args:
      config: Completed configuration (see `config_spec.complete_config`).
      seed: The run's seed, or None.
      env_mode: A checked name of `mode_names()`.
      evaluation: Whether to build the evaluation batch.
      leader: With env mode 'auto', the run's training batch, whose choice
          of mode the evaluation batch takes (see `auto_batch_env.create`).

    Returns:
      The wrapped batch env, outside the graph.
    """
    count = config.eval_episodes if evaluation else config.num_agents
    seeds = env_seeds(seed, count, 'eval' if evaluation else 'train')
    constructor = env_construction.environment_constructor(
        config, batch_wrappers=True)
    options = {}
    if evaluation and env_mode == 'ray':
        # The training batch holds an actor per free CPU; the evaluation
        # batch, which never steps at the same time, takes none.
        options = dict(num_actors=1, actor_options=dict(num_cpus=0))
    batch_env = create_batch_env(
        constructor, count, env_mode, seeds, config.worker_timeout,
        config.restart_workers, leader, **options)
    try:
        return env_construction.wrap_batch_env(config, batch_env)
    except BaseException:
        batch_env.close()
        raise


class SeededConstructor:
    """The constructor of one environment of a batch, bound to its seed.

    Attributes:
      constructor: Callable taking a seed (or None) and returning an env.
      seed: The environment's seed, or None.
    """

    def __init__(self, constructor, seed):
        """Bind a constructor to a seed (see the attributes)."""
        self.constructor = constructor
        self.seed = seed

    @property
    def env_id(self):
        """The constructor's `env_id` (see
        `env_construction.EnvironmentConstructor`), or None."""
        return getattr(self.constructor, 'env_id', None)

    def __call__(self):
        """Build the environment."""
        return self.constructor(self.seed)


def _batch_of(create, num_agents, blocking, restart):
    """A `tools.BatchEnv` of `create(index)` for every index; closes those
    created where one fails."""
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
