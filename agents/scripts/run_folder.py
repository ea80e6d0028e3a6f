"""The run folder: its name, and one trainer at a time in it.

A run folder `<logdir>/<timestamp>-<config>` holds a run: its config.yaml,
checkpoints and summaries. Its timestamp names a folder inside `--logdir`
and nothing else.

Two trainers writing one run folder overwrite each other's checkpoints and
corrupt its event files. A trainer holds an exclusive `fcntl.flock` on the
file `.lock` in the run folder while it runs; the kernel releases it when the
process ends, however it ends, so a killed trainer leaves no stale lock
behind (the file may stay; an unlocked file is free). The file names the
process that holds it, for the error of the trainer that finds it taken.
"""

import contextlib
import fcntl
import os
import re

from agents.scripts import config_io

LOCK_NAME = '.lock'
_TIMESTAMP = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$')


def check_timestamp(timestamp):
    """Raise a one-line ConfigError unless a timestamp can name run folders.

    Args:
      timestamp: Value of --timestamp.

    Raises:
      config_io.ConfigError: Naming the value and the characters allowed.
    """
    if not _TIMESTAMP.match(timestamp):
        raise config_io.ConfigError(
            f'--timestamp={timestamp!r} must be 1 to 100 letters, digits, '
            "'.', '_', '+' or '-', starting with a letter or digit; it names "
            'a folder inside --logdir.')


def runs_of_timestamp(logdir, timestamp):
    """The config names of the resumable run folders of a timestamp.

    Config names hold no '-', so a folder `<timestamp>-<config>` splits at
    its last one, and a timestamp never matches the folders of a longer one.

    Args:
      logdir: Base directory of the run folders.
      timestamp: The timestamp.

    Returns:
      Sorted list of config names whose run folder holds a config.yaml.
    """
    if not os.path.isdir(logdir):
        return []
    names = []
    for name in os.listdir(logdir):
        prefix, _, config_name = name.rpartition('-')
        if prefix == timestamp and os.path.isfile(
                os.path.join(logdir, name, 'config.yaml')):
            names.append(config_name)
    return sorted(names)


class RunFolderInUse(RuntimeError):
    """Another process holds the lock of a run folder."""

    def __init__(self, run_dir, pid):
        holder = f'process {pid}' if pid else 'another process'
        super().__init__(
            f'Run folder {run_dir} is in use by {holder}, another trainer; '
            'wait for it to end, or pass another --timestamp for a new run.')
        self.run_dir = run_dir
        self.pid = pid


class RunLock:
    """The exclusive lock of a trainer on a run folder.

    `acquire` creates the run folder where needed, so that the lock exists
    before anything else is written; `release(remove_created=True)` removes
    what it created when the run wrote nothing after all.
    """

    def __init__(self, run_dir):
        """Prepare to lock a run folder; nothing happens before `acquire`.

        Args:
            run_dir: The run folder.
        """
        self.run_dir = run_dir
        self._path = os.path.join(run_dir, LOCK_NAME)
        self._fd = None
        self._created = []

    @property
    def held(self):
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self):
        """Take the lock, or fail without writing anything.

        Raises:
            RunFolderInUse: Naming the process that holds the lock.
            OSError: When the folder or the lock file cannot be created.

        Returns:
            This object.
        """
        if self.held:
            return self
        self._created = _make_dirs(self.run_dir)
        while True:
            fd = os.open(
                self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                raise RunFolderInUse(self.run_dir, pid) from None
            # The holder before may have removed the file between our open and
            # our lock: then the lock is on a file nobody else will see.
            try:
                current = os.stat(self._path)
            except FileNotFoundError:
                current = None
            if current and os.path.samestat(os.fstat(fd), current):
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, f'{os.getpid()}\n'.encode())
        self._fd = fd
        return self

    def release(self, remove_created=False):
        """Remove the lock file and release the lock; safe to call again.

        Args:
            remove_created: Whether to remove the folders that `acquire`
                created, where they are empty.
        """
        if not self.held:
            return
        # Removed while still locked, so that no other process locks it in
        # between; see the check in `acquire`.
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._path)
        os.close(self._fd)
        self._fd = None
        if remove_created:
            for directory in reversed(self._created):
                try:
                    os.rmdir(directory)
                except OSError:
                    break
        self._created = []

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *unused_exc_info):
        self.release()


def _make_dirs(directory):
    """Create a directory and its parents; return those created, outer first."""
    missing = []
    directory = os.path.abspath(directory)
    while not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    created = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        created.append(path)
    return created


def _read_pid(fd):
    """The process id written in a lock file, or None."""
    try:
        content = os.pread(fd, 32, 0).decode('ascii', 'replace').strip()
    except OSError:
        return None
    return int(content) if content.isdigit() else None
