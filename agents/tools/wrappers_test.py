"""Tests for the environment wrappers."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import os
import subprocess
import sys
import unittest

import gymnasium as gym
import numpy as np
import pytest

from agents.testing import env_contract
from agents.tools import wrappers
from agents.testing.mock_environment import MockEnvironment


class _ScriptedEnvironment(gym.Env):
    """Environment that returns the given observations in turn.

    The reward of step `k` is `k`; the episode terminates on the last
    observation. Actions are recorded.
    """

    def __init__(self, observation_space, observs, action_space=None):
        self.observation_space = observation_space
        self.action_space = action_space or gym.spaces.Box(
            -1.0, 1.0, (1,), np.float32)
        self.actions = []
        self._observs = observs
        self._index = 0

    def reset(self, *, seed=None, options=None):
        """Start at the first observation."""
        del seed, options
        self._index = 0
        return self._observs[0], {}

    def step(self, action):
        """Move on to the next observation."""
        self.actions.append(action)
        self._index += 1
        terminated = self._index == len(self._observs) - 1
        return (self._observs[self._index], float(self._index), terminated,
                False, {})

    def render(self):
        """Render nothing."""
        return None


class _CountingSpacesEnvironment(MockEnvironment):
    """MockEnvironment that counts reads of its spaces."""

    def __init__(self):
        self.reads = 0
        super().__init__()

    def __getattribute__(self, name):
        if name in ('observation_space', 'action_space'):
            object.__setattr__(self, 'reads', object.__getattribute__(
                self, 'reads') + 1)
        return object.__getattribute__(self, name)


def _steps(env, count, action=None):
    """Reset, then step `count` times; return the step results."""
    env.reset()
    if action is None:
        action = np.zeros(3, np.float32)
    return [env.step(action) for _ in range(count)]


def test_auto_reset_resets_on_the_step_after_the_end():
    """The step after the end resets and ignores its action."""
    inner = MockEnvironment(durations=(2,))
    env = wrappers.AutoReset(inner)
    results = _steps(env, 4)
    assert [(observ[0], reward, terminated, truncated)
            for observ, reward, terminated, truncated, _ in results] == [
                (1, 1, False, False), (2, 2, True, False),
                (0, 0.0, False, False), (1, 1, False, False)]
    assert results[2][4] == {}
    assert inner.steps == [2, 1]
    assert len(inner.actions) == 3


def test_auto_reset_forgets_the_end_on_reset():
    """An explicit reset after the end is not followed by another."""
    inner = MockEnvironment(durations=(1,))
    env = wrappers.AutoReset(inner)
    _steps(env, 1)
    env.reset()
    observ, reward, terminated, _, _ = env.step(np.zeros(3))
    assert (observ[0], reward, terminated) == (1, 1, True)
    assert inner.steps == [1, 1]


def test_action_repeat_sums_rewards_and_stops_at_the_end():
    """Rewards of repeated steps add up; the episode end cuts short."""
    inner = MockEnvironment(durations=(5,))
    env = wrappers.ActionRepeat(inner, 2)
    results = _steps(env, 3)
    assert [(observ[0], reward, terminated)
            for observ, reward, terminated, _, _ in results] == [
                (2, 3, False), (4, 7, False), (5, 5, True)]
    assert inner.steps == [5]


@pytest.mark.parametrize('amount', [0, -1, 1.5, True, '2'])
def test_action_repeat_rejects_amount(amount):
    """The amount must be a positive integer."""
    with pytest.raises(ValueError, match=(
            f'amount must be a positive integer, got {amount!r}')):
        wrappers.ActionRepeat(MockEnvironment(), amount)


def test_random_start_takes_up_to_max_steps():
    """Seeded resets draw every count from 0 to max_steps reproducibly."""
    inner = MockEnvironment(durations=(100,))
    env = wrappers.RandomStart(inner, 3)
    counts = []
    for seed in range(40):
        observ, info = env.reset(seed=seed)
        counts.append(info['random_start_steps'])
        np.testing.assert_array_equal(observ, [counts[-1]] * 2)
    assert set(counts) == {0, 1, 2, 3}
    assert inner.steps == counts
    repeated = [env.reset(seed=seed)[1]['random_start_steps']
                for seed in range(40)]
    assert repeated == counts


def test_random_start_restarts_episodes_that_end():
    """An episode that ends during the random steps is started over."""
    inner = MockEnvironment(durations=(2,))
    env = wrappers.RandomStart(inner, 3)
    for seed in range(10):
        observ, info = env.reset(seed=seed)
        steps = info['random_start_steps']
        assert steps < 2
        assert observ[0] == steps
    assert inner.steps[-1] < 2
    assert 2 in inner.steps


def test_random_start_with_noop_action_and_errors():
    """A no-op action is repeated; impossible starts raise."""
    inner = MockEnvironment(durations=(100,), discrete=4)
    env = wrappers.RandomStart(inner, 5, noop_action=2)
    env.reset(seed=1)
    assert [action.item() for action in inner.actions] == [2] * len(
        inner.actions)
    with pytest.raises(ValueError, match=(
            r'noop_action 7 is not in the action space Discrete\(4\)')):
        wrappers.RandomStart(inner, 5, noop_action=7)
    with pytest.raises(ValueError, match=(
            'max_steps must be a non-negative integer, got -1')):
        wrappers.RandomStart(inner, -1)
    env = wrappers.RandomStart(MockEnvironment(durations=(1,)), 10 ** 6)
    with pytest.raises(RuntimeError, match=(
            'Episodes ended during the random start 10 times')):
        env.reset(seed=0)


def test_frame_history_stacks_past_observations():
    """Offsets select past observations; the first one fills the gaps."""
    env = wrappers.FrameHistory(MockEnvironment(durations=(9,)), (0, 1, 3),
                                flatten=False)
    assert env.observation_space == gym.spaces.Box(
        -np.inf, np.inf, (3, 2), np.float32)
    observ, _ = env.reset()
    np.testing.assert_array_equal(observ, np.zeros((3, 2)))
    results = _steps(env, 4)
    assert [result[0][:, 0].tolist() for result in results] == [
        [1, 0, 0], [2, 1, 0], [3, 2, 0], [4, 3, 1]]
    assert results[0][0].dtype == np.float32


def test_frame_history_flattens_into_the_first_axis():
    """Flattening merges the history with the first observation axis."""
    space = gym.spaces.Box(0, 9, (2, 1), np.float32)
    observs = [np.full((2, 1), value, np.float32) for value in range(4)]
    env = wrappers.FrameHistory(
        _ScriptedEnvironment(space, observs), (0, 2), flatten=True)
    assert env.observation_space == gym.spaces.Box(0, 9, (4, 1), np.float32)
    env.reset()
    env.step(np.zeros(1))
    observ, *_ = env.step(np.zeros(1))
    np.testing.assert_array_equal(observ[:, 0], [2, 2, 0, 0])


@pytest.mark.parametrize('past_indices', [(), (-1, 0), (0.5,), ('0',)])
def test_frame_history_rejects_past_indices(past_indices):
    """Offsets must be a non-empty sequence of non-negative integers."""
    with pytest.raises(ValueError, match='past_indices must be a non-empty'):
        wrappers.FrameHistory(MockEnvironment(), past_indices, False)


def test_frame_history_and_delta_need_reset_and_box():
    """Stepping before reset and non-Box observation spaces raise."""
    for wrapper in (lambda env: wrappers.FrameHistory(env, [0], False),
                    wrappers.FrameDelta):
        env = wrapper(MockEnvironment())
        with pytest.raises(RuntimeError, match='before stepping it'):
            env.step(np.zeros(3))
        inner = MockEnvironment()
        inner.observation_space = gym.spaces.Discrete(3)
        with pytest.raises(ValueError, match=(
                r'needs a Box space, got Discrete\(3\)')):
            wrapper(inner)


def test_frame_delta_observes_differences():
    """Deltas subtract the previous observation; the first is zero."""
    space = gym.spaces.Box(0, 255, (2,), np.uint8)
    observs = [np.array(values, np.uint8)
               for values in ([3, 200], [5, 0], [1, 255])]
    env = wrappers.FrameDelta(_ScriptedEnvironment(space, observs))
    assert env.observation_space == gym.spaces.Box(-255, 255, (2,), np.int16)
    observ, _ = env.reset()
    assert (observ.dtype, observ.tolist()) == (np.int16, [0, 0])
    results = _steps(env, 2, np.zeros(1))
    assert [result[0].tolist() for result in results] == [
        [2, -200], [-4, 255]]


def test_range_normalize_maps_finite_bounds_to_unit_range():
    """Finite dims map to [-1, 1]; infinite dims pass through."""
    observation_space = gym.spaces.Box(
        np.array([0, -np.inf, -2]), np.array([10, np.inf, 2]),
        dtype=np.float64)
    action_space = gym.spaces.Box(
        np.array([0, -1], np.float32), np.array([4, np.inf], np.float32))
    observs = [np.array([5.0, 7.0, 2.0]), np.array([0.0, -3.0, -2.0])]
    inner = _ScriptedEnvironment(observation_space, observs, action_space)
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space == gym.spaces.Box(
        np.array([-1, -np.inf, -1]), np.array([1, np.inf, 1]),
        dtype=np.float64)
    assert env.action_space == gym.spaces.Box(
        np.array([-1, -1], np.float32), np.array([1, np.inf], np.float32))
    observ, _ = env.reset()
    assert observ.tolist() == [0.0, 7.0, 1.0]
    observ, *_ = env.step(np.array([0.5, 9.0], np.float32))
    assert observ.tolist() == [-1.0, -3.0, -1.0]
    assert inner.actions[-1].tolist() == [3.0, 9.0]
    assert inner.actions[-1].dtype == np.float32


def test_range_normalize_integer_observations_become_float32():
    """Integer observations normalise into float32."""
    space = gym.spaces.Box(0, 255, (2,), np.uint8)
    observs = [np.array([0, 255], np.uint8)]
    env = wrappers.RangeNormalize(_ScriptedEnvironment(space, observs))
    assert env.observation_space == gym.spaces.Box(-1, 1, (2,), np.float32)
    observ, _ = env.reset()
    assert (observ.dtype, observ.tolist()) == (np.float32, [-1.0, 1.0])


def test_range_normalize_defaults_and_flags():
    """Unbounded spaces stay; explicit flags switch normalising off."""
    inner = MockEnvironment()
    env = wrappers.RangeNormalize(inner)
    assert env.observation_space is inner.observation_space
    assert env.action_space == gym.spaces.Box(-1, 1, (3,), np.float32)
    space = gym.spaces.Box(0, 4, (1,), np.float32)
    inner = _ScriptedEnvironment(space, [np.array([4.0], np.float32)], space)
    env = wrappers.RangeNormalize(inner, observ=False, action=False)
    assert env.observation_space is space and env.action_space is space
    assert env.reset()[0].tolist() == [4.0]


def test_range_normalize_rejects_arguments():
    """Flags must be bools and fit the spaces."""
    with pytest.raises(ValueError, match="observ must be None, True or "
                                         "False, got 'yes'"):
        wrappers.RangeNormalize(MockEnvironment(), observ='yes')
    with pytest.raises(ValueError, match=(
            r'RangeNormalize\(action=True\) needs a Box space, got '
            r'Discrete\(2\)')):
        wrappers.RangeNormalize(MockEnvironment(discrete=2), action=True)
    inner = MockEnvironment()
    inner.action_space = gym.spaces.Box(0, 3, (2,), np.int64)
    with pytest.raises(ValueError, match='needs a floating point Box'):
        wrappers.RangeNormalize(inner, action=True)


def test_clip_action_clips_and_exposes_unbounded_space():
    """Actions are clipped to the bounds; the outer space is unbounded."""
    inner = MockEnvironment()
    env = wrappers.ClipAction(inner)
    assert env.action_space == gym.spaces.Box(
        -np.inf, np.inf, (3,), np.float32)
    env.reset()
    env.step(np.array([2.0, -3.0, 0.5]))
    assert inner.actions[-1].tolist() == [1.0, -1.0, 0.5]
    assert inner.actions[-1].dtype == np.float32
    with pytest.raises(ValueError, match='ClipAction needs a Box space'):
        wrappers.ClipAction(MockEnvironment(discrete=3))


def test_limit_duration_truncates_at_the_limit():
    """The limit step is truncated and later steps raise until reset."""
    env = wrappers.LimitDuration(MockEnvironment(durations=(5,)), 3)
    results = _steps(env, 3)
    assert [(terminated, truncated)
            for _, _, terminated, truncated, _ in results] == [
                (False, False), (False, False), (False, True)]
    with pytest.raises(RuntimeError) as info:
        env.step(np.zeros(3))
    assert str(info.value) == (
        'The episode ended after 3 steps (limit 3); reset the environment '
        'before stepping it again.')
    env.reset()
    assert env.step(np.zeros(3))[0][0] == 1


def test_limit_duration_after_termination():
    """Termination before or at the limit ends the episode too."""
    env = wrappers.LimitDuration(MockEnvironment(durations=(2,)), 3)
    assert [result[2:4] for result in _steps(env, 2)] == [
        (False, False), (True, False)]
    with pytest.raises(RuntimeError, match='ended after 2 steps'):
        env.step(np.zeros(3))
    env = wrappers.LimitDuration(MockEnvironment(durations=(3,)), 3)
    assert _steps(env, 3)[-1][2:4] == (True, True)
    with pytest.raises(RuntimeError, match='Reset the LimitDuration'):
        wrappers.LimitDuration(MockEnvironment(), 3).step(np.zeros(3))
    with pytest.raises(ValueError, match=(
            'duration must be a positive integer, got 0')):
        wrappers.LimitDuration(MockEnvironment(), 0)


def test_convert_to_32bit_box_observations_and_rewards():
    """Float64 becomes float32 with bounds kept or clipped to range."""
    space = gym.spaces.Box(
        np.array([-np.inf, -1e300]), np.array([1.0, 2.0]), dtype=np.float64)
    observs = [np.array([0.5, 1.5]), np.array([0.25, -2.0])]
    env = wrappers.ConvertTo32Bit(_ScriptedEnvironment(space, observs))
    largest = np.finfo(np.float32).max
    assert env.observation_space == gym.spaces.Box(
        np.array([-np.inf, -largest], np.float32),
        np.array([1.0, 2.0], np.float32), dtype=np.float32)
    observ, _ = env.reset()
    assert (observ.dtype, observ.tolist()) == (np.float32, [0.5, 1.5])
    observ, reward, *_ = env.step(np.zeros(1))
    assert (observ.dtype, observ.tolist()) == (np.float32, [0.25, -2.0])
    assert type(reward) is np.float32  # pylint: disable=C0123
    assert reward == 1.0


def test_convert_to_32bit_integer_observations():
    """Int64 Box and Discrete observations become int32."""
    space = gym.spaces.Box(-2 ** 40, 5, (1,), np.int64)
    env = wrappers.ConvertTo32Bit(_ScriptedEnvironment(
        space, [np.array([3], np.int64)]))
    assert env.observation_space == gym.spaces.Box(
        -2 ** 31, 5, (1,), np.int32)
    observ, _ = env.reset()
    assert (observ.dtype, observ.tolist()) == (np.int32, [3])
    discrete = gym.spaces.Discrete(4, start=1)
    actions = gym.spaces.Discrete(3)
    env = wrappers.ConvertTo32Bit(_ScriptedEnvironment(
        discrete, [np.int64(2), 3], actions))
    assert env.observation_space == gym.spaces.Discrete(
        4, start=1, dtype=np.int32)
    assert env.action_space is actions
    observ, _ = env.reset()
    assert type(observ) is np.int32  # pylint: disable=C0123
    observ, *_ = env.step(1)
    assert (type(observ), observ) == (np.int32, 3)


def test_convert_to_32bit_keeps_other_types():
    """32-bit and smaller observations pass unchanged."""
    inner = MockEnvironment()
    env = wrappers.ConvertTo32Bit(inner)
    assert env.observation_space is inner.observation_space
    observ, _ = env.reset()
    assert observ.dtype == np.float32


def test_cache_spaces_reads_spaces_once():
    """Repeated reads of the spaces do not reach the environment."""
    inner = _CountingSpacesEnvironment()
    reads = inner.reads
    env = wrappers.CacheSpaces(inner)
    assert inner.reads == reads + 2
    for _ in range(3):
        assert env.observation_space == gym.spaces.Box(
            -np.inf, np.inf, (2,), np.float32)
        assert env.action_space == gym.spaces.Box(-1, 1, (3,), np.float32)
    assert inner.reads == reads + 2


def test_wrappers_forward_public_attributes():
    """Unknown public attributes come from the wrapped environment."""
    inner = MockEnvironment(durations=(4,))
    env = wrappers.CacheSpaces(wrappers.LimitDuration(inner, 2))
    env.reset()
    assert env.duration == 4
    assert env.steps is inner.steps
    with pytest.raises(AttributeError):
        _ = env._durations
    with pytest.raises(AttributeError):
        _ = env.missing


def test_wrappers_forward_through_external_process():
    """A wrapped environment in a worker forwards its attributes."""
    env = wrappers.ExternalProcess(lambda: wrappers.LimitDuration(
        MockEnvironment(durations=(4,)), 2))
    try:
        env.reset()
        _, _, terminated, truncated, _ = env.step(np.zeros(3, np.float32))
        env.step(np.zeros(3, np.float32))
        assert env.steps == [2]
        assert env.duration == 4
        assert (terminated, truncated) == (False, False)
    finally:
        env.close()


def _contract_test(name, make_environment):
    """A test case applying the environment contract to a wrapper."""
    return type(name, (env_contract.EnvironmentContractMixin,
                       unittest.TestCase), dict(
                           make_environment=lambda self: make_environment(),
                           __doc__=f'The environment contract of {name}.'))


AutoResetContractTest = _contract_test(
    'AutoResetContractTest', lambda: wrappers.AutoReset(MockEnvironment()))
ActionRepeatContractTest = _contract_test(
    'ActionRepeatContractTest',
    lambda: wrappers.ActionRepeat(MockEnvironment(), 2))
RandomStartContractTest = _contract_test(
    'RandomStartContractTest',
    lambda: wrappers.RandomStart(MockEnvironment(durations=(6,)), 3))
FrameHistoryContractTest = _contract_test(
    'FrameHistoryContractTest',
    lambda: wrappers.FrameHistory(MockEnvironment(), (0, 2), True))
FrameDeltaContractTest = _contract_test(
    'FrameDeltaContractTest',
    lambda: wrappers.FrameDelta(MockEnvironment()))
RangeNormalizeContractTest = _contract_test(
    'RangeNormalizeContractTest', lambda: wrappers.RangeNormalize(
        _ScriptedEnvironment(
            gym.spaces.Box(0, 4, (2,), np.float32),
            [np.full(2, value, np.float32) for value in range(5)])))
ClipActionContractTest = _contract_test(
    'ClipActionContractTest', lambda: wrappers.ClipAction(MockEnvironment()))
LimitDurationContractTest = _contract_test(
    'LimitDurationContractTest',
    lambda: wrappers.LimitDuration(MockEnvironment(durations=(9,)), 4))
ConvertTo32BitContractTest = _contract_test(
    'ConvertTo32BitContractTest', lambda: wrappers.ConvertTo32Bit(
        _ScriptedEnvironment(
            gym.spaces.Box(-1, 1, (2,), np.float64),
            [np.full(2, value / 4) for value in range(5)])))
CacheSpacesContractTest = _contract_test(
    'CacheSpacesContractTest', lambda: wrappers.CacheSpaces(MockEnvironment()))


def test_wrappers_import_without_tensorflow():
    """Worker processes import the wrappers without loading TensorFlow."""
    code = (
        'import sys\n'
        'import agents.tools.wrappers, agents.tools.batch_env\n'
        'assert "tensorflow" not in sys.modules, "tensorflow was imported"\n')
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    subprocess.run([sys.executable, '-c', code], cwd=root, check=True)


_CHECKED_WRAPPERS = {
    'AutoReset': lambda env: wrappers.AutoReset(env),
    'ActionRepeat': lambda env: wrappers.ActionRepeat(env, 2),
    'RandomStart': lambda env: wrappers.RandomStart(env, 5),
    'LimitDuration': lambda env: wrappers.LimitDuration(env, 50),
    'FrameHistory': lambda env: wrappers.FrameHistory(env, [0, 1], False),
    'FrameDelta': lambda env: wrappers.FrameDelta(env),
    'RangeNormalize': lambda env: wrappers.RangeNormalize(env),
    'ClipAction': lambda env: wrappers.ClipAction(env),
    'ConvertTo32Bit': lambda env: wrappers.ConvertTo32Bit(env),
    'CacheSpaces': lambda env: wrappers.CacheSpaces(env),
}


@pytest.mark.parametrize('name', sorted(_CHECKED_WRAPPERS))
def test_wrapper_passes_gymnasium_check_env(name):
    """Every single-environment wrapper passes gymnasium's own checker.

    Its last check recreates the environment from `env.spec`, which needs
    the wrapper's constructor arguments recorded.
    """
    # pylint: disable-next=import-outside-toplevel
    from gymnasium.utils.env_checker import check_env
    env = _CHECKED_WRAPPERS[name](gym.make('Pendulum-v1'))
    try:
        check_env(env, skip_render_check=True)
        recreated = env.spec.make()
        assert type(recreated).__name__ == name
        recreated.close()
    finally:
        env.close()
