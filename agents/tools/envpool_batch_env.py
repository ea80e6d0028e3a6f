"""A batch of environments stepped by EnvPool's C++ thread pool.

EnvPool (extra `envpool`; wheels for Linux and Python >= 3.11 only) steps
its environments in C++ threads, without the GIL and without a Python call
per environment. It has its own implementations of many gymnasium tasks,
which behave like gymnasium's but do not draw the same random initial
states for the same seed.

This module must not import TensorFlow, and imports EnvPool only when a
batch is built: the package works without it.
"""

import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_state
from agents.tools import sliced_batch_env

_INSTALL = (
    "EnvPool is not installed; install it with pip install -e '.[envpool]' "
    '(EnvPool has wheels for Linux and Python >= 3.11 only)')


def import_envpool():
    """The envpool module.

    Raises:
        ImportError: Saying which extra installs EnvPool.

    Returns:
        The imported module.
    """
    try:
        import envpool
    except ImportError as error:
        raise ImportError(f'{_INSTALL}: {error}') from None
    return envpool


def has_task(task):
    """Whether EnvPool is installed and has a task of this gymnasium id.

    Args:
        task: Gymnasium environment id, or anything else (no task).

    Returns:
        Bool.
    """
    if not isinstance(task, str):
        return False
    try:
        envpool = import_envpool()
    except ImportError:
        return False
    return task in envpool.list_all_envs()


class EnvPoolBatchEnv(batch_env_lib.BatchEnv):
    """EnvPool's environments of one task behind the `BatchEnv` interface.

    `step` takes one action per environment and returns stacked arrays with
    `done = terminated | truncated` and both flags in the info; `reset`
    resets some or all environments. EnvPool resets a finished environment
    by itself on the next step; the batch resets finished environments
    explicitly, as a `BatchEnv` of gymnasium environments expects, so that
    this never happens. Environment `i` is seeded with `seed + i` once,
    when the batch is built; EnvPool cannot be seeded again later. No
    environment is ever restarted.
    """

    def __init__(self, task, num_envs, seed=None, num_threads=None):
        """Build the environments.

        Args:
            task: Gymnasium id of a task that EnvPool has, e.g.
                'HalfCheetah-v5'.
            num_envs: Number of environments in the batch.
            seed: Base seed; environment `i` gets `seed + i`. None draws one.
            num_threads: Threads stepping the environments; None uses one
                per CPU core this process may run on, at most `num_envs`.

        Raises:
            ImportError: When EnvPool is not installed.
            ValueError: When EnvPool has no task of this id or an argument
                is out of range.
        """
        envpool = import_envpool()
        if not isinstance(task, str) or task not in envpool.list_all_envs():
            raise ValueError(
                f'EnvPool has no task {task!r}; it has gymnasium ids such as '
                "'Pendulum-v1', 'CartPole-v1' and 'HalfCheetah-v5' (see "
                'envpool.list_all_envs()).')
        if not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(
                f'num_envs must be a positive integer, got {num_envs!r}.')
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
        if num_threads is None:
            num_threads = min(num_envs, sliced_batch_env.available_cpus())
        self._env = envpool.make_gymnasium(
            task, num_envs=num_envs, batch_size=num_envs, seed=int(seed),
            num_threads=int(num_threads))
        self._task = task
        self._all = np.arange(num_envs, dtype=np.int32)
        # EnvPool's infos are arrays of the whole batch; each environment's
        # info dict stays empty.
        self._infos = ({},) * num_envs
        super().__init__(
            [_Member(task, self._env.observation_space,
                     self._env.action_space) for _ in range(num_envs)],
            blocking=True)

    @property
    def task(self):
        """Gymnasium id of the task."""
        return self._task

    def step(self, actions):
        """Step every environment of the batch, as `BatchEnv.step` does.

        No environment ever restarts, and EnvPool returns the infos of the
        whole batch as arrays (which are dropped): `info['restarted']` is all
        false and `info['infos']` holds empty dicts.
        """
        actions = self._check_actions(actions)
        observ, reward, terminated, truncated, _ = self._env.step(
            np.asarray(actions), self._all)
        terminated = np.asarray(terminated, bool)
        truncated = np.asarray(truncated, bool)
        info = dict(
            terminated=terminated, truncated=truncated,
            restarted=np.zeros(len(self._envs), bool), infos=self._infos)
        return (
            np.asarray(observ, self._observ_dtype),
            np.asarray(reward, np.float32), terminated | truncated, info)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments, as `BatchEnv.reset` does.

        Raises:
            ValueError: Also for any seed other than None, since EnvPool
                seeds its environments once, when the batch is built.
        """
        if seed is not None:
            raise ValueError(
                'EnvPool seeds its environments once, when the batch is '
                f'built; reset(seed={seed!r}) cannot seed them again.')
        indices = self._check_indices(indices)
        if not indices:
            return np.zeros((0,) + self._observ_shape, self._observ_dtype)
        observ, _ = self._env.reset(np.array(indices, np.int32))
        return np.asarray(observ, self._observ_dtype)

    def get_env_state(self):
        """Refuse: EnvPool's environments keep their state in C++.

        Raises:
            env_state.StateUnavailable: Always.
        """
        raise env_state.StateUnavailable(
            "EnvPool's environments keep their state in C++, out of reach "
            'of checkpoints')

    def close(self):
        """Close the environments; safe to call again."""
        if self._closed:
            return
        self._closed = True
        close = getattr(self._env, 'close', None)
        if close is not None:
            close()


class _Member:
    """One environment of an `EnvPoolBatchEnv`: its task and spaces."""

    def __init__(self, task, observation_space, action_space):
        self.task = task
        self.observation_space = observation_space
        self.action_space = action_space
