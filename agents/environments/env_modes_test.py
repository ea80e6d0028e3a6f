"""Tests of the env modes."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from agents import tools
from agents.environments import auto_batch_env
from agents.scripts import configs
from agents.environments import env_construction
from agents.environments import env_modes
from agents.tools import envpool_batch_env
from agents.tools import sliced_batch_env
from agents.testing import worker_testing

_mock_constructor = worker_testing.mock_constructor


@pytest.mark.parametrize('value, mode', [
    (True, 'processes'), (False, 'inprocess'), ('auto', 'auto'),
    ('inprocess', 'inprocess'), ('processes', 'processes'),
    ('slices', 'slices')])
def test_check_env_mode_accepts_names_and_booleans(value, mode):
    assert env_modes.check_env_mode(value) == mode


@pytest.mark.parametrize('value', ['threads', 'Slices', 1, None])
def test_check_env_mode_names_the_value_and_the_choices(value):
    with pytest.raises(env_modes.ConfigError) as error:
        env_modes.check_env_mode(value)
    assert str(error.value) == (
        f'Unknown env mode {value!r}; expected one of '
        f"{', '.join(env_modes.mode_names())}.")
    assert env_modes.mode_names()[:4] == (
        'auto', 'inprocess', 'processes', 'slices')


@pytest.mark.parametrize('env_mode, env_processes, mode', [
    (None, None, 'auto'), ('slices', None, 'slices'),
    (None, True, 'processes'), (None, False, 'inprocess'),
    ('processes', True, 'processes'), ('inprocess', False, 'inprocess')])
def test_env_mode_from_flags(env_mode, env_processes, mode):
    assert env_modes.env_mode_from_flags(env_mode, env_processes) == mode


def test_env_mode_flags_that_disagree_raise_one_line():
    with pytest.raises(env_modes.ConfigError) as error:
        env_modes.env_mode_from_flags('slices', True)
    assert str(error.value) == (
        '--env_processes means --env_mode=processes and conflicts with '
        '--env_mode=slices; pass one of them.')
    with pytest.raises(env_modes.ConfigError, match='^--noenv_processes means '
                                                  '--env_mode=inprocess'):
        env_modes.env_mode_from_flags('auto', False)
    with pytest.raises(env_modes.ConfigError, match='Unknown env mode'):
        env_modes.env_mode_from_flags('fast', None)


@pytest.mark.parametrize('env_mode, kind, workers', [
    ('inprocess', tools.BatchEnv, 0), ('processes', tools.BatchEnv, 3),
    ('slices', tools.SlicedBatchEnv,
     min(3, len(os.sched_getaffinity(0))))])
def test_create_batch_env_modes(env_mode, kind, workers, by_value):
    del by_value
    before = worker_testing.child_pids()
    batch_env = env_modes.create_batch_env(_mock_constructor, 3, env_mode)
    try:
        assert isinstance(batch_env, kind)
        assert len(worker_testing.child_pids() - before) == workers
        batch_env.reset()
        observ, *_ = batch_env.step(np.zeros((3, 3), np.float32))
        assert observ[:, 0].tolist() == [1, 1, 1]
    finally:
        batch_env.close()
    assert worker_testing.child_pids() <= before


def test_a_mode_is_one_entry_of_the_table(monkeypatch):
    built = []

    def build(constructors, timeout, restart):
        built.append((timeout, restart))
        return tools.BatchEnv(
            [constructor() for constructor in constructors], blocking=True)

    def check():
        raise env_modes.ConfigError('Mode fake needs nothing; testing.')

    monkeypatch.setitem(
        env_modes.MODES, 'fake', env_modes.EnvMode(build, 'a test double'))
    assert 'fake: a test double' in env_modes.flag_help()
    assert env_modes.check_env_mode('fake') == 'fake'
    batch_env = env_modes.create_batch_env(
        _seeded_constructor, 3, 'fake', seed=10, timeout=5.0)
    try:
        assert built == [(5.0, False)]
        assert [batch_env[index].seed for index in range(3)] == [
            10, 11, 12]
    finally:
        batch_env.close()
    monkeypatch.setitem(env_modes.MODES, 'fake', env_modes.EnvMode(
        build, 'a test double', check))
    with pytest.raises(env_modes.ConfigError, match='^Mode fake needs'):
        env_modes.check_env_mode('fake')


def test_envpool_mode_without_envpool_names_the_extra(monkeypatch):
    def missing():
        raise ImportError(
            "EnvPool is not installed; install it with pip install -e "
            "'.[envpool]' (EnvPool has wheels for Linux and Python >= 3.11 "
            "only): No module named 'envpool'")

    monkeypatch.setattr(envpool_batch_env, 'import_envpool', missing)
    with pytest.raises(env_modes.ConfigError) as error:
        env_modes.check_env_mode('envpool')
    assert str(error.value).startswith(
        "--env_mode=envpool: EnvPool is not installed; install it with pip "
        "install -e '.[envpool]'")


def test_envpool_mode_builds_the_configured_task(monkeypatch):
    """The config's id and the batch's seed reach EnvPool; auto times it."""
    pytest.importorskip('envpool')
    config = tools.AttrDict(configs.pendulum())
    constructor = env_construction.EnvironmentConstructor(
        config, batch_wrappers=True)
    monkeypatch.setattr(sliced_batch_env, 'available_cpus', lambda: 2)
    assert auto_batch_env.usable_candidates(constructor, 2) == [
        'inprocess', 'slices', 'envpool']
    assert auto_batch_env.usable_candidates(
        env_construction.EnvironmentConstructor(config), 2) == [
            'inprocess', 'slices']
    observs = []
    for _ in range(2):
        batch_env = env_modes.create_batch_env(constructor, 2, 'envpool', 5)
        assert isinstance(batch_env, tools.EnvPoolBatchEnv)
        assert batch_env.task == 'Pendulum-v1'
        batch_env = env_construction.wrap_batch_env(config, batch_env)
        observs.append(batch_env.reset())
        batch_env.close()
    np.testing.assert_array_equal(observs[0], observs[1])
    with pytest.raises(env_modes.ConfigError) as error:
        env_modes.create_batch_env(_mock_constructor, 2, 'envpool')
    assert str(error.value).startswith(
        '--env_mode=envpool builds the environments from the gymnasium id')


def _seeded_constructor(seed):
    env = tools.MockEnvironment(durations=(3,))
    env.seed = seed
    return env


_IMPORTS_TENSORFLOW = """
import sys
import agents.environments.auto_batch_env
import agents.training.config_io
import agents.environments.env_construction
import agents.environments.env_modes
print(sorted(name for name in sys.modules if name.startswith('tensorflow')))
"""


def test_env_building_and_config_io_do_not_import_tensorflow():
    """Worker processes import them when unpickling their constructors."""
    result = subprocess.run(
        [sys.executable, '-c', _IMPORTS_TENSORFLOW], capture_output=True,
        text=True, check=True)
    assert result.stdout.strip() == '[]'


def test_ray_mode_without_ray_names_the_extra(monkeypatch):
    """--env_mode=ray fails in one line saying what to install."""
    monkeypatch.setitem(sys.modules, 'ray', None)
    assert 'ray: Ray actors on the nodes' in env_modes.flag_help()
    with pytest.raises(env_modes.ConfigError) as error:
        env_modes.check_env_mode('ray')
    assert str(error.value) == (
        "--env_mode=ray: Ray is not installed; install the 'ray' extra: "
        "pip install -e '.[ray]'")


def test_env_seeds_of_runs_are_disjoint_and_repeat():
    seeds = [
        env_modes.env_seeds(seed, 16, evaluation)
        for seed in range(10) for evaluation in (False, True)]
    flat = [value for run in seeds for value in run]
    # No seed shared between the runs 0 to 9, training or evaluation.
    assert len(set(flat)) == len(flat) == 320
    assert all(0 <= value < 2**31 for value in flat)
    assert env_modes.env_seeds(3, 4) == env_modes.env_seeds(3, 4)
    assert env_modes.env_seeds(3, 4, True) != env_modes.env_seeds(3, 4)
    assert env_modes.env_seeds(None, 4) is None


def test_create_batch_env_takes_a_seed_per_environment():
    batch_env = env_modes.create_batch_env(
        _seeded_constructor, 3, 'inprocess', seed=[7, 3, 5])
    try:
        assert [batch_env[index].seed for index in range(3)] == [7, 3, 5]
    finally:
        batch_env.close()
    with pytest.raises(ValueError, match=re.escape(
            'Got 2 seeds for 3 environments; expected one seed per '
            'environment.')):
        env_modes.create_batch_env(
            _seeded_constructor, 3, 'inprocess', seed=[1, 2])


@pytest.mark.parametrize('env_mode, evaluation', [
    ('processes', False), ('slices', True), ('envpool', False),
    ('auto', False)])
def test_a_populations_batch_holds_each_seeds_run_batch_in_turn(
        env_mode, evaluation):
    """With a list of seeds, member m's environments from m * num_agents,
    seeded as its seed's single run: the same first observations (in the
    mode that `auto` chose: EnvPool seeds its own way)."""
    if env_mode == 'envpool':
        pytest.importorskip('envpool')
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(num_agents=2, eval_episodes=2)

    def first_observ(seed, env_mode):
        batch_env = env_modes.make_batch_env(
            config, seed, env_mode, evaluation)
        try:
            return batch_env.reset(), getattr(batch_env, 'mode', env_mode)
        finally:
            batch_env.close()

    observ, mode = first_observ([3, 8], env_mode)
    assert observ.shape == (4, 3) and mode != 'auto'
    np.testing.assert_array_equal(observ, np.concatenate([
        first_observ(3, mode)[0], first_observ(8, mode)[0]]))
