"""The run folder `<logdir>/<timestamp>-<config>`: which, files, lock."""

import contextlib
import datetime
import fcntl
import io
import logging
import os
import re

import ruamel.yaml

from agents import tools
from agents.tools import atomic_file
from agents.training import checkpoints
from agents.training import config_io
from agents.training import config_overrides
from agents.training import config_spec

LOCK_NAME = '.lock'
PROVENANCE = 'provenance.yaml'
_TIMESTAMP = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$')


def _runs_of_timestamp(logdir, timestamp):
    """The sorted config names of a timestamp's resumable run folders."""
    names = os.listdir(logdir) if os.path.isdir(logdir) else ()
    return sorted(
        name.rpartition('-')[2] for name in names
        if name.rpartition('-')[0] == timestamp
        and os.path.isfile(os.path.join(logdir, name, 'config.yaml')))


class RunFolderInUse(RuntimeError):
    """Another process holds the lock of a run folder."""

    def __init__(self, run_dir, pid):
        holder = f'process {pid}' if pid else 'another process'
        super().__init__(
            f'Run folder {run_dir} is in use by {holder}, another trainer; '
            'wait for it to end, or pass another --timestamp for a new run.')
        self.pid = pid


class RunFolderMoved(RuntimeError):
    """The locked run folder was moved or removed while its trainer ran."""


class RunLock:
    """A trainer's `fcntl.flock` on a run folder's `.lock` (or on None),
    which the kernel releases however the process ends; `resumed`: whether
    the folder had a `config.yaml`."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.resumed = bool(run_dir) and os.path.exists(
            os.path.join(run_dir, 'config.yaml'))
        self._path = run_dir and os.path.join(run_dir, LOCK_NAME)
        self._fd = None
        self._folder = None
        self._created = []

    @property
    def held(self):
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self):
        """Take the lock or raise, writing nothing; returns self."""
        if self.held or not self.run_dir:
            return self
        # The folders it creates, outer first, for `release` to remove.
        self._created = []
        directory = os.path.abspath(self.run_dir)
        while not os.path.exists(directory):
            self._created.insert(0, directory)
            directory = os.path.dirname(directory)
        os.makedirs(self.run_dir, exist_ok=True)
        while True:
            fd = os.open(
                self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = _read_pid(fd)
                os.close(fd)
                raise RunFolderInUse(self.run_dir, pid) from None
            # Unless the holder before removed the file we opened.
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
        self._folder = os.stat(self.run_dir)
        return self

    def check(self):
        """Raise `RunFolderMoved` unless the path names the locked folder."""
        if not self.held:
            return
        try:
            folder = os.stat(self.run_dir)
            lock = os.stat(self._path)
        except OSError:
            folder = lock = None
        if not (folder and os.path.samestat(folder, self._folder)
                and os.path.samestat(lock, os.fstat(self._fd))):
            raise RunFolderMoved(
                f'Run folder {self.run_dir} was moved or removed while '
                'training; stopped without saving there. A moved folder '
                'resumes from its last checkpoint where it is now.')

    def release(self, remove_created=False):
        """Release the lock (and `remove_created` empty folders); no raise."""
        if not self.held:
            return
        fd, self._fd = self._fd, None
        try:
            # Removed while locked (see `acquire`), and not where the folder
            # moved: the path may hold another trainer's lock by now.
            with contextlib.suppress(OSError):
                if os.path.samestat(os.stat(self._path), os.fstat(fd)):
                    os.remove(self._path)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        if remove_created:
            for directory in reversed(self._created):
                try:
                    os.rmdir(directory)
                except OSError:
                    break
        self._created = []


@contextlib.contextmanager
def locked(run_dir):
    """Lock a trainer's run folder (or None), naming it in the log; yield
    the `RunLock`; a new run's folder goes where empty at the end. A
    ConfigError where the folder is in use, cannot be created, or is new and
    holds checkpoints."""
    lock = RunLock(run_dir)
    if run_dir:
        # First: visualize, export and TensorBoard need it.
        logging.getLogger('agents').info(
            'Run folder %s%s.', run_dir, ', resumed' if lock.resumed else '')
        try:
            lock.acquire()
        except RunFolderInUse as error:
            raise config_io.ConfigError(str(error)) from None
        except OSError as error:
            raise config_io.ConfigError(
                f'Cannot create the run folder {run_dir}: '
                f'{error.strerror or error}.') from error
    with contextlib.ExitStack() as stack:
        # The folder of a new run is empty until it wrote `config.yaml`.
        stack.callback(lock.release, remove_created=True)
        # A new run restores no checkpoints it did not write.
        found = run_dir and not lock.resumed and (
            checkpoints.list_checkpoints(run_dir))
        if found:
            raise config_io.ConfigError(
                f'Run folder {run_dir} holds checkpoints of another run '
                f'({os.path.basename(found[0])}) but no config.yaml; a '
                'new run restores none it did not write: pass another '
                '--timestamp.')
        yield lock


def write_provenance(run_dir, record):
    """Write a record to the folder's `provenance.yaml`; return its path."""
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(dict(record), stream)
    path = os.path.join(run_dir, PROVENANCE)
    atomic_file.write_atomic(path, stream.getvalue())
    return path


def prepare_run(logdir, config_name, timestamp, settings=()):
    """The configuration, the run folder (or None) and the timestamp of a
    run of the config spec `config_name` (None: resume) and the `timestamp`
    (None: the current time), writing nothing; the 'KEY=VALUE' `settings` of
    a resumed run must match its saved configuration. A ConfigError where an
    argument or the saved configuration cannot be used."""
    if not logdir:
        if not config_name:
            raise config_io.ConfigError('Pass --config (and usually --logdir).')
        return _new_config(config_name, settings), None, None
    logdir = os.path.expanduser(logdir)
    if timestamp is not None and not _TIMESTAMP.match(timestamp):
        raise config_io.ConfigError(
            f'--timestamp={timestamp!r} must be 1 to 100 letters, digits, '
            "'.', '_', '+' or '-', starting with a letter or digit; it names "
            'a folder inside --logdir.')
    timestamp = timestamp or datetime.datetime.now().strftime(
        '%Y%m%dT%H%M%S')
    runs = _runs_of_timestamp(logdir, timestamp)
    label = config_name and config_spec.config_label(config_name)
    if config_name and runs and label not in runs:
        name, = runs[:1]
        raise config_io.ConfigError(
            f"Run folder {os.path.join(logdir, f'{timestamp}-{name}')} of "
            f"--timestamp={timestamp} has the config '{name}', not "
            f"'{label}'; pass --config={name} or no --config to "
            'resume it, or another --timestamp for a new run.')
    if not config_name and len(runs) > 1:
        raise config_io.ConfigError(
            f'Several run folders have --timestamp={timestamp} in {logdir}, '
            f"of the configs {', '.join(runs)}; pass --config to choose.")
    if runs:
        run_dir = os.path.join(logdir, f'{timestamp}-{label or runs[0]}')
        logging.getLogger('agents').info('Resuming run %s.', run_dir)
        config = config_io.load_config(run_dir)
        _check_resume_overrides(config, settings, run_dir)
    elif not config_name:
        raise config_io.ConfigError(
            'Pass --config to start a new run (no run folder with timestamp '
            f"'{timestamp}' in {logdir}).")
    else:
        config = _new_config(config_name, settings)
        run_dir = os.path.join(logdir, f'{timestamp}-{label}')
        check_writable(logdir)
    with config.unlocked:
        config.logdir = run_dir
    return config, run_dir, timestamp


def _new_config(config_name, settings):
    """The config of a spec, with the overrides applied."""
    config = config_spec.load_config_spec(config_name)
    config_overrides.apply_overrides(config, settings)
    return config


def _check_resume_overrides(config, settings, run_dir):
    """Raise a ConfigError naming the first `--set` that changes a run."""
    changed = tools.AttrDict(config)
    for setting in settings:
        key, value = next(iter(
            config_overrides.apply_overrides(changed, [setting]).items()))
        if config[key] != value:
            raise config_io.ConfigError(
                f'--set={setting} would change {key} of the resumed run '
                f'{run_dir} from {config[key]!r} to {value!r}; a resumed '
                'run keeps its config.yaml. Start a new run (another '
                '--timestamp) to change it.')


def check_writable(logdir):
    """Raise a one-line ConfigError where `logdir` cannot be written."""
    existing = os.path.abspath(logdir)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise config_io.ConfigError(
            f'--logdir {logdir} cannot be created: {existing} is a file, '
            'expected a directory.')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise config_io.ConfigError(
            f'--logdir {logdir} is not writable: {existing} denies writing.')


def _read_pid(fd):
    """The process id written in a lock file, or None."""
    try:
        content = os.pread(fd, 32, 0).decode('ascii', 'replace').strip()
    except OSError:
        return None
    return int(content) if content.isdigit() else None
