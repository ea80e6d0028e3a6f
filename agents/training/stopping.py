"""How the training script stops on signals and stuck steps.

SIGINT (Ctrl-C) and SIGTERM (Slurm, Kubernetes, `timeout`, often sent to
the whole process group) ask the trainer to save a checkpoint of the last
completed step and exit with 128 + the signal number. Worker processes
ignore both and leave their shutdown to the trainer (see
`tools.wrappers.ExternalProcess`).

Python runs signal handlers in the main thread only, between bytecodes, and
an exception raised by a handler in the middle of TensorFlow's code (while a
failed step builds its error, say) replaces the error by another. So within
the training loop the handler only records the signal, and the loop stops
before its next session run. A step stuck in an environment never returns
to the loop: `tools.StepWatchdog` notices it, and `abandon` ends the process
from the watchdog's thread.
"""

import contextlib
import multiprocessing.util
import os
import shutil
import signal
import sys
import threading

# Seconds that saving may take when a stuck step is abandoned.
_ABANDON_SAVE_SECONDS = 20.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_active = None
# Held by the one thread that ends the process: the handler of a second
# signal and the watchdog's thread may both try (see `exit_now`).
_exiting = threading.Lock()


class Interrupted(KeyboardInterrupt):
    """A signal asked the script to save and stop."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class StopRequest:
    """SIGINT and SIGTERM, turned into a request to save and stop.

    While `deferred` is false, the first signal raises `Interrupted` at once;
    while it is true, the handler only records the signal, for the training
    loop to ask `requested` before every session run. A second signal ends
    the process at once, without saving.

    Attributes:
        abandon_stuck: Whether a signal during a step stuck past a grace
            period ends the process without that step (see
            `tools.StepWatchdog.watch_signals`); a subclass may say no.
    """

    abandon_stuck = True

    def __init__(self, describe):
        """Create the request; `install` installs its handlers.

        Args:
            describe: Callable taking a signal number and `again`, whether it
                is the second signal, and returning the line to print when
                it stops the script.
        """
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
        """Handle SIGINT and SIGTERM, and be the `active` request, meanwhile.

        Yields:
            This request; the previous handlers return after the block.
        """
        global _active  # pylint: disable=global-statement
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


def abandon(save, release, message, code):
    """End the process from another thread while the main one is stuck.

    Saves within `_ABANDON_SAVE_SECONDS` (a session whose threads are all
    busy with the stuck step may never run the save), releases the run
    folder, prints the line and exits. Worker processes exit on their own
    once their parent is gone.

    Args:
        save: Callable that saves a checkpoint and logs its errors.
        release: Callable that releases the run folder, or None.
        message: The line to print to stderr.
        code: Exit code.
    """
    saving = threading.Thread(target=save, name='abandon_save', daemon=True)
    saving.start()
    saving.join(_ABANDON_SAVE_SECONDS)
    if release:
        release()
    exit_now(message, code)


def exit_with(message, code):
    """Print one line to stderr and exit with the code (`SystemExit`).

    Args:
      message: The line to print.
      code: Exit code.
    """
    print(message, file=sys.stderr)
    sys.exit(code)


def exit_now(message, code):
    """Print one line to stderr and end the process without cleaning up.

    Only the temporary folder of multiprocessing is removed first (see
    `remove_multiprocessing_temp_dir`). Where two threads call it, the
    second waits for the first to end the process, so that one line is
    printed.

    Args:
      message: The line to print.
      code: Exit code.
    """
    _exiting.acquire()  # pylint: disable=consider-using-with
    print(message, file=sys.stderr, flush=True)
    remove_multiprocessing_temp_dir()
    os._exit(code)  # pylint: disable=protected-access


def remove_multiprocessing_temp_dir():
    """Remove the `pymp-*` folder of multiprocessing in the temporary folder.

    It holds the socket of the forkserver that starts worker processes;
    multiprocessing removes it at a normal exit, which `os._exit` skips.
    Without one, this creates and removes an empty folder. Errors are
    ignored: the process is on its way out.
    """
    with contextlib.suppress(OSError):
        shutil.rmtree(multiprocessing.util.get_temp_dir(), ignore_errors=True)
