"""Tests of the scripts' persistent XLA cache setting."""

import importlib
import os
import subprocess
import sys

import pytest

from agents.training import xla_cache


@pytest.fixture(name='environ')
def _environ(monkeypatch, tmp_path):
    monkeypatch.delenv('TF_XLA_FLAGS', raising=False)
    monkeypatch.delenv(xla_cache.VARIABLE, raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    return os.environ


def test_default_directory_follows_xdg(environ, tmp_path):
    assert environ['XDG_CACHE_HOME'] == str(tmp_path)
    assert xla_cache.default_directory() == str(
        tmp_path / 'batch-ppo' / 'xla')


def test_nothing_once_tensorflow_is_loaded(environ):
    # Once loaded, TensorFlow has read its flags already.
    importlib.import_module('tensorflow')
    assert xla_cache.use_persistent_cache() is None
    assert 'TF_XLA_FLAGS' not in environ


def _in_fresh_python(code, env):
    """Run code in a Python without TensorFlow loaded; its stdout."""
    return subprocess.run(
        [sys.executable, '-c', code], env=env, check=True,
        capture_output=True, text=True).stdout.strip()


_SET = (
    'from agents.training import xla_cache; '
    'print(xla_cache.use_persistent_cache()); '
    'import os; print(os.environ.get("TF_XLA_FLAGS"))')


def test_sets_the_flag_and_makes_the_folder(environ, tmp_path):
    folder = tmp_path / 'batch-ppo' / 'xla'
    output = _in_fresh_python(_SET, dict(environ, TF_XLA_FLAGS='--other=1'))
    assert output.splitlines() == [
        str(folder), f'--other=1 {xla_cache.FLAG}={folder}']
    assert folder.is_dir()


def test_keeps_the_users_folder_and_skips_an_unwritable_one(
        environ, tmp_path):
    own = f'{xla_cache.FLAG}=/somewhere'
    output = _in_fresh_python(_SET, dict(environ, TF_XLA_FLAGS=own))
    assert output.splitlines() == ['None', own]
    blocked = tmp_path / 'file'
    blocked.write_text('')
    output = _in_fresh_python(_SET, dict(environ, XDG_CACHE_HOME=str(
        blocked)))
    assert output.splitlines() == ['None', 'None']


_REQUESTED = (
    'from agents.training import xla_cache; '
    'print(xla_cache.use_requested_cache()); '
    'import os; print(os.environ.get("TF_XLA_FLAGS"))')


def test_the_scripts_use_the_cache_only_where_asked(environ, tmp_path):
    """Unset or 0: no cache; 1: the default folder; else that folder."""
    assert _in_fresh_python(_REQUESTED, dict(environ)).splitlines() == [
        'None', 'None']
    output = _in_fresh_python(_REQUESTED, dict(
        environ, **{xla_cache.VARIABLE: '0'}))
    assert output.splitlines() == ['None', 'None']
    folder = tmp_path / 'batch-ppo' / 'xla'
    output = _in_fresh_python(_REQUESTED, dict(
        environ, **{xla_cache.VARIABLE: '1'}))
    assert output.splitlines() == [str(folder), f'{xla_cache.FLAG}={folder}']
    own = tmp_path / 'own'
    output = _in_fresh_python(_REQUESTED, dict(
        environ, **{xla_cache.VARIABLE: str(own)}))
    assert output.splitlines() == [str(own), f'{xla_cache.FLAG}={own}']
    assert own.is_dir()


# Small networks and one update epoch: the programs are the same ones.
_GRAPH_RUN = (
    '--config=pendulum', '--env_mode=graph', '--set=steps=2000',
    '--set=eval_episodes=8', '--set=policy_layers=[8]',
    '--set=value_layers=[8]', '--set=update_epochs=1')


def test_a_second_run_of_a_graph_loads_every_program_from_the_cache(
        environ, tmp_path):
    """The compiled collection, update and evaluation of a run keep the
    same keys in the cache from one process to the next (Grappler's
    control-flow sinking used to shuffle constants) and from one seed to
    the next (the seeds are inputs of the programs), so a second run,
    of another seed, adds no program."""
    cache = tmp_path / 'cache'
    env = dict(environ, **{xla_cache.VARIABLE: str(cache)})
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    listings = []
    for seed in (0, 1):
        result = subprocess.run(
            [sys.executable, '-m', 'agents.scripts.train',
             f'--logdir={tmp_path / str(seed)}', *_GRAPH_RUN,
             f'--set=seed={seed}'],
            env=env, capture_output=True, text=True, timeout=300,
            check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        listings.append(sorted(os.listdir(cache)))
    # Training, the update and the evaluation, each one program.
    assert len(listings[0]) == 3, listings[0]
    assert listings[1] == listings[0]
