"""Notice a batch of environments stuck in a step, and signals meanwhile.
No TensorFlow here: it only watches the batch."""

import contextlib
import os
import select
import signal
import threading
import time

from agents.tools import batch_env as batch_env_lib
from agents.tools import run_errors
from agents.tools import worker_errors

_MAX_POLL_SECONDS = 1.0


class StepWatchdog:
    """A thread that acts when a batch of environments is stuck in a step,
    where `session.run` keeps Python's signal handlers from running.

    It reads the `busy` record of `batch_env` (like `tools.BatchEnv`'s; may
    be assigned later) and calls at most once one of: `on_hang(error)` when
    an environment in this process has not answered within `timeout`
    seconds; `on_stuck_signal(signum)` when the batch is still busy `grace`
    seconds after a signal; `on_second_signal(signum)` on a second signal.
    The callbacks run in the thread and should end the process. A `timeout`
    or `grace` that is not positive raises a ValueError.
    """

    def __init__(self, batch_env=None, timeout=None, on_hang=None,
                 on_stuck_signal=None, grace=2.0, on_second_signal=None):
        for name, value in (('timeout', timeout), ('grace', grace)):
            if value is not None and value <= 0:
                raise ValueError(
                    f'{name} must be a positive number of seconds, got '
                    f'{value!r}.')
        self.batch_env = batch_env
        self._timeout = timeout
        self._on_hang = on_hang
        self._on_stuck_signal = on_stuck_signal
        self._on_second_signal = on_second_signal
        self._grace = grace
        self._poll = min(
            _MAX_POLL_SECONDS, grace / 2, (timeout or float('inf')) / 4)
        self._read_fd, self._write_fd = os.pipe()
        for fd in (self._read_fd, self._write_fd):
            os.set_blocking(fd, False)
        self._closed = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, name='step_watchdog', daemon=True)

    def start(self):
        """Start the thread; returns the watchdog."""
        self._thread.start()
        return self

    def close(self):
        """Stop the thread and close its pipe; safe to call again."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.write(self._write_fd, b'\0')
            self._thread.join()
        for fd in (self._read_fd, self._write_fd):
            os.close(fd)

    def __enter__(self):
        return self.start()

    def __exit__(self, *unused_exc_info):
        self.close()

    @contextlib.contextmanager
    def watch_signals(self):
        """Have signals wake the watchdog (by `signal.set_wakeup_fd`); call
        it in the main thread, with the Python handlers installed."""
        previous = signal.set_wakeup_fd(
            self._write_fd, warn_on_full_buffer=False)
        try:
            yield
        finally:
            signal.set_wakeup_fd(previous)

    def _watch(self):
        """Wait for signals and check the batch until one callback ran."""
        signum = signal_time = None
        while not self._closed.is_set():
            select.select([self._read_fd], [], [], self._poll)
            now = time.monotonic()
            again = None
            with contextlib.suppress(BlockingIOError):
                # Signal numbers; `close` writes a zero.
                for byte in filter(None, os.read(self._read_fd, 64)):
                    if signum is None:
                        signum, signal_time = byte, now
                    elif again is None:
                        again = byte
            if self._closed.is_set():
                return
            if again is not None and self._on_second_signal:
                self._on_second_signal(again)
                return
            busy = getattr(self.batch_env, 'busy', None)
            if not busy:
                continue
            index, since = busy  # pylint: disable=unpacking-non-sequence
            if (self._timeout and self._on_hang and index is not None
                    and now - since >= self._timeout):
                self._on_hang(self._hang_error(index))
                return
            if (signum is not None and self._on_stuck_signal
                    and now - signal_time >= self._grace
                    and now - since >= self._grace):
                self._on_stuck_signal(signum)
                return

    def _hang_error(self, index):
        """The TimeoutError of environment `index`."""
        try:
            env = self.batch_env[index]
            name = str(env.unwrapped if hasattr(env, 'unwrapped') else env)
        except Exception:  # pylint: disable=broad-exception-caught
            name = 'environment'
        error = worker_errors.timeout_error(
            f'Environment {run_errors.shorten(name)} in this process',
            self._timeout, 'it cannot be interrupted, so the process stops')
        return batch_env_lib.name_index(error, index)
