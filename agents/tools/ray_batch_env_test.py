"""Tests for the batch stepped in slices by Ray actors.

One Ray cluster of two nodes on this machine serves the module: the head,
where the test runs, and a second node with the resource 'second_node',
on which the actors of most tests are placed, so that they run in another
node's processes. Outside CI the tests skip when Ray is not installed; in
CI (CI=true) Ray must be there.
"""

import functools
import os
import signal
import sys
import time

import gymnasium as gym
import numpy as np
import psutil
import pytest

from agents.tools import batch_env as batch_env_lib
from agents.tools import ray_batch_env
from agents.tools.external_process import ExternalProcessError
from agents.testing.mock_environment import MockEnvironment
from agents.tools.ray_batch_env import RayBatchEnv
from agents.testing import worker_testing

_DURATIONS = (2, 3, 1)
_SECOND_NODE = dict(num_cpus=1, resources={'second_node': 1})


def import_ray_for_tests():
    """Import Ray; skip outside CI when it is missing, fail in CI."""
    if os.environ.get('CI') == 'true':
        import ray
        return ray
    return pytest.importorskip(
        'ray', reason="Ray is not installed (pip install -e '.[ray]').")


# Ray's own Python daemons of a head node, which can take minutes to handle
# their SIGTERM on a loaded machine.
_RAY_DAEMONS = ('ray/dashboard/dashboard.py', 'ray/autoscaler/',
                'ray/_private/log_monitor.py')


def assert_processes_end(processes):
    """Assert that the processes of a Ray this test started have ended.

    Ray's head daemons that are still shutting down after a minute are
    killed; any other process left, such as an actor or a worker, fails.

    The fork server and resource tracker of `multiprocessing` that tests of
    this process started live as long as it does, and are left out.

    Args:
        processes: `psutil.Process`es, taken once Ray had started.
    """
    helpers = ('multiprocessing.forkserver', 'multiprocessing.resource_tracker')
    own = []
    for process in processes:
        try:
            if process.ppid() == os.getpid() and any(
                    helper in ' '.join(process.cmdline())
                    for helper in helpers):
                continue
        except psutil.NoSuchProcess:
            continue
        own.append(process)
    _, alive = psutil.wait_procs(own, timeout=60)
    left = []
    for process in alive:
        try:
            command = ' '.join(process.cmdline())
            if any(daemon in command for daemon in _RAY_DAEMONS):
                process.kill()
            else:
                left.append(command)
        except psutil.NoSuchProcess:
            pass
    assert not left


class _InfoEnvironment(MockEnvironment):
    """MockEnvironment failing on the action 0.5 and hanging on 0.25."""

    def step(self, action):
        """Raise for 0.5, sleep for 0.25, else step as the mock does."""
        value = np.asarray(action).flat[0]
        if value == 0.5:
            raise ValueError('refusing 0.5')
        if value == 0.25:
            time.sleep(60)
        observ, reward, terminated, truncated, _ = super().step(action)
        return observ, reward, terminated, truncated, {'step': self.steps[-1]}


def _constructors(durations=_DURATIONS):
    return [lambda duration=duration: _InfoEnvironment(durations=(duration,))
            for duration in durations]


def _failing_constructor():
    raise ValueError('cannot build this one')


def _pendulum():
    return gym.wrappers.TimeLimit(gym.make('Pendulum-v1'), 7)


@pytest.fixture(scope='module', name='second_node')
def _cluster_fixture():
    """A two-node Ray cluster; yields the id of the second node."""
    ray = import_ray_for_tests()
    from ray import cluster_utils
    before = {child.pid for child in psutil.Process().children(
        recursive=True)}
    cluster = cluster_utils.Cluster(
        initialize_head=True, head_node_args=dict(
            num_cpus=1, include_dashboard=False))
    node = cluster.add_node(num_cpus=2, resources={'second_node': 2})
    ray.init(address=cluster.address, log_to_driver=False,
             logging_level='ERROR')
    # The cluster's processes, not those earlier tests left running.
    children = [child for child in psutil.Process().children(recursive=True)
                if child.pid not in before]
    try:
        yield node.node_id
    finally:
        ray.shutdown()
        cluster.shutdown()
        assert_processes_end(children)


@pytest.fixture(name='batch_env')
def _batch_env_fixture(second_node):
    """The mock environments in two actors on the second node."""
    del second_node
    batch_env = RayBatchEnv(
        _constructors(), num_actors=2, actor_options=_SECOND_NODE)
    yield batch_env
    batch_env.close()


_trace = functools.partial(
    worker_testing.step_trace, info_keys=('restarted',))


def _gone(pids):
    """Wait until the processes ended; return whether they all did."""
    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=30)
    return not alive


def test_actors_on_another_node_give_the_exact_trace(batch_env, second_node):
    """Each slice lives in an actor on the second node and steps exactly."""
    import ray
    assert batch_env.slices == ((0, 2), (2, 3))
    assert [worker.node_id for worker in batch_env.workers] == [
        second_node] * 2
    assert second_node != ray.get_runtime_context().get_node_id()
    assert _trace(batch_env, 4) == [
        ([1, 1, 1], [1, 1, 1], [False, False, True], [False] * 3),
        ([2, 2, 1], [2, 2, 1], [True, False, True], [False] * 3),
        ([1, 3, 1], [1, 3, 1], [False, True, True], [False] * 3),
        ([2, 1, 1], [2, 1, 1], [True, False, True], [False] * 3),
    ]
    assert [env.steps for env in batch_env] == [
        [2, 2, 0], [3, 1], [1, 1, 1, 1, 0]]
    assert batch_env[1].seeds == [None, None]
    assert batch_env[2].pid == batch_env.workers[1].pid
    pids = [worker.pid for worker in batch_env.workers]
    batch_env.close()
    batch_env.close()
    assert _gone(pids)


def test_seeded_episodes_match_the_in_process_batch(second_node):
    """Pendulum episodes on the second node equal those in this process."""
    del second_node
    count, steps = 3, 16
    space = gym.make('Pendulum-v1').action_space
    space.seed(3)
    actions = [np.stack([space.sample() for _ in range(count)])
               for _ in range(steps)]

    def episodes(batch_env):
        records = [('reset', batch_env.reset(seed=5).tolist())]
        for action in actions:
            observ, reward, done, _ = batch_env.step(action)
            records.append((
                'step', observ.tolist(), reward.tolist(), done.tolist()))
            if done.any():
                indices = np.flatnonzero(done)
                records.append(('reset', batch_env.reset(indices).tolist()))
        batch_env.close()
        return records

    remote = episodes(RayBatchEnv(
        [_pendulum] * count, num_actors=2, actor_options=_SECOND_NODE))
    local = episodes(batch_env_lib.BatchEnv(
        [_pendulum() for _ in range(count)], blocking=True))
    assert remote == local
    # Episodes of 7 steps: all ended twice in 16 steps.
    assert [record[0] for record in remote].count('reset') == 3


def test_actor_makes_an_id_registered_here(second_node):
    """Once `NameNotFound: Environment ... doesn't exist` in the actor."""
    del second_node
    gym.register('AgentsRayRegistryTest-v0', entry_point=_pendulum)
    try:
        batch_env = RayBatchEnv(
            [lambda: gym.make('AgentsRayRegistryTest-v0')],
            actor_options=_SECOND_NODE)
    finally:
        del gym.envs.registry['AgentsRayRegistryTest-v0']
    try:
        assert batch_env.reset(seed=5).tolist() == [
            _pendulum().reset(seed=5)[0].tolist()]
    finally:
        batch_env.close()


def test_error_names_the_environment_and_keeps_actors_in_step(batch_env):
    """An environment's error names its index; the others stepped on."""
    batch_env.reset()
    actions = np.zeros((3, 3), np.float32)
    actions[1] = 0.5
    with pytest.raises(ValueError) as info:
        batch_env.step(actions)
    message = str(info.value)
    assert message.startswith(
        'Environment 1 of the batch failed: ValueError in environment 1 '
        'of <Ray actor pid=')
    assert 'refusing 0.5' in message
    assert [env.steps for env in batch_env] == [[1], [0], [1]]


def test_constructor_error_names_the_environment(second_node):
    """A constructor that raises fails the batch naming its index."""
    del second_node
    constructors = _constructors()[:2] + [_failing_constructor]
    with pytest.raises(ValueError) as info:
        RayBatchEnv(constructors, num_actors=2, actor_options=_SECOND_NODE)
    # As from a worker process: the actor's traceback, naming the index.
    assert batch_env_lib.first_line(info.value) == (
        'ValueError in Ray actor of the slice of environments 2 to 2: '
        'ValueError: Environment 2 of the batch failed: cannot build this '
        'one')


def test_killed_actor_raises_one_clear_error(batch_env):
    """A SIGKILLed actor fails the step naming its environments."""
    batch_env.reset()
    pid = batch_env.workers[0].pid
    os.kill(pid, signal.SIGKILL)
    with pytest.raises(ExternalProcessError) as info:
        batch_env.step(np.zeros((3, 3), np.float32))
    assert str(info.value).startswith(
        f'Environments 0 to 1 of the batch failed: Ray actor of the slice '
        f'of environments 0 to 1 (pid {pid} on node ')
    assert 'died (The actor is dead because' in str(info.value)
    assert str(info.value).endswith(
        'create a new environment to continue.')
    assert batch_env[2].steps == [1]
    pids = [worker.pid for worker in batch_env.workers]
    batch_env.close()
    assert _gone(pids)


def test_restart_replaces_a_killed_actor(second_node):
    """With restart, a dead actor's slice starts anew and is flagged."""
    del second_node
    batch_env = RayBatchEnv(
        _constructors(), num_actors=2, restart=True,
        actor_options=_SECOND_NODE)
    try:
        batch_env.reset()
        old = batch_env.workers[1].pid
        os.kill(old, signal.SIGKILL)
        observ, reward, done, info = batch_env.step(
            np.zeros((3, 3), np.float32))
        assert observ[:, 0].tolist() == [1, 1, 0]
        assert reward.tolist() == [1, 1, 0]
        assert done.tolist() == [False, False, False]
        assert info['restarted'].tolist() == [False, False, True]
        assert batch_env.restarts == 1
        assert batch_env.workers[1].pid != old
        assert batch_env[2].steps == [0]
    finally:
        batch_env.close()


def test_actor_that_does_not_answer_is_killed(second_node):
    """A step past the timeout raises a TimeoutError and ends the actor."""
    del second_node
    batch_env = RayBatchEnv(
        _constructors((1,)), num_actors=1, timeout=1,
        actor_options=_SECOND_NODE)
    try:
        batch_env.reset()
        pid = batch_env.workers[0].pid
        with pytest.raises(TimeoutError) as info:
            batch_env.step(np.full((1, 3), 0.25, np.float32))
        assert str(info.value) == (
            'Environment 0 of the batch failed: Ray actor of the slice of '
            f'environments 0 to 0 (pid {pid} on node '
            f'{batch_env.workers[0].node_id[:8]}) did not answer within 1 '
            'seconds; it was killed.')
    finally:
        batch_env.close()
    assert _gone([pid])


def test_without_ray_the_error_names_the_extra(monkeypatch):
    """Without Ray, creating the batch says which extra installs it."""
    monkeypatch.setitem(sys.modules, 'ray', None)
    with pytest.raises(ImportError) as info:
        RayBatchEnv(_constructors())
    assert str(info.value) == (
        "Ray is not installed; install the 'ray' extra: "
        "pip install -e '.[ray]'")
    with pytest.raises(ImportError):
        ray_batch_env.import_ray()


def test_module_imports_neither_ray_nor_tensorflow():
    """The tools package works without Ray; actors never load TensorFlow."""
    import subprocess
    code = (
        'import sys; import agents.tools.ray_batch_env; '
        "print('ray' in sys.modules, 'tensorflow' in sys.modules)")
    output = subprocess.run(
        [sys.executable, '-c', code], check=True, capture_output=True,
        text=True).stdout
    assert output.split() == ['False', 'False']
