"""Tests of the provenance record of a run."""

import datetime
import json
import os
import platform
import socket
import subprocess
import sys

import gymnasium
import mujoco
import numpy as np
import pytest

from agents.training import provenance


def _git(root, *args):
    return subprocess.run(
        ('git', '-C', str(root)) + args, capture_output=True, text=True,
        check=True).stdout.strip()


@pytest.fixture(name='repo')
def _repo(tmp_path):
    """A git repository with one commit of one file."""
    root = tmp_path / 'repo'
    root.mkdir()
    _git(root, 'init', '-q')
    _git(root, 'config', 'user.email', 'test@example.com')
    _git(root, 'config', 'user.name', 'Test')
    (root / 'module.py').write_text('VALUE = 1\n', encoding='utf-8')
    _git(root, 'add', 'module.py')
    _git(root, 'commit', '-q', '-m', 'first')
    return root


def test_record_keys_and_values(monkeypatch):
    """Exact keys; command, versions, host and time of this process."""
    before = datetime.datetime.now(datetime.timezone.utc).replace(
        microsecond=0)
    record = provenance.record(
        ['agents/scripts/train.py', '--config=pendulum', '--set=a=b c'])
    after = datetime.datetime.now(datetime.timezone.utc)
    assert tuple(sorted(record)) == tuple(sorted(provenance.KEYS))
    assert record['command'] == (
        "agents/scripts/train.py --config=pendulum '--set=a=b c'")
    assert record['python'] == '.'.join(map(str, sys.version_info[:3]))
    assert list(record['packages']) == [
        'tensorflow', 'gymnasium', 'mujoco', 'numpy', 'envpool', 'ray',
        'agents']
    assert record['host'] == socket.gethostname()
    assert record['started'].endswith('Z')
    started = datetime.datetime.fromisoformat(
        record['started'].replace('Z', '+00:00'))
    assert before <= started <= after
    monkeypatch.setattr(sys, 'argv', ['benchmarks/learning.py', '--seeds=0'])
    assert provenance.record()['command'] == (
        'benchmarks/learning.py --seeds=0')


def _fake_machine(tmp_path, monkeypatch):
    """A machine of 2 cores, 1 usable, with a fake CPU model and load."""
    cpuinfo = tmp_path / 'cpuinfo'
    cpuinfo.write_text(
        'processor\t: 0\nvendor_id\t: GenuineIntel\n'
        'model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: avx512f\n\n'
        'processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n',
        encoding='utf-8')
    monkeypatch.setattr(provenance, '_CPUINFO', str(cpuinfo))
    monkeypatch.setattr(os, 'cpu_count', lambda: 2)
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {1})
    monkeypatch.setattr(os, 'getloadavg', lambda: (1.234, 0.5, 0.0625))


def test_record_carries_cpu_model_cores_load_and_versions(
        tmp_path, monkeypatch):
    """The CPU model, cores, load averages and versions of the machine."""
    _fake_machine(tmp_path, monkeypatch)
    record = provenance.record([])
    assert record['machine'] == dict(
        cpu_model='Intel(R) Xeon(R) Processor', cores=2, usable_cores=1,
        load_average=[1.23, 0.5, 0.06])
    assert tuple(record['machine']) == provenance.MACHINE_KEYS
    assert record['packages']['numpy'] == np.__version__
    assert record['packages']['mujoco'] == mujoco.__version__
    assert record['python'] == platform.python_version()
    extra = provenance.record([], packages=dict(
        numpy=('numpy',), peer=('no-such-distribution-xyz',)))
    assert extra['packages'] == dict(numpy=np.__version__, peer=None)


def test_cpu_model_without_cpuinfo(tmp_path, monkeypatch):
    """Without /proc/cpuinfo, the platform's processor or architecture."""
    monkeypatch.setattr(provenance, '_CPUINFO', str(tmp_path / 'missing'))
    monkeypatch.setattr(platform, 'processor', lambda: 'arm')
    assert provenance.cpu_model() == 'arm'
    monkeypatch.setattr(platform, 'processor', lambda: '')
    monkeypatch.setattr(platform, 'machine', lambda: 'arm64')
    assert provenance.cpu_model() == 'arm64'


def test_write_json_adds_the_provenance_and_the_load_at_the_end(
        tmp_path, monkeypatch):
    """The report, then the record with the load when it was written."""
    _fake_machine(tmp_path, monkeypatch)
    record = provenance.record(['benchmarks/envs.py'])
    monkeypatch.setattr(os, 'getloadavg', lambda: (2.0, 1.0, 0.5))
    path = str(tmp_path / 'result.json')
    written = provenance.write_json(path, dict(rate=5.5), record)
    with open(path, encoding='utf-8') as file_:
        assert json.load(file_) == written
    assert list(written) == ['rate', 'provenance']
    assert written['provenance'] == dict(record, machine=dict(
        cpu_model='Intel(R) Xeon(R) Processor', cores=2, usable_cores=1,
        load_average=[1.23, 0.5, 0.06], load_average_end=[2.0, 1.0, 0.5]))
    assert record['machine']['load_average'] == [1.23, 0.5, 0.06]


def test_versions_are_those_of_the_installed_packages():
    """Versions match the modules; a missing package is None."""
    packages = provenance.record([])['packages']
    assert packages['numpy'] == np.__version__
    assert packages['gymnasium'] == gymnasium.__version__
    assert packages['mujoco'] == mujoco.__version__
    # pylint: disable=import-outside-toplevel
    import tensorflow as tf
    assert packages['tensorflow'] == tf.__version__
    assert provenance.package_version('no-such-distribution-xyz') is None
    assert provenance.package_version(
        'no-such-distribution-xyz', 'numpy') == np.__version__


def test_git_state_of_a_checkout(repo):
    """The commit of HEAD; dirty once a tracked file changes."""
    head = _git(repo, 'rev-parse', 'HEAD')
    assert len(head) == 40
    assert provenance.git_state(str(repo)) == (head, False)
    (repo / 'notes.txt').write_text('untracked\n', encoding='utf-8')
    assert provenance.git_state(str(repo)) == (head, False)
    (repo / 'module.py').write_text('VALUE = 2\n', encoding='utf-8')
    assert provenance.git_state(str(repo)) == (head, True)


def test_git_state_outside_a_checkout(tmp_path, repo, monkeypatch):
    """Not a checkout, a folder inside another one, or no git: None."""
    outside = tmp_path / 'plain'
    outside.mkdir()
    assert provenance.git_state(str(outside)) == (None, None)
    inside = repo / 'venv' / 'site-packages'
    inside.mkdir(parents=True)
    assert provenance.git_state(str(inside)) == (None, None)
    assert provenance.git_state(str(tmp_path / 'missing')) == (None, None)
    monkeypatch.setenv('PATH', str(outside))
    assert provenance.git_state(str(repo)) == (None, None)


def test_record_takes_the_commit_of_the_package_checkout(repo, monkeypatch):
    """record() asks git about the folder that holds the package."""
    head = _git(repo, 'rev-parse', 'HEAD')
    monkeypatch.setattr(provenance, 'package_root', lambda: str(repo))
    record = provenance.record([])
    assert (record['git_commit'], record['git_dirty']) == (head, False)
    monkeypatch.setattr(
        provenance, 'package_root', lambda: str(repo.parent))
    record = provenance.record([])
    assert (record['git_commit'], record['git_dirty']) == (None, None)


def test_package_root_holds_the_package():
    """The root is the folder with the agents package in it."""
    root = provenance.package_root()
    assert os.path.isfile(os.path.join(root, 'agents', 'training',
                                       'provenance.py'))
