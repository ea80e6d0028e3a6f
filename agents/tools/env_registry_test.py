"""Tests for carrying gymnasium registrations into worker processes."""

import functools
import importlib
import pickle
import sys

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import env_registry
from agents.tools.external_process import ExternalProcess
from agents.testing import worker_testing
from agents.testing.mock_environment import MockEnvironment

_ID = 'AgentsRegistryTest-v0'


def _make_mock():
    return MockEnvironment(
        observ_shape=(2,), action_shape=(1,), min_duration=4, max_duration=4)


@pytest.fixture(name='registered')
def _registered_fixture():
    # Registered here only: a fresh worker interpreter never saw this id.
    gym.register(_ID, entry_point=_make_mock, max_episode_steps=3)
    yield _ID
    del gym.envs.registry[_ID]


def test_a_worker_makes_an_id_registered_in_the_parent(registered):
    """Once `NameNotFound: Environment ... doesn't exist` in the worker."""
    env = ExternalProcess(lambda: gym.make(registered), main_module=False)
    try:
        observ, _ = env.reset(seed=0)
        assert np.array_equal(observ, np.zeros(2))
        truncated = [env.step(np.zeros(1))[3] for _ in range(3)]
        # The registered time limit travelled with the spec.
        assert truncated == [False, False, True]
    finally:
        env.close()


@pytest.fixture(name='old_gym')
def _old_gym_fixture(tmp_path, monkeypatch):
    """Old gym with `OldGymPendulum-v0` registered by an import here."""
    worker_testing.write_old_gym(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module('old_gym_tasks')
    yield importlib.import_module('old_gym_compat')
    for name in worker_testing.OLD_GYM_MODULES:
        sys.modules.pop(name, None)


def test_a_worker_makes_an_id_registered_in_old_gym(old_gym):
    """PyBullet's 2017 ids, registered in old gym's registry by `import
    pybullet_envs`: once `NameNotFound: Environment ... doesn't exist` in
    the worker."""
    env = ExternalProcess(
        functools.partial(old_gym.make, 'OldGymPendulum-v0'),
        main_module=False)
    try:
        observ, _ = env.reset(seed=0)
    finally:
        env.close()
    expected, _ = gym.make('Pendulum-v1').reset(seed=0)
    assert observ.tolist() == expected.tolist()


def test_capture_leaves_out_gymnasiums_own_tasks(registered):
    ids = [pickle.loads(payload).id
           for _, payload in env_registry.capture()]
    assert registered in ids
    assert 'Pendulum-v1' not in ids


def test_restore_keeps_the_local_registration(registered):
    specs = env_registry.capture()
    local = gym.envs.registry[registered]
    env_registry.restore(specs)
    assert gym.envs.registry[registered] is local
