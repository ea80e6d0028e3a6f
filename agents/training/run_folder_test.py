"""Tests for the lock of a run folder."""

import errno
import os
import signal
import subprocess
import sys

import pytest
import ruamel.yaml

from agents.training import run_folder

_HOLDER_SCRIPT = """
import sys
from agents.training import run_folder
lock = run_folder.RunLock(sys.argv[1]).acquire()
print('locked', flush=True)
sys.stdin.readline()
"""


def test_second_lock_fails_naming_the_folder_and_the_holder(tmp_path):
    """The second lock of a folder fails, naming the first one's process."""
    run_dir = str(tmp_path / 'runs' / 'T-pendulum')
    lock = run_folder.RunLock(run_dir).acquire()
    with open(os.path.join(run_dir, run_folder.LOCK_NAME), 'rb') as file_:
        content = file_.read()
    assert content == f'{os.getpid()}\n'.encode()
    with pytest.raises(run_folder.RunFolderInUse) as error:
        run_folder.RunLock(run_dir).acquire()
    assert str(error.value) == (
        f'Run folder {run_dir} is in use by process {os.getpid()}, '
        'another trainer; wait for it to end, or pass another '
        '--timestamp for a new run.')
    with open(os.path.join(run_dir, run_folder.LOCK_NAME), 'rb') as file_:
        assert file_.read() == content
    lock.release()
    assert os.listdir(run_dir) == []


def test_killed_holder_leaves_no_lock(tmp_path):
    """The lock of a process killed with SIGKILL is free at once."""
    run_dir = str(tmp_path / 'T-pendulum')
    with subprocess.Popen(
            [sys.executable, '-c', _HOLDER_SCRIPT, run_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout.readline() == 'locked\n'
            with pytest.raises(run_folder.RunFolderInUse) as error:
                run_folder.RunLock(run_dir).acquire()
            assert error.value.pid == holder.pid
        finally:
            holder.send_signal(signal.SIGKILL)
    # The killed holder left its lock file, unlocked.
    assert os.listdir(run_dir) == [run_folder.LOCK_NAME]
    lock = run_folder.RunLock(run_dir).acquire()
    lock.release()
    assert os.listdir(run_dir) == []


def test_release_removes_the_folders_that_acquire_created(tmp_path):
    """A run that wrote nothing can remove the folders made for the lock."""
    (tmp_path / 'runs').mkdir()
    lock = run_folder.RunLock(str(tmp_path / 'runs' / 'new' / 'T-pendulum'))
    lock.acquire()
    assert lock.held
    lock.release(remove_created=True)
    assert not lock.held
    assert os.listdir(tmp_path) == ['runs']
    assert os.listdir(tmp_path / 'runs') == []


def _fail_removals_below(monkeypatch, run_dir):
    """Make `os.remove` fail with EROFS below `run_dir`, as read-only.

    Returns:
      The real `os.remove`, to set back.
    """
    remove = os.remove

    def read_only_remove(path, *args, **kwargs):
        if str(path).startswith(run_dir):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return remove(path, *args, **kwargs)

    monkeypatch.setattr(os, 'remove', read_only_remove)
    return remove


def test_release_in_a_read_only_folder_raises_nothing_and_frees_it(
        tmp_path, monkeypatch):
    """A folder that became read-only keeps its lock file, which is free.

    Tests run as root here, which writes regardless of permissions, so
    removal fails as on a read-only mount: with EROFS, mocked.
    """
    run_dir = str(tmp_path / 'T-pendulum')
    lock = run_folder.RunLock(run_dir).acquire()
    remove = _fail_removals_below(monkeypatch, run_dir)
    lock.release()
    assert not lock.held
    assert os.listdir(run_dir) == [run_folder.LOCK_NAME]
    monkeypatch.setattr(os, 'remove', remove)
    run_folder.RunLock(run_dir).acquire().release()
    assert os.listdir(run_dir) == []


@pytest.mark.parametrize('change', ['move', 'remove', 'replace'])
def test_lock_follows_the_path_of_the_folder(tmp_path, change):
    """A folder moved, removed or replaced by another trainer's fails
    `check`; the other trainer's lock survives the release."""
    run_dir = str(tmp_path / 'T-pendulum')
    lock = run_folder.RunLock(run_dir).acquire()
    lock.check()
    if change == 'remove':
        os.remove(os.path.join(run_dir, run_folder.LOCK_NAME))
        os.rmdir(run_dir)
    else:
        os.rename(run_dir, str(tmp_path / 'moved'))
    other = run_folder.RunLock(run_dir).acquire() if (
        change == 'replace') else None
    with pytest.raises(run_folder.RunFolderMoved) as error:
        lock.check()
    assert str(error.value) == (
        f'Run folder {run_dir} was moved or removed while training; '
        'stopped without saving there. A moved folder resumes from its '
        'last checkpoint where it is now.')
    lock.release()
    if other:
        assert os.path.exists(os.path.join(run_dir, run_folder.LOCK_NAME))
        with pytest.raises(run_folder.RunFolderInUse):
            run_folder.RunLock(run_dir).acquire()
        other.release()


def _read_provenance(run_dir):
    path = os.path.join(run_dir, run_folder.PROVENANCE)
    with open(path, encoding='utf-8') as file_:
        return ruamel.yaml.YAML(typ='safe', pure=True).load(file_)


def test_provenance_write_is_atomic_safe_yaml(tmp_path):
    """provenance.yaml reads back equal; no temporary file is left."""
    record = dict(
        command='train --config=pendulum', python='3.11.7',
        packages=dict(tensorflow='2.21.0', envpool=None),
        git_commit='0' * 40, git_dirty=True, host='vm',
        started='2026-11-25T00:40:00Z')
    path = run_folder.write_provenance(str(tmp_path), record)
    assert path == os.path.join(str(tmp_path), 'provenance.yaml')
    assert os.listdir(tmp_path) == ['provenance.yaml']
    with open(path, encoding='utf-8') as file_:
        assert file_.read() == (
            'command: train --config=pendulum\n'
            f"git_commit: '{'0' * 40}'\n"
            'git_dirty: true\n'
            'host: vm\n'
            'packages:\n'
            '  envpool: null\n'
            '  tensorflow: 2.21.0\n'
            'python: 3.11.7\n'
            "started: '2026-11-25T00:40:00Z'\n")
    assert _read_provenance(tmp_path) == record
    record['host'] = 'other'
    run_folder.write_provenance(str(tmp_path), record)
    assert os.listdir(tmp_path) == ['provenance.yaml']
    assert _read_provenance(tmp_path)['host'] == 'other'


def test_failed_provenance_write_leaves_old_file(
        tmp_path, monkeypatch):
    """A failed write keeps the old file and leaves no temporary file."""
    run_folder.write_provenance(str(tmp_path), dict(host='vm'))
    with pytest.raises(ruamel.yaml.representer.RepresenterError):
        run_folder.write_provenance(str(tmp_path), dict(host=object()))
    assert os.listdir(tmp_path) == ['provenance.yaml']

    def fail_rename(unused_source, unused_destination):
        assert len(os.listdir(tmp_path)) == 2  # The temporary file.
        raise OSError('disk full')

    monkeypatch.setattr(os, 'replace', fail_rename)
    with pytest.raises(OSError) as error:
        run_folder.write_provenance(str(tmp_path), dict(host='other'))
    assert str(error.value) == 'disk full'
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ['provenance.yaml']
    assert _read_provenance(tmp_path) == dict(host='vm')
