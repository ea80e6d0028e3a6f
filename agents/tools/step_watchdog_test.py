"""Tests for the watchdog of batches stuck in a step."""

import os
import signal
import threading

import numpy as np
import pytest

from agents.tools import batch_env as batch_env_lib
from agents.testing.mock_environment import MockEnvironment
from agents.tools.step_watchdog import StepWatchdog

_WAIT_SECONDS = 30


class _GatedEnvironment(MockEnvironment):
    """MockEnvironment whose steps wait until the gate opens."""

    def __init__(self, gate):
        super().__init__()
        self._gate = gate
        self.waiting = threading.Event()

    def step(self, action):
        """Announce the step, then wait for the gate."""
        self.waiting.set()
        self._gate.wait()
        return super().step(action)

    def __str__(self):
        return '<_GatedEnvironment>'


@pytest.fixture(name='stuck_batch')
def fixture_stuck_batch():
    """A batch whose environment 1 is stuck in a step in another thread.

    Yields the batch, with environment 1 stepping; the step ends afterwards.
    """
    gate = threading.Event()
    envs = [MockEnvironment(), _GatedEnvironment(gate), MockEnvironment()]
    batch = batch_env_lib.BatchEnv(envs, blocking=True)
    batch.reset()
    assert batch.busy is None
    stepping = threading.Thread(
        target=batch.step, args=(np.zeros((3, 3), np.float32),), daemon=True)
    stepping.start()
    assert envs[1].waiting.wait(_WAIT_SECONDS)
    yield batch
    gate.set()
    stepping.join(_WAIT_SECONDS)
    assert batch.busy is None


def test_busy_names_the_environment_that_steps(stuck_batch):
    """During a step, `busy` names the environment it waits for."""
    index, _ = stuck_batch.busy
    assert index == 1


def test_hang_in_process_calls_on_hang_with_a_named_timeout(stuck_batch):
    """An environment stuck past the timeout is reported, once, by index."""
    errors = []
    reported = threading.Event()

    def on_hang(error):
        errors.append(error)
        reported.set()

    with StepWatchdog(stuck_batch, timeout=0.2, on_hang=on_hang):
        assert reported.wait(_WAIT_SECONDS)
    assert len(errors) == 1
    assert isinstance(errors[0], TimeoutError)
    assert str(errors[0]) == (
        'Environment 1 of the batch failed: Environment <_GatedEnvironment> '
        'in this process did not answer within 0.2 seconds; it cannot be '
        'interrupted, so the process stops.')


def test_signal_during_a_stuck_step_calls_on_stuck_signal(stuck_batch):
    """A signal while the batch is stuck reaches the watchdog's callback.

    Its Python handler runs too, here, since this test's main thread is not
    stuck; in training it is, inside `session.run`.
    """
    handled, stuck = [], []
    reported = threading.Event()

    def on_stuck_signal(signum):
        stuck.append(signum)
        reported.set()

    previous = signal.signal(
        signal.SIGUSR1, lambda signum, _: handled.append(signum))
    watchdog = StepWatchdog(
        stuck_batch, timeout=None, on_stuck_signal=on_stuck_signal,
        grace=0.2)
    try:
        with watchdog, watchdog.watch_signals():
            os.kill(os.getpid(), signal.SIGUSR1)
            assert reported.wait(_WAIT_SECONDS)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert handled == [signal.SIGUSR1]
    assert stuck == [signal.SIGUSR1]


def test_second_signal_calls_on_second_signal_without_a_busy_batch():
    """Two signals reach the watchdog as two, also where Python would call
    the handler once after a long TensorFlow call, and whatever the batch
    (an in-graph task has no `busy` record)."""
    seconds = []
    reported = threading.Event()

    def on_second_signal(signum):
        seconds.append(signum)
        reported.set()

    handled = []
    previous = signal.signal(
        signal.SIGUSR1, lambda signum, _: handled.append(signum))
    watchdog = StepWatchdog(object(), on_second_signal=on_second_signal)
    try:
        with watchdog, watchdog.watch_signals():
            os.kill(os.getpid(), signal.SIGUSR1)
            os.kill(os.getpid(), signal.SIGUSR1)
            assert reported.wait(_WAIT_SECONDS)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert seconds == [signal.SIGUSR1]


def test_timeout_must_be_positive():
    """A timeout of zero seconds is refused in one line."""
    with pytest.raises(ValueError, match=(
            r'^timeout must be a positive number of seconds, got 0\.$')):
        StepWatchdog(timeout=0)
