"""How the scripts stop on signals and stuck steps (docs/reliability.md)."""

import contextlib
import multiprocessing.util
import os
import shutil
import signal
import sys
import threading

from agents import tools
from agents.tools import batch_env as batch_env_lib

# Seconds that saving may take when a stuck step is abandoned.
_ABANDON_SAVE_SECONDS = 20.0
# Seconds a step has to end after a signal before the process ends without.
_STUCK_STEP_GRACE = 2.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_active = None
# Held by the one thread that ends the process (see `exit_now`).
_exiting = threading.Lock()


class Interrupted(KeyboardInterrupt):
    """A signal asked the script to save and stop."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class StopRequest:
    """SIGINT and SIGTERM, turned into a request to save and stop: while
    `deferred` (within TensorFlow's code, which an exception would disturb),
    the first signal is only recorded for `requested`, else it raises
    `Interrupted`; a second signal ends the process. `abandon_stuck`: whether
    a signal during a stuck step ends the process without it. `describe`:
    callable of a signal number and `again` (for the second signal)
    returning the line to print."""

    abandon_stuck = True

    def __init__(self, describe):
        self.signum = None
        self.deferred = False
        self.describe = describe

    def requested(self):
        """Whether a signal asked to stop."""
        return self.signum is not None

    def handle(self, signum, unused_frame):
        """The signal handler."""
        if self.signum is not None:
            exit_now(self.describe(signum, again=True), 128 + signum)
        self.signum = signum
        if not self.deferred:
            raise Interrupted(signum)

    @contextlib.contextmanager
    def install(self):
        """Handle SIGINT and SIGTERM, as the `active` request, where Python
        handles signals (the main thread; else nothing); yield self."""
        global _active  # pylint: disable=global-statement
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = [signal.signal(signum, self.handle) for signum in _SIGNALS]
        _active = self
        try:
            yield self
        finally:
            _active = None
            for signum, handler in zip(_SIGNALS, previous):
                signal.signal(signum, handler)


def active():
    """The installed `StopRequest`, or None."""
    return _active


@contextlib.contextmanager
def watch(batches, timeout, save, release):
    """Run the body under a `tools.StepWatchdog` of the batches, whose steps
    may take `timeout` seconds (`worker_timeout`; None: 600); `save` saves a
    checkpoint and logs its errors, `release` releases the run folder."""
    stop = active()
    watchdog = tools.StepWatchdog(
        batches, timeout=timeout or 600, grace=_STUCK_STEP_GRACE,
        on_hang=lambda error: abandon(
            save, release,
            f'Error: Training stopped: {batch_env_lib.first_line(error)}', 1),
        on_stuck_signal=lambda signum: abandon(
            save, release, stop.describe(signum), 128 + signum),
        # As the handler does, where Python calls it twice.
        on_second_signal=lambda signum: exit_now(
            stop.describe(signum, again=True), 128 + signum))
    with watchdog, (
            watchdog.watch_signals() if stop and stop.abandon_stuck
            else contextlib.nullcontext()):
        yield


def abandon(save, release, message, code):
    """Save, release the run folder and exit while the main thread is stuck."""
    saving = threading.Thread(target=save, name='abandon_save', daemon=True)
    saving.start()
    saving.join(_ABANDON_SAVE_SECONDS)
    release()
    exit_now(message, code)


def exit_with(message, code):
    """Print one line to stderr and exit with the code (`SystemExit`)."""
    print(message, file=sys.stderr)
    sys.exit(code)


def exit_now(message, code):
    """Print one line to stderr and end the process without cleaning up."""
    _exiting.acquire()  # pylint: disable=consider-using-with
    print(message, file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):
        shutil.rmtree(multiprocessing.util.get_temp_dir(), ignore_errors=True)
    os._exit(code)  # pylint: disable=protected-access
