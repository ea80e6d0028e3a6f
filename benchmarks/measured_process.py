"""Run a command as a child process and measure its process tree.

The measurements of benchmarks/peers.py and its population benchmark: the
wall-clock time, the peak memory and the CPU time of a command and every
process it starts, read from outside (psutil and /proc), so that the
command itself runs unchanged.
"""

import os
import subprocess
import tempfile
import time

# The repository, importable by the commands.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_POLL_SECONDS = 0.1
_PSS_SECONDS = 2.0


def run_command(command, label, env=None):
    """Run a command with the repository importable and measure it.

    Args:
        command: List of the program and its arguments.
        label: What runs, for the error ('Run ours seed 3').
        env: Extra environment variables, or None.

    Raises:
        RuntimeError: With the end of the command's output when it exits
            with a non-zero status.

    Returns:
        Dict of `wall_seconds` (from the start of the process to its exit,
        interpreter start and imports included) and what `watch` measures:
        peak_rss, peak_pss, cpu_seconds.
    """
    import psutil
    with tempfile.TemporaryDirectory() as folder:
        log_path = os.path.join(folder, 'log.txt')
        start = time.monotonic()
        with open(log_path, 'w', encoding='utf-8') as log, \
                subprocess.Popen(command, stdout=log,
                                 stderr=subprocess.STDOUT,
                                 env=child_environment(env)) as process:
            measured = watch(psutil, process)
        measured['wall_seconds'] = time.monotonic() - start
        if process.returncode:
            with open(log_path, encoding='utf-8') as log:
                output = log.read()[-4000:]
            raise RuntimeError(
                f'{label} exited with {process.returncode}:\n{output}')
    return measured


def child_environment(env=None):
    """This process's environment variables with the repository on the
    Python path, TensorFlow's start-up lines silenced, and `env`'s."""
    env = {**os.environ, 'TF_CPP_MIN_LOG_LEVEL': '2', **(env or {})}
    env['PYTHONPATH'] = os.pathsep.join(
        filter(None, [_ROOT, env.get('PYTHONPATH')]))
    return env


def watch(psutil, process):
    """Peak memory and CPU time of a process tree until its root exits.

    Every `_POLL_SECONDS` the resident set sizes and CPU times of the known
    members are read (cheap); the tree is listed again every second and the
    proportional set sizes read every `_PSS_SECONDS` (expensive for
    TensorFlow processes with thousands of mappings), so that the watcher
    takes little CPU from the run it measures. Workers forked by a
    multiprocessing fork server are grandchildren that no process waits
    for, so `getrusage` would miss their CPU time; the last reading of each
    member counts instead.

    Returns:
        Dict of peak_rss (largest sum of RSS, counting shared pages once per
        process), peak_pss (largest sum of PSS, shared pages split among
        their processes) in bytes, and cpu_seconds.
    """
    members, cpu = {}, {}
    peak_rss = peak_pss = 0
    next_list = next_pss = 0.0
    try:
        root = psutil.Process(process.pid)
    except psutil.NoSuchProcess:
        root = None
    while process.poll() is None and root is not None:
        now = time.monotonic()
        if now >= next_list:
            next_list = now + 1.0
            try:
                for member in [root] + root.children(recursive=True):
                    members.setdefault(
                        (member.pid, member.create_time()), member)
            except psutil.Error:
                pass
        total_rss, total_pss = 0, 0
        read_pss = now >= next_pss
        for key, member in list(members.items()):
            # A worker may exit between listing and reading it.
            try:
                with member.oneshot():
                    total_rss += member.memory_info().rss
                    times = member.cpu_times()
                cpu[key] = times.user + times.system
                if read_pss:
                    total_pss += _read_pss(member.pid)
            except (psutil.Error, OSError):
                members.pop(key)
        peak_rss = max(peak_rss, total_rss)
        if read_pss:
            next_pss = now + _PSS_SECONDS
            peak_pss = max(peak_pss, total_pss)
        time.sleep(_POLL_SECONDS)
    return dict(peak_rss=peak_rss, peak_pss=peak_pss,
                cpu_seconds=sum(cpu.values()))


def _read_pss(pid):
    """Proportional set size of a process in bytes (Linux)."""
    with open(f'/proc/{pid}/smaps_rollup', encoding='ascii') as file_:
        for line in file_:
            if line.startswith('Pss:'):
                return int(line.split()[1]) * 1024
    return 0
