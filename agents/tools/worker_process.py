"""Start and end environment workers: they (and their fork server) ignore
SIGINT and SIGTERM, leaving stopping to their parent, and exit once it is
gone. No TensorFlow here: worker processes import this module."""

import contextlib
from multiprocessing import resource_tracker
import os
import select
import signal
import sys
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_PARENT_POLL_SECONDS = 0.5


def start(process, context, main_module=True, preload=None):
    """Start a worker process that ignores SIGINT and SIGTERM from the start.

    Args:
        process: Unstarted process of `context` whose target first calls
            `leave_stopping_to_parent`.
        main_module: Whether the child imports the parent's main module.
        preload: Module for the fork server to import before it forks.
    """
    # The resource tracker unblocks the signals when it starts, so it starts
    # before they are blocked.
    resource_tracker.ensure_running()
    # The child inherits the blocked signals and ignores them before it could
    # receive one.
    with _signals_blocked(), (
            contextlib.nullcontext() if main_module else _main_hidden()):
        if context.get_start_method() == 'forkserver':
            _start_forkserver(context, preload)
        process.start()


def leave_stopping_to_parent(conn):
    """Called first in a worker: ignore stop signals, exit with the parent
    (`conn`: the worker's end of the pipe to it)."""
    # A handler that does nothing rather than SIG_IGN, so that programs the
    # environment executes get the default handling back.
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda *unused: None)
    # The parent blocked them while starting this process.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _exit_with_parent(conn)


def reap(process, seconds):
    """Wait `seconds` for a process to exit, then kill it."""
    process.join(seconds)
    if process.exitcode is None:
        process.kill()
        process.join()


@contextlib.contextmanager
def _signals_blocked():
    """Block SIGINT and SIGTERM in this thread (and its new processes)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _main_hidden():
    """Hide the main module from the children started meanwhile."""
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
    """Start the fork server (importing `preload`) unless it runs."""
    from multiprocessing import forkserver
    server = getattr(forkserver, '_forkserver', None)
    modules = getattr(server, '_preload_modules', None)
    if preload and modules is not None and preload not in modules:
        context.set_forkserver_preload(list(modules) + [preload])
    if server is not None:
        server.ensure_running()


def _exit_with_parent(conn):
    """Exit once the parent is gone, by a thread watching `conn`."""
    parent = os.getppid()
    poller = select.poll()
    hang_up = select.POLLHUP | getattr(select, 'POLLRDHUP', 0)
    poller.register(conn.fileno(), hang_up)

    def watch():
        # The pid too: forked siblings keep the pipe open.
        while os.getppid() == parent:
            events = poller.poll(_PARENT_POLL_SECONDS * 1000)
            if any(event & select.POLLNVAL for _, event in events):
                return  # The worker closed the pipe and is exiting.
            if any(event & hang_up for _, event in events):
                break
        # Skip cleanup, which may hang in the same environment.
        os._exit(1)  # pylint: disable=protected-access

    threading.Thread(target=watch, name='exit_with_parent', daemon=True).start()
