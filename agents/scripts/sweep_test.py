"""Tests for sweeps on Ray and the `ray` env mode of training.

One local Ray of 2 CPUs serves the module; the command-line tests join it
with --ray_address. The runs are tiny Pendulum configs of this module,
named 'agents.scripts.sweep_test:<function>'; their environments stand in
for faults: one SIGKILLs its worker once, one holds its step while a file
exists, so that tests act at a known step instead of sleeping. Outside CI
the tests skip when Ray is not installed; in CI (CI=true) Ray must be
there.
"""

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium as gym
import numpy as np
import psutil
import pytest

from agents.training import config_io
from agents.training import member_checkpoint
from agents.training import population
from agents.scripts import configs
from agents.scripts import sweep as sweep_lib
from agents.training import sweep_grid
from agents.training import sweep_records
from agents.training import sweep_runs
from agents.scripts import train as train_lib
from agents.tools import ray_batch_env_test
from agents.tools import seed_statistics

# Folder of the marker files that the environments of this module use;
# set before Ray starts, so that its workers inherit it.
_DIR_VARIABLE = 'AGENTS_SWEEP_TEST_DIR'
# Steps of one environment: the training environment gets there first, at
# global step 244 (each epoch steps it and then the evaluation environment
# 10 times).
_KILL_STEP = 125
_HOLD_STEP = 125
_SECONDS = 600  # Deadlines for what tests wait on; only failures reach them.


def _tiny(**overrides):
    """Pendulum of 10-step episodes and tiny networks on one environment.

    An epoch is 20 global steps (10 training steps and one evaluation
    episode), each a report at the training steps so far; checkpoints come
    every 10 epochs, at global step 200 (100 training steps).
    """
    config = configs.pendulum()
    config.update(
        num_agents=1, update_every=1, eval_episodes=1, max_length=10,
        steps=150, policy_layers=(8,), value_layers=(8,), update_epochs=1,
        batch_size=1, chunk_length=10, learning_rate_decay=None,
        eval_every=None, compile_update=False)
    config.update(overrides)
    return config


def killed_once():
    """Tiny runs of 150 training steps (300 global steps); the first worker
    dies at global step 244."""
    return _tiny(env=pendulum_killed_once)


def broken():
    """A run whose config is invalid: training refuses it in the worker."""
    return _tiny(worker_timeout=-1)


def held():
    """Runs of 150 training steps (300 global steps) that hold at global
    step 244 while 'hold' exists."""
    return _tiny(env=pendulum_held)


def held_deaf():
    """Held runs whose environment ignores SIGINT, as some simulators set
    up: Ray's cancellation of the run, an interrupt of its thread, is lost.
    """
    return _tiny(env=pendulum_held_deaf)


def pendulum_seeded():
    """Tiny runs of 3 environments for the env-mode comparison."""
    return _tiny(
        num_agents=3, update_every=3, eval_episodes=3, steps=90, seed=4)


class _AtStep(gym.Wrapper):
    """Calls a function with the process id at a given step."""

    def __init__(self, env, step, function):
        super().__init__(env)
        self._count = 0
        self._step = step
        self._function = function

    def step(self, action):
        self._count += 1
        if self._count == self._step:
            self._function()
        return self.env.step(action)


def _marker(name):
    return os.path.join(os.environ[_DIR_VARIABLE], name)


def _kill_once():
    if not os.path.exists(_marker('killed')):
        with open(_marker('killed'), 'w', encoding='utf-8') as file_:
            file_.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)


def _hold():
    if not os.path.exists(_marker('hold')):
        return
    with open(_marker(f'held-{os.getpid()}'), 'w', encoding='utf-8'):
        pass
    deadline = time.monotonic() + _SECONDS
    while os.path.exists(_marker('hold')) and time.monotonic() < deadline:
        time.sleep(0.05)


def pendulum_killed_once():
    """Pendulum whose process SIGKILLs itself at its 125th step, once."""
    return _AtStep(gym.make('Pendulum-v1'), _KILL_STEP, _kill_once)


def pendulum_held():
    """Pendulum that waits at its 125th step while the 'hold' file exists."""
    return _AtStep(gym.make('Pendulum-v1'), _HOLD_STEP, _hold)


def pendulum_held_deaf():
    """`pendulum_held` whose construction makes Python ignore SIGINT."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return pendulum_held()


@pytest.fixture(scope='module', name='ray_address')
def _ray_fixture(tmp_path_factory):
    """A local Ray of 2 CPUs; yields its address."""
    ray = ray_batch_env_test.import_ray_for_tests()
    marker_dir = tmp_path_factory.mktemp('markers')
    previous = os.environ.get(_DIR_VARIABLE)
    os.environ[_DIR_VARIABLE] = str(marker_dir)
    before = {child.pid for child in psutil.Process().children(
        recursive=True)}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level='ERROR')
    # Ray's processes, not those earlier tests left running (a fork server).
    children = [child for child in psutil.Process().children(recursive=True)
                if child.pid not in before]
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        if previous is None:
            del os.environ[_DIR_VARIABLE]
        else:
            os.environ[_DIR_VARIABLE] = previous
        # Ray's processes end with it: nothing of the module is left.
        ray_batch_env_test.assert_processes_end(children)


def _name(function):
    return f'{__name__}:{function.__name__}'


@pytest.fixture(scope='module', name='swept')
def _swept_fixture(ray_address, tmp_path_factory):
    """A sweep of a run killed once and of a broken run, in parallel."""
    del ray_address
    logdir = tmp_path_factory.mktemp('sweep')
    lines = []
    results = sweep_lib.sweep(
        str(logdir), [_name(killed_once), _name(broken)], [0],
        timestamp='first', max_retries=1, echo=lines.append)
    return logdir, results, lines


def _read_curves(path):
    """The `(config, seed, step, score)` rows of a curves.csv."""
    with open(path, encoding='utf-8', newline='') as file_:
        header, *rows = csv.reader(file_)
    assert header == ['config', 'seed', 'step', 'score']
    return [(config, int(seed), int(step), float(score))
            for config, seed, step, score in rows]


def _runs(results):
    return {row['run']: row for row in results['runs']}


def test_killed_worker_is_retried_and_resumes_from_its_checkpoint(swept):
    """The retry resumes the run folder at training step 100 (global step
    200) and finishes at 150."""
    logdir, results, lines = swept
    name = 'agents.scripts.sweep_test_killed_once-seed0'
    row = _runs(results)[name]
    assert row['status'] == 'finished'
    assert row['steps'] == 150
    assert row['attempts'] == 2
    record = sweep_records.read_record(os.path.join(logdir, 'first', name))
    first, second = record['attempts']
    assert first['resumed_from'] == 0
    assert second['resumed_from'] == 100
    assert first['pid'] != second['pid']
    # The steps continue past the checkpoint: one report per epoch, at
    # its training steps.
    assert [step for step, _ in record['reports']] == list(
        range(10, 151, 10))
    assert f'[{name}] attempt 2 resumes from step 100.' in lines
    log = (logdir / 'first' / name / 'train.log').read_text(encoding='utf-8')
    assert f'Restored checkpoint {logdir}/first/{name}/model.ckpt-200.' in log
    assert row['final_score'] == record['reports'][-1][1]
    assert row['best_score'] == max(score for _, score in record['reports'])
    # Every report of the run, in the curves beside the results.
    assert results['curves'] == str(logdir / 'first' / 'curves.csv')
    assert [
        (seed, step, score) for config, seed, step, score
        in _read_curves(results['curves'])
        if config == 'agents.scripts.sweep_test_killed_once'] == [
            (0, step, score) for step, score in record['reports']]


def test_own_error_fails_the_run_once_with_its_line(swept):
    """A run that fails for its own reasons is not retried."""
    logdir, results, lines = swept
    name = 'agents.scripts.sweep_test_broken-seed0'
    row = _runs(results)[name]
    error = (
        'Config worker_timeout=-1 must be a positive number of seconds up '
        'to 1e7 (16 weeks) or None.')
    assert row['status'] == 'failed'
    assert row['attempts'] == 1
    assert row['error'] == error
    assert f'[{name}] failed: {error}' in lines
    assert f'  {name}: {error}' in lines
    table = lines[lines.index(next(
        line for line in lines if line.startswith('run '))):]
    assert table[1].split()[:2] == [
        'agents.scripts.sweep_test_killed_once-seed0', 'finished']
    assert table[2].split()[:5] == [name, 'failed', '-', '-', '0']
    with open(os.path.join(logdir, 'first', 'results.json'),
              encoding='utf-8') as file_:
        assert json.load(file_) == results


def test_rerun_with_the_timestamp_skips_finished_runs(swept):
    """Rerunning the sweep skips what finished; the failed run runs again."""
    logdir, _, _ = swept
    lines = []
    results = sweep_lib.sweep(
        str(logdir), [_name(killed_once), _name(broken)], [0],
        timestamp='first', max_retries=1, echo=lines.append)
    runs = _runs(results)
    assert lines[0] == (
        '[agents.scripts.sweep_test_killed_once-seed0] finished earlier; '
        'skipped.')
    assert runs['agents.scripts.sweep_test_killed_once-seed0'][
        'attempts'] == 2
    assert runs['agents.scripts.sweep_test_broken-seed0']['attempts'] == 2
    assert runs['agents.scripts.sweep_test_broken-seed0']['status'] == (
        'failed')


def _wait_for(condition, what):
    deadline = time.monotonic() + _SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f'Gave up waiting for {what}.')
        time.sleep(0.05)


# The grid of the interrupted sweep: each held config's 2 seeds x 2
# learning rates pack into one population, a program of its own.
_HELD_CONFIGS = (held, held_deaf)
_RATES = ('1e-3', '3e-4')


def _population_name(config):
    return f'population-agents.scripts.sweep_test_{config.__name__}'


@pytest.fixture(scope='module', name='interrupted')
def _interrupted_fixture(ray_address, tmp_path_factory):
    """A command-line sweep of the held configs, SIGINT to its process
    group once both populations hold, as a terminal's Ctrl-C sends it;
    then the same sweep again, from Python to spare a second start-up,
    with Ctrl-C once every run has finished.

    Returns:
      The sweep's folder; the exit code, output and results of the
      interrupted sweep and the training steps of each population's
      checkpoint; the results and lines of the second sweep.
    """
    logdir = tmp_path_factory.mktemp('interrupted')
    marker_dir = os.environ[_DIR_VARIABLE]
    before = set(os.listdir(marker_dir))
    hold = _marker('hold')
    with open(hold, 'w', encoding='utf-8'):
        pass
    settings = [f'learning_rate={rate}' for rate in _RATES]
    configs_ = [_name(config) for config in _HELD_CONFIGS]
    output = logdir / 'output.txt'
    command = [
        sys.executable, '-m', 'agents.scripts.sweep',
        f'--ray_address={ray_address}', f'--logdir={logdir}',
        f'--configs={",".join(configs_)}', '--seeds=0,1',
        *(f'--set={setting}' for setting in settings), '--timestamp=sweep']
    with open(output, 'w', encoding='utf-8') as file_, subprocess.Popen(
            command, stdout=file_, stderr=subprocess.STDOUT,
            start_new_session=True) as process:
        try:
            # A marker per process that holds: one per population.
            _wait_for(lambda: len([
                name for name in set(os.listdir(marker_dir)) - before
                if name.startswith('held-')]) == len(_HELD_CONFIGS),
                'every population to hold')
            os.killpg(process.pid, signal.SIGINT)
            _wait_for(lambda: 'Interrupted; stopping 8 runs' in (
                output.read_text(encoding='utf-8')),
                'the sweep to stop its runs')
        finally:
            os.remove(hold)
            code = process.wait(_SECONDS)
            for name in set(os.listdir(marker_dir)) - before:
                os.remove(_marker(name))
    sweep_dir = logdir / 'sweep'
    interrupted = json.loads((sweep_dir / 'results.json').read_text(
        encoding='utf-8'))
    steps = {
        config: sweep_runs.checkpoint_steps(str(
            sweep_dir / _population_name(config)))
        for config in _HELD_CONFIGS}
    lines = []

    def echo(line):
        lines.append(line)
        # Ctrl-C once every run has finished.
        if ' finished at step ' in line and sum(
                ' finished at step ' in earlier for earlier in lines) == 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sweep_lib.sweep(
            str(logdir), configs_, [0, 1], settings, timestamp='sweep',
            echo=echo)
    results = json.loads((sweep_dir / 'results.json').read_text(
        encoding='utf-8'))
    return sweep_dir, (code, output.read_text(encoding='utf-8'),
                       interrupted, steps), (results, lines)


def test_ctrl_c_stops_every_run_with_a_checkpoint_and_rerun_resumes(
        interrupted):
    """SIGINT to the sweep's process group saves every run, also those
    that Ray's cancellation misses (their environment ignores SIGINT: they
    see the sweep's stop file between two session runs), past the step
    they held at; the sweep with --timestamp finishes them."""
    _, (code, text, _, steps), (results, _) = interrupted
    assert code == 130, text
    assert text.rstrip().endswith(
        'Resume with the same command and --timestamp=sweep.\n'
        'Interrupted by SIGINT.'), text
    for config in _HELD_CONFIGS:
        # The checkpoint of the interruption: of the phase that held (a
        # phase is 10 training steps) or of the last one before it.
        assert _HOLD_STEP - 10 <= steps[config] < 150, text
    assert [(row['status'], row['steps'], row['attempts']) for row in (
        results['runs'])] == [('finished', 150, 2)] * 8


def test_packed_sweep_is_interrupted_as_one_population(interrupted):
    """Ctrl-C stops each population with a checkpoint; every run of it is
    interrupted at its steps."""
    sweep_dir, (_, text, results, steps), _ = interrupted
    lines = text.splitlines()
    # After TensorFlow's start-up lines.
    assert (f'Sweep {sweep_dir}: 8 runs to train (0 finished earlier) in 2 '
            'programs, 1 CPUs each.') in lines
    assert ('Interrupted; stopping 8 runs with a checkpoint (interrupt '
            'again to stop them without).') in lines
    for config in _HELD_CONFIGS:
        assert (f'[{_population_name(config)}] stopped with a checkpoint '
                f'at step {steps[config]:,}.') in lines
    assert [(row['status'], row['steps']) for row in results['runs']] == [
        ('interrupted', steps[config]) for config in _HELD_CONFIGS
        for _ in range(4)]


def test_packed_sweep_trains_one_population_and_resumes_it(interrupted):
    """2 configs x 2 seeds x 2 learning rates: one Ray task per config and
    attempt trains its 4 runs as members of one population; the sweep
    resumes it from its checkpoint and reports every run as a run of its
    own."""
    sweep_dir, (_, _, _, steps), (results, lines) = interrupted
    assert lines[0] == (
        f'Sweep {sweep_dir}: 8 runs to train (0 finished earlier) in 2 '
        'programs, 1 CPUs each.')
    runs = [
        f'agents.scripts.sweep_test_{config.__name__}-learning_rate={rate}-'
        f'seed{seed}' for config in _HELD_CONFIGS for rate in _RATES
        for seed in (0, 1)]
    assert [row['run'] for row in results['runs']] == runs
    for index, config in enumerate(_HELD_CONFIGS):
        name = _population_name(config)
        assert f'[{name}] attempt 2 resumes from step {steps[config]:,}.' in (
            lines)
        members = json.loads((sweep_dir / name / 'results.json').read_text(
            encoding='utf-8'))['members']
        pids = set()
        for row, member in zip(results['runs'][4 * index:], members):
            assert (row['status'], row['steps'], row['attempts'],
                    row['seed'], row['setting']) == (
                        'finished', 150, 2, member['seed'], member['setting'])
            record = sweep_records.read_record(
                sweep_dir / name / member['member'])
            assert [step for step, _ in record['reports']] == list(
                range(10, 151, 10))
            # The population's member scores.
            assert row['final_score'] == record['reports'][-1][1] == member[
                'final_score']
            assert [attempt['resumed_from'] for attempt in record[
                'attempts']] == [0, steps[config]]
            pids.add(tuple(attempt['pid'] for attempt in record['attempts']))
            assert (f'[{row["run"]}] finished at step 150 in '
                    f'{row["wall_clock"]:.0f} s: final score '
                    f'{row["final_score"]:.1f}, best '
                    f'{row["best_score"]:.1f}.') in lines
        assert len(pids) == 1
    groups = [
        f'agents.scripts.sweep_test_{config.__name__}-learning_rate={rate}'
        for config in _HELD_CONFIGS for rate in _RATES]
    assert [(group['group'], group['finished']) for group in results[
        'groups']] == [(group, 2) for group in groups]
    assert [(config, seed) for config, seed, step, _ in _read_curves(
        results['curves']) if step == 150] == [
            (group, seed) for group in groups for seed in (0, 1)]
    header = lines.index(next(line for line in lines if line.startswith(
        'run ')))
    assert lines[header].split() == [
        'run', 'status', 'final', 'best', 'steps', 'wall-clock']
    assert [line.split()[:2] for line in lines[header + 1:header + 9]] == [
        [run, 'finished'] for run in runs]
    assert [line.split()[:2] for line in lines[header + 11:header + 15]] == [
        [group, '2/2'] for group in groups]
    assert lines[-1] == f'Results in {sweep_dir}/results.json.'


def test_interrupt_once_every_run_finished_prints_no_resume_hint(
        interrupted):
    """Ctrl-C that comes when the runs have finished leaves nothing to
    resume: the sweep ends with the interruption, without the hint."""
    sweep_dir, _, (results, lines) = interrupted
    # As many runs as were pending when their last lines came.
    assert any(line.startswith('Interrupted; stopping ') for line in lines)
    assert lines[-1] == f'Results in {sweep_dir}/results.json.'
    assert not any(line.startswith('Resume with') for line in lines)
    assert [row['status'] for row in results['runs']] == ['finished'] * 8


def test_ray_env_mode_trains_as_in_process(ray_address):
    """A seeded run with environments in Ray actors scores as in process."""
    del ray_address
    config = pendulum_seeded()
    scores = {
        mode: list(train_lib.train(config, mode))
        for mode in ('inprocess', 'ray')}
    assert len(scores['ray']) == 3
    assert not np.isnan(scores['ray']).any()
    assert scores['ray'] == scores['inprocess']


@pytest.mark.parametrize('kwargs, message', [
    (dict(configs=['nope']), "Unknown config 'nope'; valid configs: "),
    (dict(configs=['pendulum', 'pendulum']),
     'The config pendulum is listed twice; expected each once.'),
    (dict(seeds=[]), 'Pass --seeds with at least one seed.'),
    (dict(settings=['discount']),
     '--set=discount is not KEY=VALUE; expected e.g. '
     '--set=learning_rate=1e-3.'),
    (dict(settings=['no_such_key=1']),
     "--set=no_such_key=1: the config has no key 'no_such_key'; "),
    (dict(settings=['discount=fast']),
     '--set=discount=fast: discount expects a number'),
    (dict(seeds=[0, 1], settings=['learning_rate=1e-3', 'learning_rate=x']),
     '--set=learning_rate=x: learning_rate expects a number'),
    (dict(cpus_per_run=0), '--cpus_per_run=0 must be a positive number.'),
    (dict(cpus_per_run=64),
     '--cpus_per_run=64 exceeds the CPUs of every node of the Ray cluster '
     '(at most 2).'),
    (dict(env_mode='nope'), "Unknown env mode 'nope'; expected one of "),
    (dict(timestamp='a/b'),
     '--timestamp=a/b must be a folder name (letters, digits, _ . -).'),
])
def test_bad_input_raises_one_line_and_writes_nothing(
        ray_address, tmp_path, kwargs, message):
    """Bad flags fail before any run starts or any file is written (or
    any line printed)."""
    del ray_address
    arguments = dict(configs=['pendulum'], seeds=[0])
    arguments.update(kwargs)
    lines = []
    with pytest.raises(config_io.ConfigError) as info:
        sweep_lib.sweep(
            str(tmp_path / 'logdir'), echo=lines.append, **arguments)
    assert not lines
    assert str(info.value).startswith(message)
    assert '\n' not in str(info.value)
    assert not (tmp_path / 'logdir').exists()


def test_command_line_prints_no_start_up_lines_of_tensorflow(tmp_path):
    """Once TensorFlow's start-up lines (oneDNN, cpu_feature_guard, the
    failed cuInit) before the sweep's own."""
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)  # As a user's would be.
    result = subprocess.run(
        [sys.executable, '-m', 'agents.scripts.sweep',
         f'--logdir={tmp_path}', '--configs=pendulm', '--seeds=0'],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert result.returncode == 2
    assert result.stdout == ''
    assert result.stderr.splitlines() == [
        "Error: Unknown config 'pendulm'; valid configs: "
        f"{', '.join(train_lib.config_names())}."]


def test_grid_names_runs_after_the_varied_settings():
    """A key given several values varies; the others hold for all runs."""
    runs = sweep_grid.grid(
        ['pendulum', 'my.module:tiny'], [0, 1],
        ['learning_rate=1e-3', 'discount=0.9', 'learning_rate=3e-4'])
    assert [run.name for run in runs] == [
        'pendulum-learning_rate=1e-3-seed0',
        'pendulum-learning_rate=1e-3-seed1',
        'pendulum-learning_rate=3e-4-seed0',
        'pendulum-learning_rate=3e-4-seed1',
        'my.module_tiny-learning_rate=1e-3-seed0',
        'my.module_tiny-learning_rate=1e-3-seed1',
        'my.module_tiny-learning_rate=3e-4-seed0',
        'my.module_tiny-learning_rate=3e-4-seed1',
    ]
    assert runs[2].setting == (
        ('learning_rate', '3e-4'), ('discount', '0.9'))


def test_summary_gives_mean_median_and_iqm_over_seeds(tmp_path):
    """The per-config row summarizes the finished runs over seeds; the
    curves of every run go to CSV."""
    runs = sweep_grid.grid(['a', 'b'], [0, 1, 2])
    records = {}
    for run, reports, status in zip(runs, (
            [[20, 1.0], [40, 3.0]], [[20, 5.0], [40, 2.0]], [[20, 9.0]],
            [[20, None]], [], []),
            ('finished', 'finished', 'failed', 'failed', 'pending',
             'pending')):
        records[run.name] = dict(
            sweep_records.new_record(run), reports=reports, status=status,
            steps=reports[-1][0] if reports else 0, wall_clock=12.3)
    results = sweep_records.summarize('T', '/logdir/T', runs, records)
    assert [(row['final_score'], row['best_score'], row['steps'],
             row['wall_clock']) for row in results['runs']][:3] == [
                 (3.0, 3.0, 40, 12.3), (2.0, 5.0, 40, 12.3),
                 (9.0, 9.0, 20, 12.3)]
    # Two seeds: every resample's mean is 2, 2.5 or 3.
    assert results['groups'] == [
        dict(group='a', config='a', setting={}, runs=3, finished=2,
             final=dict(seeds=2, mean=2.5, median=2.5, iqm=2.5, iqm_low=2.0,
                        iqm_high=3.0, confidence=0.95)),
        dict(group='b', config='b', setting={}, runs=3, finished=0,
             final=None)]
    assert sweep_records.format_table(results)[:4] + sweep_records.format_table(
        results)[7:] == [
        'run      status    final  best  steps  wall-clock',
        'a-seed0  finished    3.0   3.0     40        12 s',
        'a-seed1  finished    2.0   5.0     40        12 s',
        'a-seed2  failed      9.0   9.0     20        12 s',
        '',
        'config  finished  seeds  mean  median  IQM  IQM 95% CI',
        'a            2/3      2   2.5     2.5  2.5  [2.0, 3.0]',
        'b            0/3      0     -       -    -           -',
    ]
    path = tmp_path / 'curves.csv'
    seed_statistics.write_curves_csv(path, sweep_records.curve_rows(
        runs, records))
    assert _read_curves(path) == [
        ('a', 0, 20, 1.0), ('a', 0, 40, 3.0), ('a', 1, 20, 5.0),
        ('a', 1, 40, 2.0), ('a', 2, 20, 9.0)]


def test_flags_shared_with_train_py_keep_its_defaults():
    # The tests import both scripts, whose flags of one name are one: the
    # sweep's replaced train.py's default env mode with 'inprocess' once.
    for name in ('env_mode', 'seeds', 'logdir', 'timestamp'):
        assert train_lib.FLAGS[name].default is None, name


def test_packs_hold_the_runs_whose_graphs_agree():
    """Seeds and varied keys that keep the graph's shapes pack; other
    varied keys split the packs, and keys given once go to every run."""
    runs = sweep_grid.grid(['pendulum'], [0, 1], [
        'learning_rate=1e-3', 'policy_layers=[8]', 'learning_rate=3e-4',
        'policy_layers=[16]', 'discount=0.9'])
    packs = sweep_grid.packs(runs, population.GRAPH_KEYS)
    assert [(pack.name, pack.setting, pack.seeds, pack.variants)
            for pack in packs] == [
                (f'population-pendulum-policy_layers={layers}',
                 (('policy_layers', text), ('discount', '0.9')), [0, 1],
                 [(('learning_rate', '1e-3'),), (('learning_rate', '3e-4'),)])
                for layers, text in (('_8_', '[8]'), ('_16_', '[16]'))]
    # The runs in the order of the population's members.
    for pack in packs:
        assert pack.members == member_checkpoint.members(
            pack.seeds, pack.variants) == [
                (run.seed, run.setting[:1]) for run in pack.runs]
    assert [run.name for run in packs[0].runs] == [
        f'pendulum-learning_rate={rate}-policy_layers=_8_-seed{seed}'
        for rate in ('1e-3', '3e-4') for seed in (0, 1)]
    alone, = sweep_grid.packs(
        sweep_grid.grid(['pendulum'], [0]), population.GRAPH_KEYS)
    assert (alone.members, alone.seeds, alone.variants) == (
        [(0, ())], [0], None)


def test_packs_train_apart_where_a_population_cannot_hold_them(tmp_path):
    """A population of each pack where the flag asks and the checks pass;
    else a run per process, with a line saying why."""
    def plan(settings, pack=True, seeds=(0, 1)):
        lines = []
        # pylint: disable-next=protected-access
        packs = sweep_lib._packs(
            sweep_grid.grid(['pendulum'], seeds, settings), str(tmp_path),
            dict(cpus_per_run=1, env_mode='inprocess', pack=pack),
            lines.append)
        return [(pack.name, config is not None,
                 [os.path.relpath(run.run_dir, tmp_path) for run in pack.runs])
                for pack, config in packs], lines

    rates = ['learning_rate=1e-3', 'learning_rate=3e-4']
    assert plan(rates) == ([('population-pendulum', True, [
        f'population-pendulum/learning_rate={rate}/seed-{seed}'
        for rate in ('1e-3', '3e-4') for seed in (0, 1)])], [])
    apart = [(name, False, [name]) for name in (
        f'pendulum-learning_rate={rate}-seed{seed}'
        for rate in ('1e-3', '3e-4') for seed in (0, 1))]
    assert plan(rates, pack=False) == (apart, [])
    entropy = plan(['entropy_regularization=0',
                    'entropy_regularization=0.01'], seeds=[0])
    assert [pack[1] for pack in entropy[0]] == [False, False]
    assert entropy[1] == [
        '[population-pendulum] trains its 2 runs one per process: Variants '
        'of --set: entropy_regularization of 0.0, 0.01 switches a part of '
        'the graph off in some members only; vary it among values that are '
        'all set (or run apart).']
    # An earlier sweep that trained a run apart keeps them apart.
    os.makedirs(tmp_path / 'pendulum-learning_rate=3e-4-seed1')
    assert plan(rates) == (apart, [])
