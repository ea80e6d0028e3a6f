"""Start and end environment worker processes, and how they meet signals.

Ctrl-C and job schedulers (Slurm, Kubernetes, `timeout`) signal a whole
process group with SIGINT or SIGTERM. A worker that died of it would fail the
step in progress before its parent could save; so workers, and the fork
server that forks them, ignore both and leave the decision to stop to their
parent, which closes them (and kills them when they do not exit). A worker
exits on its own once its parent is gone, even while stuck in its
environment.

This module must not import TensorFlow: worker processes import it.
"""

import contextlib
from multiprocessing import resource_tracker
import os
import select
import signal
import sys
import threading
import time

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_HAVE_SIGMASK = hasattr(signal, 'pthread_sigmask')
_PARENT_POLL_SECONDS = 0.5


def start(process, context, main_module=True, preload=None):
    """Start a worker process that ignores SIGINT and SIGTERM from the start.

    Args:
        process: Unstarted `multiprocessing` process whose target calls
            `leave_stopping_to_parent` first.
        context: The `multiprocessing` context of the process.
        main_module: Whether the child imports the parent's main module (see
            `main_hidden`).
        preload: Name of a module for the fork server to import before it
            forks, or None.
    """
    # The resource tracker unblocks the signals when it starts, so it starts
    # before they are blocked.
    resource_tracker.ensure_running()
    # The child inherits the blocked signals and ignores them before it could
    # receive one.
    with signals_blocked(), (
            contextlib.nullcontext() if main_module else main_hidden()):
        if context.get_start_method() == 'forkserver':
            _start_forkserver(context, preload)
        process.start()


def leave_stopping_to_parent(conn):
    """Called first in a worker: ignore stop signals, exit with the parent.

    A handler that does nothing rather than SIG_IGN, so that programs the
    environment executes get the default handling back.

    Args:
        conn: The worker's end of the pipe to its parent.
    """
    for signum in STOP_SIGNALS:
        signal.signal(signum, _ignore_signal)
    if _HAVE_SIGMASK:
        # The parent blocked them while starting this process.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _exit_with_parent(conn)


def reap(process, seconds):
    """Wait for a process to exit, then kill it (it ignores SIGTERM).

    Args:
        process: Started `multiprocessing` process, or None.
        seconds: How long to wait before killing it.
    """
    if process is None:
        return
    process.join(seconds)
    if process.exitcode is None:
        process.kill()
        process.join()


@contextlib.contextmanager
def signals_blocked():
    """Block SIGINT and SIGTERM in this thread meanwhile.

    Processes started meanwhile inherit the blocked signals, so that a signal
    to the process group cannot end them before they install their handlers;
    this thread receives signals that arrived meanwhile once the block ends.
    `multiprocessing`'s resource tracker starts the same way.

    Yields:
        Nothing.
    """
    if not _HAVE_SIGMASK:
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def main_hidden():
    """Hide the main module from processes started meanwhile.

    multiprocessing tells 'spawn' and 'forkserver' children to import the
    main module by its `__spec__` name or `__file__` path; without them, the
    children leave it alone. ('fork' children inherit it either way.)

    Yields:
        Nothing; the attributes return after the `with` block.
    """
    main = sys.modules.get('__main__')
    saved = {
        name: getattr(main, name) for name in ('__spec__', '__file__')
        if getattr(main, name, None) is not None}
    for name in saved:
        setattr(main, name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(main, name, value)


def _start_forkserver(context, preload):
    """Start the fork server, importing `preload`, unless it runs already.

    Workers forked from a server that already imported the module, NumPy and
    gymnasium start in milliseconds instead of importing them each. The
    preload only takes effect before the server started, and keeps modules
    others asked to preload. The server starts with SIGINT and SIGTERM
    blocked, which it keeps: a signal to the process group leaves it
    running, since the workers it forked count on it to report their exit
    codes.
    """
    from multiprocessing import forkserver
    server = getattr(forkserver, '_forkserver', None)
    modules = getattr(server, '_preload_modules', None)
    if preload and modules is not None and preload not in modules:
        context.set_forkserver_preload(list(modules) + [preload])
    if server is not None:
        server.ensure_running()


def _ignore_signal(unused_signum, unused_frame):
    """Signal handler that leaves the decision to stop to the parent."""


def _exit_with_parent(conn):
    """End this worker process as soon as its parent process is gone.

    A worker waiting for a message learns of the parent's death from the end
    of the pipe, but one stuck in the environment would outlive it, so a
    thread watches the pipe for the hang-up too. With the 'fork' start
    method, later workers inherit the parent's end of the pipe and keep it
    open, so the thread also watches for the worker's parent process to
    change. (With 'forkserver', the parent process is the fork server, which
    every worker keeps alive.)

    Args:
        conn: This process's end of the pipe to the parent.
    """
    parent = os.getppid()
    poller = None
    if hasattr(select, 'poll'):
        poller = select.poll()
        hang_up = select.POLLHUP | getattr(select, 'POLLRDHUP', 0)
        poller.register(conn.fileno(), hang_up)

    def watch():
        while os.getppid() == parent:
            if poller is None:
                time.sleep(_PARENT_POLL_SECONDS)
                continue
            events = poller.poll(_PARENT_POLL_SECONDS * 1000)
            if any(event & select.POLLNVAL for _, event in events):
                return  # The worker closed the pipe and is exiting.
            if any(event & hang_up for _, event in events):
                break
        # Skip cleanup, which may hang in the same environment.
        os._exit(1)  # pylint: disable=protected-access

    threading.Thread(target=watch, name='exit_with_parent', daemon=True).start()
