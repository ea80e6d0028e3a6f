"""What produced a run: command line, versions, commit, machine."""

import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import socket
import subprocess
import sys

from agents.tools import sliced_batch_env

# Recorded packages and the distributions that provide them, first found
# wins (TensorFlow also ships as tensorflow-cpu, for example).
PACKAGES = {
    'tensorflow': ('tensorflow', 'tensorflow-cpu', 'tensorflow-macos',
                   'tf-nightly'),
    'gymnasium': ('gymnasium',),
    'mujoco': ('mujoco',),
    'numpy': ('numpy',),
    'envpool': ('envpool',),
    'ray': ('ray',),
    'agents': ('batch-ppo',),
}
KEYS = ('command', 'python', 'packages', 'git_commit', 'git_dirty', 'host',
        'started', 'machine')
# Keys of `machine()`.
MACHINE_KEYS = ('cpu_model', 'cores', 'usable_cores', 'load_average')
_GIT_TIMEOUT = 5.0
# Where Linux names the CPU model.
_CPUINFO = '/proc/cpuinfo'


def record(argv=None, packages=None):
    """What a run folder should remember of the running process: a dict of
    `KEYS`, whose `packages` maps names to versions or None. `argv`: the
    command line as a list of strings (`sys.argv` by default); `packages`: a
    dict like `PACKAGES` (the default) of the packages to record."""
    argv = sys.argv if argv is None else argv
    commit, dirty = git_state(package_root())
    started = datetime.datetime.now(datetime.timezone.utc)
    return dict(
        command=shlex.join(str(arg) for arg in argv),
        python=sys.version.split()[0],
        packages={
            name: package_version(*distributions)
            for name, distributions in (packages or PACKAGES).items()},
        git_commit=commit,
        git_dirty=dirty,
        host=socket.gethostname(),
        started=started.isoformat(timespec='seconds').replace(
            '+00:00', 'Z'),
        machine=machine())


def machine():
    """The CPU of this machine and its load now, as a dict of MACHINE_KEYS."""
    try:
        load = [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return dict(
        cpu_model=cpu_model(), cores=os.cpu_count(),
        usable_cores=sliced_batch_env.available_cpus(), load_average=load)


def cpu_model():
    """The CPU model of /proc/cpuinfo, else the platform's processor name."""
    try:
        with open(_CPUINFO, encoding='utf-8') as file_:
            for line in file_:
                key, _, value = line.partition(':')
                if key.strip() == 'model name' and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_json(path, report, provenance):
    """Write a benchmark's report (a dict without a `provenance` key) as
    JSON, with `provenance`, the `record` of its start, whose `machine` gains
    `load_average_end`; return the dict written."""
    provenance = dict(provenance, machine=dict(
        provenance['machine'], load_average_end=machine()['load_average']))
    written = dict(report, provenance=provenance)
    with open(path, 'w', encoding='utf-8') as file_:
        json.dump(written, file_, indent=1)
        file_.write('\n')
    return written


def package_version(*distributions):
    """Version of the first installed of the distributions, or None."""
    for distribution in distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def package_root():
    """Folder that holds the `agents` package that is running."""
    return os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))


def git_state(root):
    """Commit and dirty flag of the checkout whose top is `root`, or Nones."""
    top = _git(root, 'rev-parse', '--show-toplevel')
    try:
        if top is None or not os.path.samefile(top, root):
            return None, None
    except OSError:
        return None, None
    commit = _git(root, 'rev-parse', 'HEAD')
    changes = _git(root, 'status', '--porcelain', '--untracked-files=no')
    if commit is None or changes is None:
        return None, None
    return commit, bool(changes)


def _git(root, *args):
    """Output of a git command in `root` without the trailing newline."""
    try:
        result = subprocess.run(
            ('git', '-C', root) + args, capture_output=True, text=True,
            timeout=_GIT_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode:
        return None
    return result.stdout.strip()
