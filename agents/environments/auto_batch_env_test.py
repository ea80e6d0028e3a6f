"""Tests of the batch of the env mode 'auto'."""

import ast
import logging
import os
import threading

import numpy as np
import pytest

from agents import tools
from agents.environments import auto_batch_env
from agents.environments import env_modes
from agents.testing import worker_testing

_mock_constructor = worker_testing.mock_constructor


class _Recorder:
    """Constructor of mock environments that records their seeds."""

    def __init__(self):
        self.seeds = []

    def __call__(self, seed=None):
        self.seeds.append(seed)
        return tools.MockEnvironment(durations=(3,))


def _seeded(constructor, count, seed=None):
    """The constructors of `count` environments of a base seed."""
    return [env_modes.SeededConstructor(
        constructor, None if seed is None else seed + index)
        for index in range(count)]


def _add_mode(monkeypatch, build):
    """Register an env mode 'test' that builds with `build`."""
    monkeypatch.setitem(
        env_modes.MODES, 'test', env_modes.EnvMode(build, 'for tests'))


def _choose(mode, chosen):
    """Stand-in for `auto_batch_env.time_candidates` that picks `mode`."""
    def time_candidates(batch_envs):
        chosen.append(sorted(batch_envs))
        return mode, {name: 1.0 for name in batch_envs}
    return time_candidates


def test_candidates_build_in_the_background_until_the_first_use(
        monkeypatch):
    """`create` returns while a candidate still builds; the first reset
    waits for it, times both, and builds the chosen mode with the seeds."""
    building, release = threading.Event(), threading.Event()
    released = []

    def build(constructors, timeout, restart):
        building.set()
        # A guard against a hang, should `create` wait for this build.
        released.append(release.wait(timeout=60))
        return env_modes.MODES['inprocess'].build(
            constructors, timeout, restart)

    _add_mode(monkeypatch, build)
    chosen = []
    monkeypatch.setattr(
        auto_batch_env, 'time_candidates', _choose('test', chosen))
    recorder = _Recorder()
    batch = auto_batch_env.create(
        env_modes.MODES, _seeded(recorder, 3, 10),
        candidates=('inprocess', 'test'))
    try:
        assert building.wait(timeout=60)
        assert batch.mode is None and not chosen
        assert len(batch) == 3
        assert batch.observation_space.shape == (2,)
        release.set()
        observ = batch.reset()
        # The candidate, then the chosen batch anew.
        assert released == [True, True]
        assert chosen == [['inprocess', 'test']]
        assert batch.mode == 'test'
        assert observ.shape == (3, 2)
        # The candidates unseeded, then the chosen batch with the seeds.
        assert recorder.seeds == [None] * 6 + [10, 11, 12]
        _, reward, done, _ = batch.step(np.zeros((3, 3), np.float32))
        assert reward.shape == done.shape == (3,)
    finally:
        release.set()
        batch.close()


def test_a_candidate_that_fails_to_start_is_left_out(monkeypatch, caplog):
    """A failing candidate costs a warning, not the run."""

    def build(constructors, timeout, restart):
        del constructors, timeout, restart
        raise OSError('no workers here')

    _add_mode(monkeypatch, build)
    chosen = []
    monkeypatch.setattr(
        auto_batch_env, 'time_candidates', _choose('inprocess', chosen))
    batch = auto_batch_env.create(
        env_modes.MODES, _seeded(_Recorder(), 2),
        candidates=('inprocess', 'test'))
    try:
        with caplog.at_level(logging.WARNING, logger='agents'):
            batch.reset()
    finally:
        batch.close()
    assert batch.mode == 'inprocess'
    assert not chosen  # One candidate left: nothing to time.
    assert [record.getMessage() for record in caplog.records] == [
        'Env mode auto: test did not start, so it is no candidate: '
        'no workers here']


def test_close_before_the_first_use_closes_every_candidate(monkeypatch):
    """Closing an unused batch waits for a candidate that is being built,
    then closes it and the first candidate."""
    building, release = threading.Event(), threading.Event()
    built = []

    def build(constructors, timeout, restart):
        building.set()
        release.wait(timeout=60)
        built.append(env_modes.MODES['inprocess'].build(
            constructors, timeout, restart))
        return built[-1]

    _add_mode(monkeypatch, build)
    recorder = _Recorder()
    batch = auto_batch_env.create(
        env_modes.MODES, _seeded(recorder, 2), candidates=('inprocess', 'test'))
    assert building.wait(timeout=60)
    release.set()
    batch.close()
    assert batch.mode is None
    assert len(built) == 1 and built[0]._closed  # pylint: disable=protected-access
    assert len(recorder.seeds) == 4


def test_one_usable_candidate_builds_its_batch_directly():
    """Without candidates to compare, `create` builds the batch at once."""
    recorder = _Recorder()
    batch = auto_batch_env.create(
        env_modes.MODES, _seeded(recorder, 2, 3), candidates=('inprocess',))
    try:
        assert isinstance(batch, tools.BatchEnv)
        assert recorder.seeds == [3, 4]
    finally:
        batch.close()


def test_time_candidates_measures_every_candidate(caplog, by_value):
    del by_value
    before = worker_testing.child_pids()
    batch_envs = {
        mode: env_modes.create_batch_env(_mock_constructor, 4, mode)
        for mode in ('inprocess', 'processes', 'slices')}
    try:
        with caplog.at_level('INFO', logger='agents'):
            mode, rates = auto_batch_env.time_candidates(batch_envs)
    finally:
        for batch_env in batch_envs.values():
            batch_env.close()
    assert worker_testing.child_pids() <= before
    assert sorted(rates) == ['inprocess', 'processes', 'slices']
    assert all(rate > 0 for rate in rates.values())
    assert mode == auto_batch_env.pick_env_mode(rates)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 1 and lines[0].startswith('Env mode auto: ')
    assert lines[0].endswith(f'; using {mode}.')


@pytest.mark.parametrize('rates, mode', [
    (dict(inprocess=100.0, slices=124.0), 'inprocess'),
    (dict(inprocess=100.0, slices=125.0), 'slices'),
    (dict(inprocess=100.0, slices=130.0, processes=140.0), 'processes'),
    (dict(inprocess=150.0, slices=140.0), 'inprocess'),
    (dict(slices=10.0, processes=20.0), 'processes'),
    (dict(inprocess=100.0, slices=124.0, envpool=101.0), 'envpool'),
    (dict(inprocess=100.0, slices=130.0, envpool=110.0), 'slices'),
    (dict(inprocess=100.0, envpool=99.0), 'inprocess'),
])
def test_worker_modes_must_be_clearly_faster(rates, mode):
    assert auto_batch_env.pick_env_mode(rates) == mode


def test_one_environment_or_one_candidate_measures_nothing():
    assert auto_batch_env.usable_candidates(_mock_constructor, 1) == [
        'inprocess']
    assert auto_batch_env.usable_candidates(
        _mock_constructor, 4, ('slices',)) == ['slices']
    batch_env = auto_batch_env.create(
        env_modes.MODES, _seeded(_mock_constructor, 1))
    try:
        assert isinstance(batch_env, tools.BatchEnv)
    finally:
        batch_env.close()


class _Leader:
    """An 'auto' batch double whose choice is 'slices', counting asks."""

    asked = 0

    def choose(self):
        """Choose 'slices', as `AutoBatchEnv.choose` would."""
        self.asked += 1
        return 'slices'


def test_a_batch_with_a_leader_takes_its_choice_without_timing():
    """The evaluation batch of a run steps in its training batch's mode."""
    built = []

    def recording(mode):
        def build(*args):
            built.append(mode)
            return env_modes.MODES['inprocess'].build(*args)
        return env_modes.EnvMode(build, mode)

    leader = _Leader()
    batch_env = auto_batch_env.create(
        {mode: recording(mode) for mode in ('inprocess', 'slices')},
        _seeded(_mock_constructor, 2), candidates=('inprocess', 'slices'),
        leader=leader)
    try:
        # Only the in-process candidate, for the spaces until the choice.
        assert built == ['inprocess'] and leader.asked == 0
        assert batch_env.reset().shape == (2, 2)
        assert (built, leader.asked, batch_env.mode) == (
            ['inprocess', 'slices'], 1, 'slices')
    finally:
        batch_env.close()


def test_auto_is_described_by_one_sentence_everywhere():
    """The help of --env_mode and docs/env-modes.md say what the code does;
    train.py's help points to the flag's."""
    sentence = auto_batch_env.describe()
    assert sentence == (
        'graph where the task has an in-graph version; otherwise, at the '
        'first step, it times inprocess and slices (and envpool where '
        'EnvPool is installed and has the task) in bursts of a fraction of '
        'a second and keeps in-process stepping unless another mode steps '
        'faster, a mode with worker processes at least 1.25x as fast, '
        'logging the rates and its choice; the choice depends on the '
        'machine and its load')
    assert env_modes.flag_help().startswith(
        f'How to step the environments: auto (the default): {sentence}; '
        'inprocess: ')
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    with open(os.path.join(root, 'docs', 'env-modes.md'),
              encoding='utf-8') as file_:
        assert f'| `auto` | the default: {sentence} |\n' in file_.read()
    with open(os.path.join(root, 'agents', 'scripts', 'train.py'),
              encoding='utf-8') as file_:
        usage = ast.get_docstring(ast.parse(file_.read()))
    assert '`--env_mode` picks where the environments step; its help below ' \
        'lists the\nmodes and says what `auto`, the default, does' in usage
    assert 'slices' not in usage and 'envpool' not in usage
