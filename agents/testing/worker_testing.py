"""Helpers for tests of batches whose environments live in workers (no
TensorFlow: worker processes import this module)."""

import gc
import os
import re
import signal
import sys

import numpy as np

from agents.tools import external_process
from agents.testing import mock_environment

# The `step_trace` of 4 steps of a batch of three `MockEnvironment`s, of
# the episode lengths `MIXED_DURATIONS`.
MIXED_DURATIONS = (2, 3, 1)
MIXED_TRACE = [
    ([1, 1, 1], [1, 1, 1], [False, False, True], [False, False, True],
     [False, False, False]),
    ([2, 2, 1], [2, 2, 1], [True, False, True], [True, False, True],
     [False, False, False]),
    ([1, 3, 1], [1, 3, 1], [False, True, True], [False, True, True],
     [False, False, False]),
    ([2, 1, 1], [2, 1, 1], [True, False, True], [True, False, True],
     [False, False, False]),
]


def child_pids():
    """Process ids of this process's descendants, once the fork server
    (which the first worker starts) runs."""
    external_process.ExternalProcess(
        mock_environment.MockEnvironment, main_module=False).close()
    return descendants()


def descendants():
    """Process ids of every descendant of this process, as they are now."""
    import psutil  # pylint: disable=import-outside-toplevel
    return {child.pid for child in psutil.Process().children(recursive=True)}


def step_with_checked_types(batch_env):
    """Reset and step a batch of three default `MockEnvironment`s, asserting
    dtypes and shapes (float32 actions from float64); the step's info."""
    observ = batch_env.reset()
    assert (observ.dtype, observ.shape) == (np.float32, (3, 2))
    observ, reward, done, info = batch_env.step(np.zeros((3, 3)))
    assert (observ.dtype, observ.shape) == (np.float32, (3, 2))
    assert (reward.dtype, reward.shape) == (np.float32, (3,))
    assert (done.dtype, done.shape) == (bool, (3,))
    assert [env.actions[-1].dtype for env in batch_env] == [np.float32] * 3
    return info


def check_bad_input_is_refused(batch_env):
    """Assert the ValueErrors of a batch of three default `MockEnvironment`s
    for bad actions, indices and seeds, raised before any environment steps."""
    batch_env.reset()
    actions = np.zeros((3, 3), np.float32)
    actions[1, 2] = 1.5
    for call, expected in (
            (lambda: batch_env.step(np.zeros((2, 3))),
             'Expected a batch of 3 actions, one per environment, got 2.'),
            (lambda: batch_env.step(actions),
             'Action array([0. , 0. , 1.5], dtype=float32) of environment 1 '
             'is outside the action space Box(-1.0, 1.0, (3,), float32).'),
            (lambda: batch_env.reset([0, 3]),
             'Environment index 3 is out of range; expected indices from 0 '
             'to 2.'),
            (lambda: batch_env.reset(seed='a'),
             "seed must be None or an integer, got 'a'.")):
        message = None
        try:
            call()
        except ValueError as error:
            message = str(error)
        assert message == expected, message
    assert [env.steps for env in batch_env] == [[0], [0], [0]]


def check_killed_worker(batch_env, index, failed, survivors):
    """Kill the worker of environment `index` of a batch of default
    `MockEnvironment`s (closed after); assert the step's error, starting
    `failed`, that the `survivors` stepped once and the process is gone."""
    try:
        batch_env.reset()
        pid = batch_env[index].pid
        os.kill(pid, signal.SIGKILL)
        message = None
        try:
            batch_env.step(np.zeros((len(batch_env), 3), np.float32))
        except external_process.ExternalProcessError as error:
            message = str(error)
        assert message is not None, 'The step of a killed worker succeeded.'
        assert re.match(
            rf'^{failed}: .* \(pid {pid}\) died \(exit code -9, killed by '
            r'SIGKILL\)', message), message
        assert [batch_env[other].steps for other in survivors] == (
            [[1]] * len(survivors))
    finally:
        batch_env.close()
    assert pid not in descendants()


def check_close_and_collection(make_batch):
    """Assert that closing or collecting a batch of `make_batch()`, whose
    environments have their worker's `pid`, ends its workers."""
    for ending in ('close', 'collect'):
        batch_env = make_batch()
        batch_env.reset()
        pids = {env.pid for env in batch_env}
        assert pids <= descendants()
        if ending == 'close':
            batch_env.close()
            batch_env.close()
        else:
            del batch_env
            gc.collect()
        assert not pids & descendants()


def mock_constructor(seed):
    """A constructor of batches: a `MockEnvironment` of 3-step episodes;
    the seed is ignored."""
    del seed
    return mock_environment.MockEnvironment(durations=(3,))


def step_trace(batch_env, steps, info_keys=('terminated', 'truncated')):
    """Step a batch of actions of three floats with zeros, resetting
    finished envs; return per step a tuple of lists: the first observation
    component, rewards, done flags and the flags of `info_keys`."""
    trace = []
    batch_env.reset()
    for _ in range(steps):
        observ, reward, done, info = batch_env.step(
            np.zeros((len(batch_env), 3), np.float32))
        trace.append((observ[:, 0].tolist(), reward.tolist(), done.tolist(),
                      *(info[key].tolist() for key in info_keys)))
        if done.any():
            batch_env.reset(np.flatnonzero(done))
    return trace


# Old gym as far as packages that register their tasks there need it (the
# registry a dict, as from gym 0.26); a package in the manner of PyBullet's
# `pybullet_envs`, which registers `OldGymPendulum-v0` there on import; and
# a stand-in for shimmy's `GymV21CompatibilityV0`, which makes its ids.
OLD_GYM_FILES = {
    'gym.py': (
        'import collections\n'
        'import importlib\n'
        'import types\n'
        "EnvSpec = collections.namedtuple('EnvSpec', 'id, entry_point')\n"
        'envs = types.SimpleNamespace(registry={})\n'
        'def register(id, entry_point):\n'
        '    envs.registry[id] = EnvSpec(id, entry_point)\n'
        'def make(id):\n'
        "    module, _, name = envs.registry[id].entry_point.partition(':')\n"
        '    return getattr(importlib.import_module(module), name)()\n'),
    'old_gym_tasks.py': (
        'import gymnasium\n'
        'import gym\n'
        "gym.register('OldGymPendulum-v0', 'old_gym_tasks:pendulum')\n"
        'def pendulum():\n'
        "    return gymnasium.make('Pendulum-v1')\n"),
    'old_gym_compat.py': (
        'import gym\n'
        'def make(env_id):\n'
        '    env = gym.make(env_id)\n'
        "    # As shimmy's, the environment has old gym's spec.\n"
        '    env.unwrapped.spec = gym.envs.registry[env_id]\n'
        '    return env\n'),
}
OLD_GYM_MODULES = ('gym', 'old_gym_tasks', 'old_gym_compat')


def write_old_gym(directory):
    """Write `OLD_GYM_FILES` into a `pathlib.Path`, for `sys.path`."""
    for name, text in OLD_GYM_FILES.items():
        (directory / name).write_text(text)


class ModuleProbe(mock_environment.MockEnvironment):
    """A mock environment that tells which modules its process imported."""

    def imported(self, name):
        """Whether the environment's process imported the module `name`."""
        return name in sys.modules
