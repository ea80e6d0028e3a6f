"""Tests for the batch stepped in slices by worker processes."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import gc
import os
import signal
import unittest

import gymnasium as gym
import numpy as np
import pytest

from agents.testing import env_contract
from agents.testing.mock_environment import MockEnvironment
from agents.tools.sliced_batch_env import SlicedBatchEnv
from agents.testing import worker_testing

_DURATIONS = worker_testing.MIXED_DURATIONS


class _InfoEnvironment(MockEnvironment):
    """MockEnvironment with an info dict, failing on the action 0.5."""

    def step(self, action):
        """Raise for the action 0.5, else step and describe the step."""
        if np.asarray(action).flat[0] == 0.5:
            raise ValueError('refusing 0.5')
        observ, reward, terminated, truncated, _ = super().step(action)
        info = {'step': self.steps[-1], 'x': np.float64(0.5),
                'y': np.float32(reward), 'type': type(action).__name__}
        return observ, reward, terminated, truncated, info


def _constructors(durations=_DURATIONS):
    return [lambda duration=duration: _InfoEnvironment(durations=(duration,))
            for duration in durations]


_children = worker_testing.descendants


@pytest.fixture(name='batch_env')
def _batch_env_fixture():
    batch_env = SlicedBatchEnv(_constructors(), num_workers=2)
    yield batch_env
    batch_env.close()


_trace = worker_testing.step_trace


def test_step_values_match_the_in_process_batch(batch_env):
    """Slices give the exact trace of every environment."""
    assert batch_env.slices == ((0, 2), (2, 3))
    assert _trace(batch_env, 4) == worker_testing.MIXED_TRACE
    assert [env.steps for env in batch_env] == [
        [2, 2, 0], [3, 1], [1, 1, 1, 1, 0]]


def test_outputs_and_infos_keep_their_types(batch_env):
    """Outputs have the documented dtypes; infos arrive exactly."""
    info = worker_testing.step_with_checked_types(batch_env)
    assert sorted(info) == ['infos', 'restarted', 'terminated', 'truncated']
    assert info['restarted'].tolist() == [False] * 3
    assert info['infos'] == ({'step': 1, 'x': 0.5, 'y': 1.0,
                              'type': 'ndarray'},) * 3
    assert [type(value) for value in info['infos'][2].values()] == [
        int, np.float64, np.float32, str]


def test_discrete_actions_arrive_as_python_integers():
    """Discrete actions are checked and handed on as ints."""
    batch_env = SlicedBatchEnv(
        [lambda: _InfoEnvironment(discrete=3)] * 3, num_workers=2)
    try:
        batch_env.reset()
        _, _, _, info = batch_env.step(np.array([2, 0, 1]))
        assert [info_['type'] for info_ in info['infos']] == ['int'] * 3
        assert [env.actions[-1].tolist() for env in batch_env] == [2, 0, 1]
        with pytest.raises(ValueError) as error:
            batch_env.step([1, 3, 0])
        assert str(error.value) == (
            'Action np.int64(3) of environment 1 is outside the action space '
            'Discrete(3).')
    finally:
        batch_env.close()


def test_reset_some_indices_with_seeds(batch_env):
    """Resets reach the named environments; environment i gets seed + i."""
    batch_env.reset(seed=10)
    batch_env.step(np.zeros((3, 3), np.float32))
    observ = batch_env.reset(np.array([2, 0]), seed=5)
    np.testing.assert_array_equal(observ, np.zeros((2, 2)))
    batch_env.reset([1])
    assert [env.seeds for env in batch_env] == [[10, 5], [11, None], [12, 7]]
    observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
    assert observ[:, 0].tolist() == [1, 1, 1]
    assert batch_env.reset([]).shape == (0, 2)


def test_bad_actions_indices_and_seeds_are_refused(batch_env):
    """Bad input raises the errors of BatchEnv before any step."""
    worker_testing.check_bad_input_is_refused(batch_env)


def test_bad_arguments_raise():
    """Constructors and worker counts are checked."""
    with pytest.raises(ValueError, match='at least one environment'):
        SlicedBatchEnv([])
    with pytest.raises(TypeError, match='Constructor 1 of SlicedBatchEnv'):
        SlicedBatchEnv([MockEnvironment, MockEnvironment()])
    for num_workers in (0, True, 1.0):
        with pytest.raises(ValueError, match=(
                '^num_workers must be a positive integer or None, got '
                f'{num_workers!r}.$')):
            SlicedBatchEnv([MockEnvironment], num_workers=num_workers)


def test_one_worker_per_core_at_most_one_per_environment():
    """The default is a worker per core; slices differ by one at most."""
    children = _children()
    batch_env = SlicedBatchEnv([MockEnvironment] * 5, num_workers=3)
    try:
        assert batch_env.slices == ((0, 2), (2, 4), (4, 5))
        assert len(batch_env.workers) == 3
        assert len(_children() - children) == 3
    finally:
        batch_env.close()
    batch_env = SlicedBatchEnv([MockEnvironment] * 2, num_workers=4)
    try:
        assert batch_env.slices == ((0, 1), (1, 2))
    finally:
        batch_env.close()
    batch_env = SlicedBatchEnv([MockEnvironment] * 64)
    try:
        assert len(batch_env.workers) == len(os.sched_getaffinity(0))
    finally:
        batch_env.close()


def test_error_names_the_index_and_keeps_workers_in_step(batch_env):
    """An environment's error names its index in the whole batch."""
    batch_env.reset()
    actions = np.zeros((3, 3), np.float32)
    actions[1, 0] = 0.5
    with pytest.raises(
            ValueError, match='(?s)^Environment 1 of the batch failed: '
            'ValueError in environment 1 of <ExternalProcess .*'
            'refusing 0.5'):
        batch_env.step(actions)
    # The other environments stepped once, the failed one not.
    assert [env.steps for env in batch_env] == [[1], [0], [1]]
    batch_env.reset([2])
    observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
    assert observ[:, 0].tolist() == [2, 1, 1]


def test_constructor_error_names_the_index():
    """A failing constructor names its environment."""

    def fail():
        raise ValueError('cannot build')

    children = _children()
    with pytest.raises(ValueError, match=(
            '(?s)Environment 2 of the batch failed: cannot build')):
        SlicedBatchEnv([MockEnvironment, MockEnvironment, fail],
                       num_workers=2)
    gc.collect()
    assert _children() <= children


def test_killed_worker_fails_clearly_and_leaves_no_process():
    """A worker killed mid-batch raises an error naming its environments."""
    worker_testing.check_killed_worker(
        SlicedBatchEnv([MockEnvironment] * 4, num_workers=2), 3,
        'Environments 2 to 3 of the batch failed', [0, 1])


def _restartable(count=4):
    return SlicedBatchEnv(
        [lambda: _InfoEnvironment(durations=(5,))] * count, num_workers=2,
        restart=True)


def test_restart_replaces_the_whole_worker_in_a_step():
    """A failed environment restarts every environment of its worker."""
    batch_env = _restartable()
    try:
        batch_env.reset()
        batch_env.step(np.zeros((4, 3), np.float32))
        pid = batch_env[0].pid
        actions = np.zeros((4, 3), np.float32)
        actions[1, 0] = 0.5
        observ, reward, done, info = batch_env.step(actions)
        assert batch_env.restarts == 2 and batch_env[1].pid != pid
        assert pid not in _children()
        assert observ[:, 0].tolist() == [0, 0, 2, 2]
        assert reward.tolist() == [0, 0, 2, 2]
        assert done.tolist() == [False] * 4
        assert info['restarted'].tolist() == [True, True, False, False]
        assert info['infos'][:2] == ({}, {})
        _, _, _, info = batch_env.step(np.zeros((4, 3), np.float32))
        assert info['restarted'].tolist() == [False] * 4
        assert [env.steps for env in batch_env] == [[1], [1], [3], [3]]
        # A replacement that fails before its first step raises.
        os.kill(batch_env[2].pid, signal.SIGKILL)
        batch_env.step(np.zeros((4, 3), np.float32))
        assert batch_env.restarts == 4
        with pytest.raises(ValueError, match=(
                '^Environment 3 of the batch failed after a restart: ')):
            batch_env.step(np.where(np.arange(4)[:, None] == 3, 0.5, 0.0)
                           * np.ones((4, 3)))
    finally:
        batch_env.close()


def test_restart_in_a_reset_hands_out_the_others_next_step():
    """Environments restarted along with a reset one report next step."""
    batch_env = _restartable()
    try:
        batch_env.reset()
        batch_env.step(np.zeros((4, 3), np.float32))
        batch_env.step(np.zeros((4, 3), np.float32))
        os.kill(batch_env[2].pid, signal.SIGKILL)
        observ = batch_env.reset([2, 0], seed=7)
        assert observ[:, 0].tolist() == [0, 0]
        assert batch_env.restarts == 2
        assert [env.seeds for env in batch_env] == [
            [None, 7], [None], [9], [None]]
        observ, reward, _, info = batch_env.step(
            np.zeros((4, 3), np.float32))
        assert observ[:, 0].tolist() == [1, 3, 1, 0]
        assert reward.tolist() == [1, 3, 1, 0]
        assert info['restarted'].tolist() == [False, False, False, True]
        # Environment 3 was left alone for its first observation.
        assert [env.steps for env in batch_env] == [[2, 1], [3], [1], [0]]
        _, _, _, info = batch_env.step(np.zeros((4, 3), np.float32))
        assert info['restarted'].tolist() == [False] * 4
        assert [env.steps for env in batch_env] == [[2, 2], [4], [2], [1]]
    finally:
        batch_env.close()


def test_items_forward_attributes_and_methods(batch_env):
    """Indexing gives proxies that read and call in the worker."""
    batch_env.reset()
    assert batch_env[1].duration == 3
    assert batch_env[2].render().shape == (16, 16, 3)
    assert batch_env[0].observation_space == batch_env.observation_space
    assert batch_env.metadata == MockEnvironment.metadata
    assert batch_env[0].pid == batch_env[1].pid != batch_env[2].pid
    with pytest.raises(AttributeError):
        _ = batch_env[0].no_such_attribute
    with pytest.raises(AttributeError):
        _ = batch_env[0]._private


def test_close_and_garbage_collection_leave_no_process():
    """Closing or collecting the batch ends its workers."""
    worker_testing.check_close_and_collection(
        lambda: SlicedBatchEnv([MockEnvironment] * 3, num_workers=2))


def test_gymnasium_tasks_match_in_process_steps():
    """A seeded Pendulum batch steps exactly as in process."""
    constructors = [lambda seed=seed: _seeded('Pendulum-v1', seed)
                    for seed in range(3)]
    batch_env = SlicedBatchEnv(constructors, num_workers=2)
    envs = [constructor() for constructor in constructors]
    try:
        actions = np.linspace(-2, 2, 3, dtype=np.float32)[:, None]
        observ, reward, _, _ = batch_env.step(actions)
        expected = [env.step(action) for env, action in zip(envs, actions)]
        np.testing.assert_array_equal(
            observ, np.stack([result[0] for result in expected]))
        np.testing.assert_array_equal(
            reward, np.array([result[1] for result in expected], np.float32))
    finally:
        batch_env.close()


def _seeded(task, seed):
    env = gym.make(task)
    env.reset(seed=seed)
    return env


class SlicedBatchEnvContractTest(
        env_contract.BatchEnvironmentContractMixin, unittest.TestCase):
    """The batched contract holds for slices in worker processes."""

    def make_batch_env(self):
        """The batch under test."""
        return SlicedBatchEnv(
            [lambda: MockEnvironment(durations=(2, 3))] * 3, num_workers=2)


def test_env_state_is_read_and_set_in_the_workers():
    """The states of every slice, in order, set back, step alike."""
    batch_env = SlicedBatchEnv(
        [lambda: gym.make('Pendulum-v1')] * 3, num_workers=2)
    try:
        batch_env.reset(seed=0)
        state = batch_env.get_env_state()
        assert len(state) == 3
        first = batch_env.step(np.ones((3, 1)))[0]
        batch_env.set_env_state(state)
        assert np.array_equal(batch_env.step(np.ones((3, 1)))[0], first)
    finally:
        batch_env.close()
