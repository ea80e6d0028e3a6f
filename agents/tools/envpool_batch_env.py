"""A batch stepped by EnvPool's C++ thread pool (extra `envpool`, imported
when a batch is built; its tasks draw other initial states for a seed than
gymnasium's). No TensorFlow here."""

import types

import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_state
from agents.tools import episode_wrappers
from agents.tools import sliced_batch_env

_INSTALL = (
    "EnvPool is not installed; install it with pip install -e '.[envpool]' "
    '(EnvPool has wheels for Linux and Python >= 3.11 only)')


def import_envpool():
    """The envpool module; an ImportError says which extra installs it."""
    try:
        import envpool
    except ImportError as error:
        raise ImportError(f'{_INSTALL}: {error}') from None
    return envpool


def has_task(task):
    """Whether EnvPool is installed and has a task of this gymnasium id."""
    if not isinstance(task, str):
        return False
    try:
        envpool = import_envpool()
    except ImportError:
        return False
    return task in envpool.list_all_envs()


class EnvPoolBatchEnv(batch_env_lib.BatchEnv):
    """EnvPool's environments of one `task` (id) as a `BatchEnv`.

    Finished environments are reset explicitly, as in a `BatchEnv`, before
    EnvPool would reset them by itself. Environment `i` is seeded with
    `seed + i` once, when the batch is built (with a list of seeds, one per
    equal block of environments, environment `i` of a block `seed + i` of
    its seed). None is ever restarted, and `info['infos']` holds empty
    dicts.
    """

    def __init__(self, task, num_envs, seed=None):
        """Build `num_envs` environments of a gymnasium id EnvPool has, e.g.
        'HalfCheetah-v5', from a base `seed`, a list of them (see the class)
        or None (draws one); an ImportError without EnvPool, a ValueError
        for a task it lacks or an argument out of range."""
        envpool = import_envpool()
        if not isinstance(task, str) or task not in envpool.list_all_envs():
            raise ValueError(
                f'EnvPool has no task {task!r}; it has gymnasium ids such as '
                "'Pendulum-v1', 'CartPole-v1' and 'HalfCheetah-v5' (see "
                'envpool.list_all_envs()).')
        num_envs = episode_wrappers.checked_integer(
            num_envs, 'num_envs', 'positive')
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
        if isinstance(seed, (list, tuple)):
            block = num_envs // len(seed)
            seed = [int(seed[index // block]) + index % block
                    for index in range(num_envs)]
        else:
            seed = int(seed)
        self._env = envpool.make_gymnasium(
            task, num_envs=num_envs, batch_size=num_envs, seed=seed,
            num_threads=min(num_envs, sliced_batch_env.available_cpus()))
        self._all = np.arange(num_envs, dtype=np.int32)
        # EnvPool's infos are arrays of the whole batch, dropped.
        self._infos = ({},) * num_envs
        member = types.SimpleNamespace(
            task=task, observation_space=self._env.observation_space,
            action_space=self._env.action_space)
        super().__init__([member] * num_envs, blocking=True)
        self._owned = [self._env] if hasattr(self._env, 'close') else []

    def step(self, actions):
        """Step every environment of the batch, as `BatchEnv.step` does."""
        actions = self._check_actions(actions)
        observ, reward, terminated, truncated, _ = self._env.step(
            np.asarray(actions), self._all)
        return self._result(
            observ, reward, terminated, truncated,
            np.zeros(len(self._envs), bool), self._infos)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments, as `BatchEnv.reset` does; a
        ValueError for any seed but None (EnvPool seeds once)."""
        if seed is not None:
            raise ValueError(
                'EnvPool seeds its environments once, when the batch is '
                f'built; reset(seed={seed!r}) cannot seed them again.')
        indices = self._check_indices(indices)
        if not indices:
            return batch_env_lib.stack([], self.observation_space)
        observ, _ = self._env.reset(np.array(indices, np.int32))
        return np.asarray(observ, self.observation_space.dtype)

    def get_env_state(self):
        """Raise `env_state.StateUnavailable`: the state is in C++."""
        raise env_state.StateUnavailable(
            "EnvPool's environments keep their state in C++, out of reach "
            'of checkpoints')
