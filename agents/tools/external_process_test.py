"""Tests for the environment worker process."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import atexit
import gc
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

import gymnasium as gym
import numpy as np
import psutil
import pytest

from agents.testing import env_contract
from agents.tools.external_process import ExternalProcess
from agents.tools.external_process import ExternalProcessError
from agents.testing.mock_environment import MockEnvironment


class _CustomError(Exception):
    """An exception type that is not built into Python."""


def _explode(value):
    raise ValueError(f'cannot step with {value}')


class _Environment(MockEnvironment):
    """MockEnvironment with a method to call and steps that can fail."""

    def step(self, action):
        """Fail for a first action component above 0.5, else step."""
        if np.asarray(action).flat[0] > 0.5:
            _explode(np.asarray(action).flat[0])
        if np.asarray(action).flat[0] < -0.5:
            raise _CustomError('custom failure')
        return super().step(action)

    def scale(self, value, factor=2):
        """Return `value * factor`."""
        return value * factor


class _TypedEnvironment(MockEnvironment):
    """MockEnvironment whose step returns NumPy scalars and an info."""

    def step(self, action):
        """Step, then convert the reward and flags to NumPy types."""
        observ, reward, terminated, truncated, _ = super().step(action)
        info = dict(step=int(reward))
        return (observ, np.float64(reward), np.bool_(terminated),
                np.bool_(truncated), info)


class _SleepingEnvironment(MockEnvironment):
    """MockEnvironment whose step takes a minute."""

    def step(self, action):
        """Sleep far longer than any test waits."""
        time.sleep(60)
        return super().step(action)


def _fail_to_construct():
    raise KeyError('missing asset')


def _children():
    return {child.pid for child in psutil.Process().children(recursive=True)}


def _bounded(function, seconds=10):
    """Call `function` in a thread; fail the test rather than hang it."""
    outcome = {}

    def target():
        try:
            outcome['result'] = function()
        except BaseException as error:
            outcome['error'] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f'Call still running after {seconds} s.'
    if 'error' in outcome:
        raise outcome['error']
    return outcome['result']


@pytest.fixture(name='env', scope='module')
def _env_fixture():
    env = ExternalProcess(lambda: _Environment(durations=(2, 3)))
    yield env
    env.close()


def test_step_and_reset_values(env):
    """Reset and step return the exact values of the environment."""
    observ, info = env.reset(seed=7)
    np.testing.assert_array_equal(observ, np.zeros(2, np.float32))
    assert info == {}
    assert env.seeds[-1] == 7
    action = np.array([0.1, 0.2, 0.3], np.float32)
    observ, reward, terminated, truncated, info = env.step(action)
    assert observ.dtype == np.float32 and observ.flags.writeable
    np.testing.assert_array_equal(observ, [1.0, 1.0])
    assert (reward, terminated, truncated, info) == (1.0, False, False, {})
    assert type(reward) is float  # pylint: disable=unidiomatic-typecheck
    np.testing.assert_array_equal(env.actions[-1], action)


def test_episode_ends_with_terminated(env):
    """The last step of an episode is terminated, the others not."""
    env.reset()
    dones = []
    for _ in range(env.duration):
        _, _, terminated, truncated, _ = env.step(np.zeros(3, np.float32))
        dones.append((terminated, truncated))
    assert dones[-1] == (True, False)
    assert all(done == (False, False) for done in dones[:-1])


def test_spaces_are_cached(env):
    """Spaces and metadata are read without a round trip."""
    sent = env._sent
    assert env.observation_space == gym.spaces.Box(
        -np.inf, np.inf, (2,), np.float32)
    assert env.action_space == gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    assert env.metadata == {'render_modes': ['rgb_array'], 'render_fps': 30}
    assert env.render_mode is None
    assert env._sent == sent


def test_spaces_of_classes_defined_in_the_constructor():
    """Spaces of classes local to the constructor reach the parent."""

    def constructor():

        class LocalBox(gym.spaces.Box):
            """A space class only the constructor knows."""

        env = MockEnvironment()
        env.observation_space = LocalBox(-1.0, 1.0, (2,), np.float32)
        return env

    env = ExternalProcess(constructor)
    try:
        assert type(env.observation_space).__name__ == 'LocalBox'
        assert env.observation_space.shape == (2,)
    finally:
        env.close()


def test_attributes_and_methods_are_forwarded(env):
    """Attributes are read and methods called in the child."""
    env.reset()
    env.step(np.zeros(3, np.float32))
    assert env.steps[-1] == 1
    assert env.duration in (2, 3)
    assert env.scale(3, factor=4) == 12
    assert env.call('scale', 5) == 10
    assert env.render().shape == (16, 16, 3)
    assert not hasattr(env, 'missing')
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        _ = env.missing


def test_private_names_are_not_forwarded(env):
    """Names with a leading underscore never reach the child."""
    sent = env._sent
    with pytest.raises(AttributeError, match="no attribute '_step'"):
        _ = env._step
    assert env._sent == sent


def test_step_error_is_raised_with_child_traceback(env):
    """A built-in error keeps its type and carries the child traceback."""
    env.reset()
    with pytest.raises(ValueError) as info:
        env.step(np.array([1.0, 0.0, 0.0], np.float32))
    message = str(info.value)
    assert 'ValueError' in message
    assert 'cannot step with 1.0' in message
    assert 'in _explode' in message
    assert 'Traceback (most recent call last)' in message
    assert f'pid {env.pid}' in message
    # The worker survives errors of its environment.
    observ, *_ = env.step(np.zeros(3, np.float32))
    np.testing.assert_array_equal(observ, [1.0, 1.0])


def test_custom_error_becomes_external_process_error(env):
    """An error of a custom type arrives as ExternalProcessError."""
    env.reset()
    with pytest.raises(ExternalProcessError) as info:
        env.step(np.array([-0.9, 0.0, 0.0], np.float32))
    assert '_CustomError' in str(info.value)
    assert 'custom failure' in str(info.value)


def test_promises_resolve_in_order(env):
    """Promises return their results and refuse to run out of order."""
    env.reset()
    first = env.step(np.zeros(3, np.float32), blocking=False)
    second = env.step(np.zeros(3, np.float32), blocking=False)
    with pytest.raises(RuntimeError, match='called out of order'):
        second()
    assert first()[1] == 1.0
    assert second()[1] == 2.0
    with pytest.raises(RuntimeError, match='called out of order'):
        second()
    observ, info = env.reset(blocking=False)()
    np.testing.assert_array_equal(observ, [0.0, 0.0])
    assert info == {}


def test_numpy_types_and_info_survive_the_frame():
    """NumPy scalar rewards and flags and the info keep their types."""
    env = ExternalProcess(lambda: _TypedEnvironment(durations=(1,)))
    try:
        env.reset()
        _, reward, terminated, truncated, info = env.step(
            np.zeros(3, np.float64))
        assert type(reward) is np.float64  # pylint: disable=C0123
        assert type(terminated) is np.bool_  # pylint: disable=C0123
        assert type(truncated) is np.bool_  # pylint: disable=C0123
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info == {'step': 1}
        assert env.actions[-1].dtype == np.float64
    finally:
        env.close()


def test_discrete_actions_keep_their_type():
    """Integer actions arrive with the type they were sent with."""
    env = ExternalProcess(lambda: MockEnvironment(discrete=4))
    try:
        env.reset()
        env.step(2)
        env.step(np.int64(3))
        env.step(np.int32(1))
        actions = env.actions
        assert [action.tolist() for action in actions] == [2, 3, 1]
        assert [action.dtype for action in actions] == [
            np.array(2).dtype, np.int64, np.int32]
    finally:
        env.close()


def test_rejects_environment_instance():
    """An environment instance is refused with a TypeError."""
    with pytest.raises(TypeError, match='got the environment instance'):
        ExternalProcess(MockEnvironment())


def test_rejects_arguments():
    """Bad constructors, start methods and timeouts are refused."""
    with pytest.raises(TypeError, match='got 3'):
        ExternalProcess(3)
    with pytest.raises(ValueError, match="Unknown start method 'thread'"):
        ExternalProcess(MockEnvironment, start_method='thread')
    with pytest.raises(ValueError, match='got -1'):
        ExternalProcess(MockEnvironment, timeout=-1)


def test_constructor_error_is_raised_on_first_use():
    """A failing constructor raises its error and leaves no process."""
    env = ExternalProcess(_fail_to_construct)
    pid = env.pid
    with pytest.raises(KeyError) as info:
        _bounded(env.reset)
    assert 'missing asset' in str(info.value)
    assert 'in _fail_to_construct' in str(info.value)
    assert pid not in _children()
    with pytest.raises(KeyError):
        env.step(np.zeros(3))
    env.close()


def test_killed_worker_raises_clear_error():
    """A killed worker makes the next call raise promptly."""
    env = ExternalProcess(MockEnvironment)
    env.reset()
    pid = env.pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ExternalProcessError) as info:
        _bounded(lambda: env.step(np.zeros(3, np.float32)))
    assert str(info.value) == (
        f'Environment worker <MockEnvironment instance> (pid {pid}) died '
        '(exit code -9, killed by SIGKILL); create a new environment to '
        'continue.')
    with pytest.raises(ExternalProcessError, match='died'):
        _bounded(env.reset)
    assert pid not in _children()
    env.close()


def test_hanging_worker_times_out_and_is_terminated():
    """A worker that does not answer times out and is terminated."""
    # The constructor gets a minute however short the timeout.
    env = ExternalProcess(lambda: _SleepingEnvironment(), timeout=0.3)
    env.reset()
    pid = env.pid
    with pytest.raises(TimeoutError) as info:
        _bounded(lambda: env.step(np.zeros(3, np.float32)))
    assert str(info.value) == (
        f'Environment worker <_SleepingEnvironment instance> (pid {pid}) did '
        'not answer within 0.3 seconds; it was terminated.')
    assert pid not in _children()
    with pytest.raises(TimeoutError):
        env.reset()


_GROUP_SIGNAL_SCRIPT = """
import signal
import sys
import numpy as np
from agents.tools.external_process import ExternalProcess
from agents.testing.mock_environment import MockEnvironment
received = []
if __name__ == '__main__':
    signal.signal(int(sys.argv[2]), lambda signum, _: received.append(signum))
    env = ExternalProcess(MockEnvironment, start_method=sys.argv[1])
    env.reset()
    print('ready', flush=True)
    sys.stdin.readline()
    assert received == [int(sys.argv[2])], received
    observ, *_ = env.step(np.zeros(3, np.float32))
    other = ExternalProcess(MockEnvironment, start_method=sys.argv[1])
    other.reset()
    env.close()
    other.close()
    print(observ.tolist(), flush=True)
"""


@pytest.mark.parametrize('start_method', ['forkserver', 'spawn'])
@pytest.mark.parametrize(
    'signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_to_the_process_group_leaves_workers_running(
        start_method, signum):
    """Ctrl-C and schedulers signal the whole group; workers stay.

    The parent decides when its workers stop: after the signal its worker
    still steps, and the fork server still starts workers.
    """
    with subprocess.Popen(
            [sys.executable, '-c', _GROUP_SIGNAL_SCRIPT, start_method,
             str(int(signum))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            start_new_session=True) as parent:
        try:
            assert _bounded(parent.stdout.readline, 30) == 'ready\n'
            os.killpg(parent.pid, signum)
            parent.stdin.write('\n')
            parent.stdin.flush()
            assert _bounded(parent.stdout.readline, 30) == '[1.0, 1.0]\n'
            assert parent.wait(30) == 0
        finally:
            if parent.poll() is None:
                os.killpg(parent.pid, signal.SIGKILL)


_ORPHAN_SCRIPT = """
import sys
import time
import numpy as np
from agents.tools.external_process import ExternalProcess
from agents.tools.external_process_test import _SleepingEnvironment
env = ExternalProcess(_SleepingEnvironment, start_method=sys.argv[1])
env.reset()
env.step(np.zeros(3, np.float32), blocking=False)
print(env.pid, flush=True)
time.sleep(60)
"""


def _running(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize('start_method', ['forkserver', 'spawn'])
def test_stuck_worker_exits_with_its_parent(start_method):
    """A worker stuck in a step ends when its parent is killed."""
    with subprocess.Popen(
            [sys.executable, '-c', _ORPHAN_SCRIPT, start_method],
            stdout=subprocess.PIPE, text=True) as parent:
        try:
            pid = int(_bounded(parent.stdout.readline, 30))
            # The worker sleeps in its step, far from reading the pipe.
            time.sleep(0.5)
            assert _running(pid)
        finally:
            parent.kill()
    deadline = time.monotonic() + 5
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)


_MAIN_SCRIPT = """
import os
import sys
if __name__ == '__mp_main__':
    open(os.environ['MAIN_MARKER'], 'a').close()
if __name__ == '__main__':
    from agents.tools.external_process import ExternalProcess
    from agents.testing.mock_environment import MockEnvironment
    env = ExternalProcess(
        MockEnvironment, start_method=sys.argv[1],
        main_module=sys.argv[2] == 'True')
    env.reset()
    env.close()
"""


@pytest.mark.parametrize('start_method', ['forkserver', 'spawn'])
@pytest.mark.parametrize('main_module', [True, False])
def test_workers_import_the_main_module_on_request(
        tmp_path, start_method, main_module):
    """Without `main_module`, workers skip the imports of the main script."""
    script = tmp_path / 'script.py'
    script.write_text(_MAIN_SCRIPT)
    marker = tmp_path / 'imported'
    subprocess.run(
        [sys.executable, str(script), start_method, str(main_module)],
        env=dict(os.environ, MAIN_MARKER=str(marker)), check=True,
        timeout=60)
    assert marker.exists() == main_module


def test_close_is_idempotent_and_reaps_worker(monkeypatch):
    """Close may repeat, reaps the worker and removes the exit hook."""
    registered, unregistered = [], []
    monkeypatch.setattr(atexit, 'register', registered.append)
    monkeypatch.setattr(atexit, 'unregister', unregistered.append)
    env = ExternalProcess(MockEnvironment)
    assert len(registered) == 1
    env.reset()
    pid = env.pid
    assert pid in _children()
    env.close()
    env.close()
    assert pid not in _children()
    assert unregistered == registered
    # The hook holds the environment weakly and closes it at exit.
    registered[0]()
    with pytest.raises(RuntimeError, match='is closed'):
        env.reset()


def test_garbage_collected_env_leaves_no_process():
    """Collecting the environment ends its worker."""
    env = ExternalProcess(MockEnvironment)
    env.reset()
    pid = env.pid
    del env
    gc.collect()
    assert pid not in _children()


@pytest.mark.parametrize('start_method', ['fork', 'spawn', 'forkserver'])
def test_start_methods_with_lambda_and_closure(start_method):
    """Lambdas and closures construct environments with each method."""
    durations = (4,)

    def closure():
        return MockEnvironment(observ_shape=(3,), durations=durations)

    # Both start before either is awaited, so their startups overlap.
    envs = [
        ExternalProcess(lambda: MockEnvironment(), start_method=start_method),
        ExternalProcess(closure, start_method=start_method)]
    try:
        for env, shape, duration in zip(envs, [(2,), (3,)], [5, 4]):
            env.reset()
            observ, reward, *_ = env.step(np.zeros(3, np.float32))
            assert observ.shape == shape
            assert reward == 1.0
            assert env.duration == duration
    finally:
        for env in envs:
            env.close()


class ExternalProcessContractTest(
        env_contract.EnvironmentContractMixin, unittest.TestCase):
    """The environment contract holds through a worker process."""

    def make_environment(self):
        """A worker of a MockEnvironment of three-step episodes."""
        return ExternalProcess(lambda: MockEnvironment(durations=(3,)))


class ExternalPendulumContractTest(
        env_contract.EnvironmentContractMixin, unittest.TestCase):
    """Attributes of the innermost environment under gymnasium's wrappers
    are reached through the worker, as in process."""

    max_episode_steps = 200
    wrapper_attribute = ('max_speed', 8.0)

    def make_environment(self):
        """A worker of gymnasium's Pendulum."""
        return ExternalProcess(lambda: gym.make('Pendulum-v1'))


class _Doubling(MockEnvironment):
    """A mock environment with a method of its own."""

    def double(self, value):
        """Twice the value."""
        return 2 * value


def test_get_wrapper_attr_forwards_methods_under_wrappers():
    env = ExternalProcess(
        lambda: gym.wrappers.TimeLimit(_Doubling(), 10))
    try:
        # TimeLimit itself has no `double`; gymnasium wrappers do not
        # forward attribute reads, so only get_wrapper_attr reaches it.
        assert not env.has_wrapper_attr('missing')
        assert env.get_wrapper_attr('double')(4) == 8
        with pytest.raises(AttributeError, match="'_private'"):
            env.get_wrapper_attr('_private')
        assert env.has_wrapper_attr('_Doubling__x') is False
    finally:
        env.close()


def test_every_public_member_of_gymnasium_env_is_forwarded():
    """Members that ExternalProcess would inherit from `gymnasium.Env` run
    in the parent and miss the child's environment; each is defined anew,
    except `unwrapped`, which is the proxy itself."""
    inherited = {
        name for name in dir(gym.Env) if not name.startswith('_')
        and getattr(ExternalProcess, name) is getattr(gym.Env, name)}
    assert inherited == {'unwrapped'}


@pytest.mark.parametrize(
    'env_id', ['Pendulum-v1', 'CartPole-v1', 'HalfCheetah-v5'])
def test_passes_gymnasium_check_env(env_id):
    """gymnasium's checker accepts the proxy (it reads `_np_random`)."""
    # pylint: disable-next=import-outside-toplevel
    from gymnasium.utils.env_checker import check_env
    env = ExternalProcess(lambda: gym.make(env_id), main_module=False)
    try:
        check_env(env, skip_render_check=True)
        assert env.unwrapped is env
    finally:
        env.close()
