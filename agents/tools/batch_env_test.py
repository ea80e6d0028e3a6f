"""Tests for the batch of environments."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import os
import re
import signal
import subprocess
import sys
import unittest

import gymnasium as gym
import numpy as np
import pytest

from agents.testing import env_contract
from agents.tools.batch_env import BatchEnv
from agents.tools.external_process import ExternalProcess
from agents.testing.mock_environment import MockEnvironment
from agents.testing import worker_testing

_DURATIONS = worker_testing.MIXED_DURATIONS


class _FailingEnvironment(MockEnvironment):
    """MockEnvironment that fails on an action with first component 0.5."""

    def step(self, action):
        """Raise for the action 0.5, else step."""
        if np.asarray(action).flat[0] == 0.5:
            raise ValueError('refusing 0.5')
        return super().step(action)


def _mock_envs():
    return [MockEnvironment(durations=(duration,)) for duration in _DURATIONS]


@pytest.fixture(name='external_batch_envs', scope='module')
def _external_batch_envs_fixture():
    # Both batches share the workers; each closes them when collected, so
    # the fixture holds both until the module's tests are done.
    envs = [ExternalProcess(lambda duration=duration: _FailingEnvironment(
        durations=(duration,))) for duration in _DURATIONS]
    batch_envs = {blocking: BatchEnv(envs, blocking) for blocking in (
        True, False)}
    yield batch_envs
    batch_envs[True].close()


_children = worker_testing.descendants


_trace = worker_testing.step_trace


def test_step_values_of_envs_with_different_durations():
    """Stepping in process gives the exact trace of every environment."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    assert _trace(batch_env, 4) == worker_testing.MIXED_TRACE
    assert [env.steps for env in batch_env] == [
        [2, 2, 0], [3, 1], [1, 1, 1, 1, 0]]


@pytest.mark.parametrize('blocking', [True, False])
def test_step_values_over_external_processes(external_batch_envs, blocking):
    """Workers give the same trace, blocking or not."""
    batch_env = external_batch_envs[blocking]
    assert _trace(batch_env, 4) == worker_testing.MIXED_TRACE


def test_output_types():
    """Outputs have the documented dtypes and shapes."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    info = worker_testing.step_with_checked_types(batch_env)
    assert info['infos'] == ({}, {}, {})


def test_truncated_episodes_are_done_and_flagged():
    """Truncation sets done and the truncated flag only."""
    envs = [MockEnvironment(durations=(1,), truncate=True),
            MockEnvironment(durations=(2,))]
    batch_env = BatchEnv(envs, blocking=True)
    batch_env.reset()
    _, _, done, info = batch_env.step(np.zeros((2, 3)))
    assert done.tolist() == [True, False]
    assert info['truncated'].tolist() == [True, False]
    assert info['terminated'].tolist() == [False, False]


@pytest.mark.parametrize('blocking', [True, False])
def test_reset_some_indices(external_batch_envs, blocking):
    """Resetting some environments leaves the others running."""
    batch_env = external_batch_envs[blocking]
    batch_env.reset()
    batch_env.step(np.zeros((3, 3), np.float32))
    observ = batch_env.reset(np.array([0, 2]))
    np.testing.assert_array_equal(observ, np.zeros((2, 2)))
    observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
    assert observ[:, 0].tolist() == [1, 2, 1]
    assert batch_env.reset([]).shape == (0, 2)


def test_reset_seeds_offset_by_index():
    """Environment i receives the seed plus i."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    batch_env.reset(seed=10)
    batch_env.reset([2], seed=5)
    batch_env.reset([1])
    assert [env.seeds for env in batch_env] == [
        [10], [11, None], [12, 7]]


def test_bad_input_raises_before_any_step():
    """Bad actions, indices and seeds raise clear errors."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    worker_testing.check_bad_input_is_refused(batch_env)
    with pytest.raises(ValueError, match='integer environment indices'):
        batch_env.reset([0.5])


def test_scalar_and_wrong_shape_raise():
    """A scalar or actions of the wrong shape are refused before any step."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    batch_env.reset()
    with pytest.raises(ValueError, match='got the scalar'):
        batch_env.step(0.0)
    with pytest.raises(ValueError, match=r'Expected actions of shape '
                                         r'\(3, 3\), got \(3, 2\)'):
        batch_env.step(np.zeros((3, 2)))
    assert [env.steps for env in batch_env] == [[0], [0], [0]]


def test_nan_action_names_env():
    """NaN actions lie outside the space; the error names the env."""
    batch_env = BatchEnv(_mock_envs(), blocking=True)
    batch_env.reset()
    actions = np.zeros((3, 3), np.float32)
    actions[2, 0] = np.nan
    with pytest.raises(ValueError, match='of environment 2 is outside'):
        batch_env.step(actions)
    assert [env.steps for env in batch_env] == [[0], [0], [0]]


def test_discrete_actions():
    """Discrete actions are range checked and passed as integers."""
    envs = [MockEnvironment(discrete=3) for _ in range(2)]
    batch_env = BatchEnv(envs, blocking=True)
    batch_env.reset()
    batch_env.step(np.array([2, 0]))
    assert [env.actions[-1].tolist() for env in envs] == [2, 0]
    with pytest.raises(ValueError) as info:
        batch_env.step([1, 3])
    assert str(info.value) == (
        'Action np.int64(3) of environment 1 is outside the action space '
        'Discrete(3).')
    with pytest.raises(ValueError, match='Expected integer actions'):
        batch_env.step([1.0, 0.0])


def test_other_action_spaces_are_checked_per_env():
    """Other spaces check each action with the space."""
    envs = [MockEnvironment() for _ in range(2)]
    for env in envs:
        env.action_space = gym.spaces.MultiBinary(2)
    batch_env = BatchEnv(envs, blocking=True)
    batch_env.reset()
    batch_env.step([np.array([0, 1], np.int8), np.array([1, 1], np.int8)])
    with pytest.raises(ValueError, match='of environment 0 is outside'):
        batch_env.step([np.array([2, 1], np.int8), np.array([1, 1], np.int8)])


def test_rejects_envs_with_different_spaces():
    """Spaces differing from the first environment are refused."""
    envs = _mock_envs() + [MockEnvironment(observ_shape=(4,))]
    with pytest.raises(ValueError) as info:
        BatchEnv(envs, blocking=True)
    assert str(info.value) == (
        'Environment 3 has the observation space Box(-inf, inf, (4,), '
        'float32); expected Box(-inf, inf, (2,), float32) like environment '
        '0.')
    envs = _mock_envs() + [MockEnvironment(discrete=2)]
    with pytest.raises(ValueError, match='Environment 3 has the action space'):
        BatchEnv(envs, blocking=True)
    with pytest.raises(ValueError, match='at least one environment'):
        BatchEnv([], blocking=True)


def _refused_step(batch_env):
    """Reset, step with an action that environment 1 refuses; the error."""
    batch_env.reset()
    actions = np.zeros((len(batch_env), 3), np.float32)
    actions[1, 0] = 0.5
    with pytest.raises(ValueError) as info:
        batch_env.step(actions)
    return str(info.value)


def test_error_in_one_worker_keeps_the_others_in_step(external_batch_envs):
    """An error of one worker leaves all workers in step."""
    batch_env = external_batch_envs[False]
    assert re.match(
        '(?s)^Environment 1 of the batch failed: .*refusing 0.5',
        _refused_step(batch_env))
    batch_env.reset([2])
    observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
    assert observ[:, 0].tolist() == [2, 1, 1]


def test_killed_worker_fails_the_batch_step_clearly():
    """A worker killed mid-batch raises an error naming its pid."""
    worker_testing.check_killed_worker(BatchEnv(
        [ExternalProcess(MockEnvironment) for _ in range(3)], blocking=False),
        1, 'Environment 1 of the batch failed', [0, 2])


def test_in_process_error_names_the_environment():
    """An error of an in-process environment names its index too."""
    batch_env = BatchEnv([_FailingEnvironment() for _ in range(2)], True)
    assert _refused_step(batch_env) == (
        'Environment 1 of the batch failed: refusing 0.5')
    assert batch_env[0].steps == [1]


def _restartable_batch(blocking):
    """Three workers and a restart function that records its calls."""
    restarts = []

    def restart(index):
        restarts.append(index)
        return ExternalProcess(lambda: _FailingEnvironment(durations=(5,)))

    envs = [ExternalProcess(lambda: _FailingEnvironment(durations=(5,)))
            for _ in range(3)]
    return BatchEnv(envs, blocking, restart=restart), restarts


@pytest.mark.parametrize('blocking', [True, False])
def test_restart_replaces_a_killed_worker(blocking):
    """A killed worker is replaced, reset and flagged; the rest step on."""
    batch_env, restarts = _restartable_batch(blocking)
    try:
        batch_env.reset()
        batch_env.step(np.zeros((3, 3), np.float32))
        pid = batch_env[1].pid
        os.kill(pid, signal.SIGKILL)
        observ, reward, done, info = batch_env.step(
            np.zeros((3, 3), np.float32))
        assert restarts == [1] and batch_env.restarts == 1
        assert batch_env[1].pid != pid and pid not in _children()
        assert observ[:, 0].tolist() == [2, 0, 2]
        assert reward.tolist() == [2, 0, 2]
        assert done.tolist() == [False] * 3
        assert info['restarted'].tolist() == [False, True, False]
        assert info['terminated'].tolist() == [False] * 3
        assert info['truncated'].tolist() == [False] * 3
        assert batch_env[1].steps == [0]
        _, _, _, info = batch_env.step(np.zeros((3, 3), np.float32))
        assert info['restarted'].tolist() == [False] * 3
        assert [env.steps for env in batch_env] == [[3], [1], [3]]
    finally:
        batch_env.close()


def test_restart_on_error_and_failed_reset():
    """Failed steps and resets restart, a failing replacement raises."""
    batch_env, restarts = _restartable_batch(False)
    try:
        batch_env.reset()
        os.kill(batch_env[2].pid, signal.SIGKILL)
        observ = batch_env.reset([2, 0])
        assert observ[:, 0].tolist() == [0, 0] and restarts == [2]
        actions = np.zeros((3, 3), np.float32)
        actions[0, 0] = 0.5
        _, _, _, info = batch_env.step(actions)
        assert info['restarted'].tolist() == [True, False, False]
        assert restarts == [2, 0] and batch_env.restarts == 2
        with pytest.raises(
                ValueError, match='(?s)^Environment 0 of the batch failed '
                'after a restart: .*refusing 0.5'):
            batch_env.step(actions)
        assert restarts == [2, 0]
    finally:
        batch_env.close()


def test_len_getitem_and_attributes():
    """The batch has a length, items and forwarded attributes."""
    envs = _mock_envs()
    batch_env = BatchEnv(envs, blocking=True)
    assert len(batch_env) == 3
    assert batch_env[1] is envs[1]
    assert batch_env.observation_space == envs[0].observation_space
    assert batch_env.action_space == envs[0].action_space
    assert batch_env.metadata == envs[0].metadata
    with pytest.raises(AttributeError):
        _ = batch_env._envs_private


def test_close_and_garbage_collection_leave_no_process():
    """Closing or collecting the batch ends its workers."""
    worker_testing.check_close_and_collection(lambda: BatchEnv(
        [ExternalProcess(MockEnvironment) for _ in range(2)], blocking=False))


class BatchEnvContractTest(
        env_contract.BatchEnvironmentContractMixin, unittest.TestCase):
    """The batched contract holds for in-process environments."""

    def make_batch_env(self):
        """The batch under test."""
        return BatchEnv(_mock_envs(), blocking=True)


class ExternalBatchEnvContractTest(
        env_contract.BatchEnvironmentContractMixin, unittest.TestCase):
    """The batched contract holds for worker processes stepped together."""

    def make_batch_env(self):
        """The batch under test."""
        return BatchEnv([
            ExternalProcess(lambda: MockEnvironment(durations=(2, 3)))
            for _ in range(2)], blocking=False)


def test_a_batch_left_open_at_exit_closes_without_a_traceback():
    # TensorFlow's exit handlers clear the modules before such a batch goes.
    script = (
        'import tensorflow\n'
        'from agents.tools import batch_env\n'
        'from agents.testing.mock_environment import MockEnvironment\n'
        'batch_env.KEEP = batch_env.BatchEnv([MockEnvironment()], True)\n')
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        timeout=120, check=False)
    assert result.returncode == 0
    assert 'Exception ignored' not in result.stderr, result.stderr
