"""Tests for the batch wrappers: the per-environment wrappers' results."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import unittest

import gymnasium as gym
import numpy as np
import pytest

from agents.tools import batch_wrappers
from agents.testing import env_contract
from agents.tools import wrappers
from agents.tools.batch_env import BatchEnv
from agents.testing.mock_environment import MockEnvironment


class _BoundedEnvironment(MockEnvironment):
    """Mock with finite float64 observation bounds and asymmetric actions."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.observation_space = gym.spaces.Box(0, 10, (2,), np.float64)
        self.action_space = gym.spaces.Box(-2, 3, (3,), np.float32)


def _per_env(env, max_length):
    """The wrappers of `env_construction.create_environment`, per env."""
    env = wrappers.LimitDuration(env, max_length)
    env = wrappers.RangeNormalize(env)
    env = wrappers.ClipAction(env)
    return wrappers.ConvertTo32Bit(env)


def _batch(batch_env, max_length):
    """The same wrappers on the batch."""
    batch_env = batch_wrappers.LimitDuration(batch_env, max_length)
    batch_env = batch_wrappers.RangeNormalize(batch_env)
    batch_env = batch_wrappers.ClipAction(batch_env)
    return batch_wrappers.ConvertTo32Bit(batch_env)


def _trace(batch_env, actions):
    """Observations, rewards and flags of stepping with given actions."""
    trace = [batch_env.reset(seed=3)]
    for action in actions:
        observ, reward, done, info = batch_env.step(action)
        trace += [observ, reward, done, info['terminated'], info['truncated']]
        if done.any():
            trace.append(batch_env.reset(np.flatnonzero(done)))
    return trace


@pytest.mark.parametrize('make', [
    lambda: gym.make('Pendulum-v1'),
    lambda: _BoundedEnvironment(durations=(3, 7)),
], ids=['pendulum', 'float64-bounds'])
def test_same_results_as_the_per_environment_wrappers(make):
    """Spaces, observations, rewards and flags match value for value."""
    per_env = BatchEnv([_per_env(make(), 5) for _ in range(3)], True)
    batched = _batch(BatchEnv([make() for _ in range(3)], True), 5)
    expected = _assert_same_results(per_env, batched)
    assert any(step.any() for step in expected[4::5])  # Some truncated.


@pytest.mark.parametrize('name, args, bound', [
    ('LimitDuration', (5,), 1), ('RangeNormalize', (), 1),
    ('ClipAction', (), 3), ('ConvertTo32Bit', (), 1)])
def test_each_wrapper_gives_its_per_environment_twin_s_results(
        name, args, bound):
    """Each batch wrapper alone matches the per-environment one."""
    per_env = BatchEnv([
        getattr(wrappers, name)(_BoundedEnvironment(durations=(3, 7)), *args)
        for _ in range(3)], True)
    batched = getattr(batch_wrappers, name)(BatchEnv([
        _BoundedEnvironment(durations=(3, 7)) for _ in range(3)], True),
        *args)
    _assert_same_results(per_env, batched, bound)


def _assert_same_results(per_env, batched, bound=3):
    """Step both with the same actions; return the per-env trace."""
    assert batched.observation_space == per_env.observation_space
    assert batched.action_space == per_env.action_space
    shape = (3,) + per_env.action_space.shape
    # Beyond the bounds too where `bound` is 3, where clipping applies.
    actions = np.random.default_rng(0).uniform(-bound, bound, (12,) + shape)
    actions = actions.astype(np.float32)
    expected = _trace(per_env, actions)
    result = _trace(batched, actions)
    assert len(result) == len(expected)
    for value, want in zip(result, expected):
        assert value.dtype == want.dtype
        np.testing.assert_array_equal(value, want)
    return expected


def test_limit_duration_truncates_and_refuses_ended_episodes():
    """The step reaching the limit truncates; the next one raises."""
    batch_env = batch_wrappers.LimitDuration(BatchEnv(
        [MockEnvironment(durations=(2,)), MockEnvironment(durations=(9,))],
        True), 3)
    with pytest.raises(RuntimeError) as error:
        batch_env.step(np.zeros((2, 3)))
    assert str(error.value) == (
        'Reset environment 0 of the batch before stepping it.')
    batch_env.reset()
    flags = []
    for _ in range(2):
        _, _, done, info = batch_env.step(np.zeros((2, 3)))
        flags.append((done.tolist(), info['truncated'].tolist()))
    assert flags == [([False, False], [False, False]),
                     ([True, False], [False, False])]
    with pytest.raises(RuntimeError) as error:
        batch_env.step(np.zeros((2, 3)))
    assert str(error.value) == (
        'The episode of environment 0 of the batch ended after 2 steps '
        '(limit 3); reset the environment before stepping it again.')
    batch_env.reset([0])
    _, _, done, info = batch_env.step(np.zeros((2, 3)))
    assert done.tolist() == [False, True]
    assert info['truncated'].tolist() == [False, True]
    assert info['terminated'].tolist() == [False, False]


def test_limit_duration_state_is_saved_and_set_with_the_batch_s():
    """The step counts and flags come back with the environments' state."""
    batch_env = batch_wrappers.RangeNormalize(batch_wrappers.LimitDuration(
        BatchEnv([MockEnvironment(durations=(9,)) for _ in range(2)], True),
        3))
    batch_env.reset([0])
    state = batch_env.get_env_state()
    assert sorted(state['batch']) == ['batch', 'ended', 'started', 'steps']
    batch_env.reset([1])
    batch_env.step(np.zeros((2, 3)))
    batch_env.set_env_state(state)
    limit = batch_env.batch_env._limit
    assert limit.steps.tolist() == [0, 0]
    assert limit.started.tolist() == [True, False]
    assert limit.ended.tolist() == [False, False]
    with pytest.raises(RuntimeError, match='Reset environment 1 of'):
        batch_env.step(np.zeros((2, 3)))


def test_limit_duration_restarts_the_count_of_restarted_environments():
    """A replaced environment begins a new episode of the full length."""

    class Failing(MockEnvironment):
        """Raises on the second step of its first episode."""

        def step(self, action):
            if self.steps == [1]:
                raise RuntimeError('simulator diverged')
            return super().step(action)

    envs = [MockEnvironment(durations=(9,)), Failing(durations=(9,))]
    batch_env = batch_wrappers.LimitDuration(BatchEnv(
        envs, True, restart=lambda index: MockEnvironment(durations=(9,))), 3)
    batch_env.reset()
    done_flags = []
    for _ in range(5):
        _, _, done, info = batch_env.step(np.zeros((2, 3)))
        done_flags.append(done.tolist())
        if done[0]:
            batch_env.reset([0])
        assert not info['truncated'][info['restarted']].any()
    # Environment 1 restarts on its second step and is truncated three
    # steps later.
    assert done_flags == [
        [False, False], [False, False], [True, False], [False, False],
        [False, True]]
    assert batch_env.restarts == 1


def test_invalid_arguments():
    """Durations, normalisation switches and spaces are checked."""
    batch_env = BatchEnv([MockEnvironment(discrete=3) for _ in range(2)], True)
    with pytest.raises(ValueError) as error:
        batch_wrappers.LimitDuration(batch_env, 0)
    assert str(error.value) == 'duration must be a positive integer, got 0.'
    with pytest.raises(ValueError) as error:
        batch_wrappers.RangeNormalize(batch_env, observ='yes')
    assert str(error.value) == (
        "observ must be None, True or False, got 'yes'.")
    with pytest.raises(ValueError) as error:
        batch_wrappers.ClipAction(batch_env)
    assert str(error.value) == 'ClipAction needs a Box space, got Discrete(3).'


def test_forwarding():
    """Length, items and other attributes come from the wrapped batch."""
    envs = [MockEnvironment() for _ in range(2)]
    batch_env = BatchEnv(envs, True)
    wrapped = _batch(batch_env, 5)
    assert len(wrapped) == 2
    assert wrapped[1] is envs[1]
    assert wrapped.restarts == 0
    assert wrapped.batch_env.batch_env.batch_env.batch_env is batch_env
    with pytest.raises(AttributeError):
        _ = wrapped._batch
    wrapped.close()
    wrapped.close()


def test_convert_to_32bit():
    """Float64 observations become float32, also of resets."""
    envs = [_BoundedEnvironment() for _ in range(2)]
    batch_env = batch_wrappers.ConvertTo32Bit(BatchEnv(envs, True))
    assert batch_env.observation_space.dtype == np.float32
    assert batch_env.reset().dtype == np.float32
    observ, reward, _, _ = batch_env.step(np.zeros((2, 3), np.float32))
    assert observ.dtype == np.float32 and reward.dtype == np.float32
    assert observ.tolist() == [[1, 1], [1, 1]]


class BatchWrappersContractTest(
        env_contract.BatchEnvironmentContractMixin, unittest.TestCase):
    """The batched contract holds for a batch under the standard wrappers."""

    def make_batch_env(self):
        """The batch under test."""
        return _batch(BatchEnv(
            [_BoundedEnvironment(durations=(2, 3)) for _ in range(2)], True), 5)
