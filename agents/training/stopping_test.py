"""Tests for how the training script turns signals into a stop."""

import os
import signal
import subprocess
import sys

import pytest

from agents.training import stopping

_SECOND_SIGNAL_SCRIPT = """
import multiprocessing.util
import os
import signal
from agents.training import stopping
# The folder that a forkserver's socket makes.
assert os.path.basename(multiprocessing.util.get_temp_dir()).startswith(
    'pymp-')
stop = stopping.StopRequest(
    lambda signum, again=False: f'Stopped by {signum}, again {again}.')
with stop.install():
    stop.deferred = True
    os.kill(os.getpid(), signal.SIGTERM)
    assert stop.requested() and stop.signum == signal.SIGTERM
    os.kill(os.getpid(), signal.SIGTERM)
    print('not reached')
"""


def _describe(signum, again=False):
    return f'Stopped by {signum}, again {again}.'


def test_first_signal_raises_outside_the_loop():
    """Outside the training loop, the first signal raises at once."""
    stop = stopping.StopRequest(_describe)
    # The handler before: Python's, or SIG_IGN where a shell started the
    # tests in the background.
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(stopping.Interrupted) as interrupt:
        with stop.install():
            assert stopping.active() is stop
            os.kill(os.getpid(), signal.SIGINT)
    assert interrupt.value.signum == signal.SIGINT
    assert stopping.active() is None
    assert signal.getsignal(signal.SIGINT) is before


def test_signal_in_the_loop_only_requests_a_stop():
    """Inside the loop, where TensorFlow runs, the handler raises nothing."""
    stop = stopping.StopRequest(_describe)
    with stop.install():
        stop.deferred = True
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested()
        stop.deferred = False
    assert stop.signum == signal.SIGTERM


def test_second_signal_exits_at_once(tmp_path):
    """A second signal ends the process with its line, without saving.

    Multiprocessing's temporary folder `pymp-*` goes too.
    """
    result = subprocess.run(
        [sys.executable, '-c', _SECOND_SIGNAL_SCRIPT], capture_output=True,
        text=True, check=False, timeout=60,
        env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert result.returncode == 128 + signal.SIGTERM
    assert result.stdout == ''
    assert result.stderr == f'Stopped by {int(signal.SIGTERM)}, again True.\n'
    assert os.listdir(tmp_path) == []
