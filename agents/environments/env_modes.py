"""The env modes (`MODES`), the Python batch of a run (`make_batch_env`)
and every environment seed. No TensorFlow: worker processes import it."""

import collections
import functools

import numpy as np

from agents import tools
from agents.environments import auto_batch_env
from agents.environments import env_construction
from agents.tools import envpool_batch_env
from agents.tools import ray_batch_env
from agents.tools import sliced_batch_env
from agents.tools.run_errors import ConfigError


class EnvMode(collections.namedtuple(
        'EnvMode', 'build, description, check, in_graph',
        defaults=(None, False))):
    """How a batch of environments steps: `build(constructors, timeout,
    restart, **options) -> batch env`, the help of --env_mode, None or a
    `check` raising an ImportError, and whether the environments are ops."""


def _build_auto(constructors, timeout, restart, leader=None, runs=1):
    """The fastest of some modes (see `auto_batch_env.create`), of the
    environments of `runs` runs (see `_build_envpool`)."""
    modes = dict(MODES, envpool=MODES['envpool']._replace(
        build=functools.partial(_build_envpool, runs=runs)))
    return auto_batch_env.create(
        modes, constructors, timeout, restart, leader=leader)


def _build_inprocess(constructors, timeout, restart):
    """All environments in this process, stepped one after the other."""
    del timeout
    return _batch_of(
        lambda index: constructors[index](), len(constructors), True, restart)


def _build_processes(constructors, timeout, restart):
    """One worker process per environment, stepped in parallel."""
    return _batch_of(lambda index: tools.wrappers.ExternalProcess(
        constructors[index], timeout=timeout, main_module=False),
        len(constructors), False, restart)


def _build_slices(constructors, timeout, restart):
    """One worker per CPU core, each stepping a slice of the batch."""
    return sliced_batch_env.SlicedBatchEnv(
        constructors, restart=restart, timeout=timeout)


def _build_ray(constructors, timeout, restart, **options):
    """Ray actors, a slice each; `options` go to `RayBatchEnv`."""
    return ray_batch_env.RayBatchEnv(
        constructors, restart=restart, timeout=timeout, **options)


def _build_envpool(constructors, timeout, restart, runs=1):
    """EnvPool's C++ thread pool, from the configured gymnasium id; the
    batch of `runs` runs' environments, one after another, each run's
    seeded from its first environment's seed as its own batch."""
    del timeout, restart  # EnvPool's environments neither hang nor restart.
    task = getattr(constructors[0].constructor, 'env_id', None)
    if task is None:
        raise ConfigError(
            '--env_mode=envpool builds the environments from the gymnasium '
            'id of the config, whose standard wrappers the batch applies; '
            'expected the constructors of make_batch_env with a config that '
            'names its env by id.')
    seeds = [constructor.seed
             for constructor in constructors[::len(constructors) // runs]]
    try:
        return envpool_batch_env.EnvPoolBatchEnv(
            task, len(constructors), None if seeds[0] is None else seeds)
    except ValueError as error:
        raise ConfigError(f'--env_mode=envpool: {error}') from None


def _build_graph(constructors, timeout, restart):
    """Refuse: the in-graph task builds no Python environments."""
    del constructors, timeout, restart
    raise ConfigError(
        '--env_mode=graph builds no Python environments; expected a '
        'Python env mode (the in-graph task of a config comes from '
        'define_in_graph_batch).')


# The checks look the import up when called, where tests replace it.
MODES = {
    'auto': EnvMode(_build_auto, auto_batch_env.describe()),
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
        lambda: ray_batch_env.import_ray()),
    'envpool': EnvMode(
        _build_envpool, "EnvPool's C++ thread pool, for the gymnasium ids "
        'it has (extra envpool; Linux, Python >= 3.11)',
        lambda: envpool_batch_env.import_envpool()),
    'graph': EnvMode(
        _build_graph, 'the task as TensorFlow operations in the graph where '
        'it has an in-graph version (Pendulum-v1, CartPole-v1, Acrobot-v1, '
        'MountainCar-v0, MountainCarContinuous-v0)', in_graph=True),
}


def mode_names():
    """Names of the env modes, 'auto' first."""
    return tuple(MODES)


def in_graph_mode(env_mode):
    """Whether a checked env mode steps in-graph tasks, not Python ones."""
    return MODES[env_mode].in_graph


def flag_help():
    """Help text of an --env_mode flag, listing every mode."""
    modes = '; '.join(
        f"{name}{' (the default)' if name == 'auto' else ''}: "
        f'{mode.description}' for name, mode in MODES.items())
    return f'How to step the environments: {modes}.'


def check_env_mode(env_mode):
    """The name of an env mode, True standing for 'processes' and False for
    'inprocess' (2017); a ConfigError when it is unknown or cannot run here."""
    if isinstance(env_mode, bool):
        return 'processes' if env_mode else 'inprocess'
    if not isinstance(env_mode, str) or env_mode not in MODES:
        raise ConfigError(
            f'Unknown env mode {env_mode!r}; expected one of '
            f"{', '.join(mode_names())}.")
    if MODES[env_mode].check:
        try:
            MODES[env_mode].check()
        except ImportError as error:
            raise ConfigError(f'--env_mode={env_mode}: {error}') from None
    return env_mode


def env_mode_from_flags(env_mode, env_processes):
    """The checked env mode of the --env_mode and --env_processes flags
    (None: not passed), by default 'auto'; a ConfigError if they disagree."""
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
        restart=False, **options):
    """Create the batch of environments of a checked mode from a `constructor`
    taking a seed (or None); `seed` is None, a base seed (environment i gets
    `seed + i`, as in 2017) or one per environment. A ConfigError for the mode
    'graph', a ValueError for seeds too few or many."""
    if seed is None or isinstance(seed, (int, np.integer)):
        seeds = [None if seed is None else seed + index
                 for index in range(num_agents)]
    else:
        seeds = [int(value) for value in seed]
    if len(seeds) != num_agents:
        raise ValueError(
            f'Got {len(seeds)} seeds for {num_agents} environments; '
            'expected one seed per environment.')
    constructors = [SeededConstructor(constructor, value) for value in seeds]
    return MODES[env_mode].build(constructors, timeout, restart, **options)


def make_batch_env(config, seed, env_mode, evaluation=False, leader=None):
    """The batch of the configured environments (`eval_episodes` of them for
    `evaluation`, else `num_agents`) in a checked mode, with the standard
    wrappers acting on its stacked arrays; with 'auto', an evaluation batch
    takes the mode that its `leader`, the run's training batch, chose. With
    a list of seeds (a population), the runs' batches one after another in
    one, each seeded as its run's."""
    runs = seed if isinstance(seed, (list, tuple)) else [seed]
    count = config.eval_episodes if evaluation else config.num_agents
    options = dict(runs=len(runs)) if env_mode in ('auto', 'envpool') else {}
    if env_mode == 'auto':
        options['leader'] = leader
    if evaluation and env_mode == 'ray':
        # The training batch holds an actor per free CPU; the evaluation
        # batch, which never steps at the same time, takes none.
        options = dict(num_actors=1, actor_options=dict(num_cpus=0))
    seeds = [env_seeds(run, count, evaluation) for run in runs]
    batch_env = create_batch_env(
        env_construction.EnvironmentConstructor(config, batch_wrappers=True),
        count * len(runs), env_mode,
        None if seed is None else sum(seeds, []), config.worker_timeout,
        config.restart_workers, **options)
    try:
        return env_construction.wrap_batch_env(config, batch_env)
    except BaseException:
        batch_env.close()
        raise


def env_seeds(seed, count, evaluation=False):
    """The `count` 31-bit seeds (for EnvPool's int32) of a run's training
    or evaluation environments, from that child of `SeedSequence(seed)`."""
    if seed is None:
        return None
    return [int(value >> 1) for value in _seed_words(seed, evaluation, count)]


def task_seed(seed, evaluation=False):
    """The seed of a run's in-graph task: the run's seed for training, a
    32-bit seed of the evaluation child of `SeedSequence(seed)` else."""
    if seed is None or not evaluation:
        return seed
    return int(_seed_words(seed, evaluation, 1)[0])


def _seed_words(seed, evaluation, count):
    """`count` 32-bit words of the run seed's training or evaluation child."""
    child = np.random.SeedSequence(int(seed)).spawn(2)[int(evaluation)]
    return child.generate_state(count, np.uint32)


class SeededConstructor(collections.namedtuple(
        'SeededConstructor', 'constructor, seed')):
    """The constructor of one environment of a batch, bound to its seed."""

    def __call__(self):
        """Build the environment."""
        return self.constructor(self.seed)


def _batch_of(create, num_agents, blocking, restart):
    """A `tools.BatchEnv` of `create(index)`, closed if one fails."""
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
