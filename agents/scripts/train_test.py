"""Smoke tests that train every configuration briefly, and resume a run."""

import functools
import logging
import os
import re
import subprocess
import sys
import threading

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.training import config_io
from agents.training import config_spec
from agents.environments import env_modes
from agents.scripts import networks
from agents.training import run_folder
from agents.scripts import train
from agents.training import checkpoints
from agents.scripts.train_reliability_test import _main
from agents.scripts.train_reliability_test import _main_last_line
from agents.scripts.train_reliability_test import _tiny_config as _tiny
from agents.scripts.utility_test import _logged


# A configuration that trains for a few hundred steps in seconds.
_tiny_config = functools.partial(_tiny, steps=120)


@pytest.mark.parametrize('name', train.config_names())
def test_every_config_trains_in_worker_processes(name):
    scores = list(train.train(_tiny_config(name), 'slices'))
    # 120 training steps are three training phases of 40 steps, each
    # followed by an evaluation phase that reports one score.
    assert len(scores) == 3
    assert all(np.isfinite(score) for score in scores)


def test_recurrent_policy_trains():
    config = _tiny_config('pendulum', network=networks.recurrent_gaussian)
    scores = list(train.train(config, 'inprocess'))
    assert len(scores) == 3 and all(np.isfinite(scores))


def _train_part(logdir, steps):
    """Train the tiny run of `logdir` to `steps`, logging at INFO.

    Returns:
      The messages logged, the steps reported, the scores, and the run
      folder's checkpoints and provenance after it.
    """
    reports = []
    with _logged(logging.INFO) as messages:
        scores = list(train.train(
            _tiny_config('pendulum', logdir=str(logdir), steps=steps),
            'inprocess', on_report=lambda step, score: reports.append(step)))
    return dict(
        messages=messages, reports=reports, scores=scores,
        checkpoints=[os.path.basename(path) for path in (
            checkpoints.list_checkpoints(str(logdir)))],
        provenance=(logdir / 'provenance.yaml').read_text())


@pytest.fixture(scope='module', name='resumed_run')
def fixture_resumed_run(tmp_path_factory):
    """A run folder of one training phase, resumed for a second, and each
    part's `_train_part`."""
    logdir = tmp_path_factory.mktemp('resumed')
    logger = logging.getLogger('agents')
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        return logdir, (_train_part(logdir, 40), _train_part(logdir, 80))
    finally:
        logger.setLevel(level)


def test_resume_continues_global_step(resumed_run):
    logdir, (first, second) = resumed_run
    # The run folder on the first line; once only at its end.
    assert first['messages'][0] == f'Run folder {logdir}.'
    assert first['checkpoints'] == ['model.ckpt-80']
    assert second['messages'][0] == f'Run folder {logdir}, resumed.'
    # Only the second training and evaluation phases are left to run.
    assert len(second['scores']) == 1
    assert second['checkpoints'][0] == 'model.ckpt-160'
    assert sorted(os.listdir(logdir)) == [
        'checkpoint', 'config.yaml', 'eval',
        'model.ckpt-160.data-00000-of-00001',
        'model.ckpt-160.index', 'model.ckpt-160.meta',
        'model.ckpt-80.data-00000-of-00001', 'model.ckpt-80.index',
        'model.ckpt-80.meta', 'provenance.yaml', 'train']
    # What produced the run is written once, beside config.yaml.
    assert second['provenance'] == first['provenance']


def test_steps_shown_are_training_steps(resumed_run):
    """Reports, progress lines and summaries show training steps, so that
    the config's `steps` is the last step shown; evaluation steps show
    beside them, and checkpoints keep the global step. Across the resume
    of `resumed_run`: its parts' reports, lines and summaries in turn."""
    logdir, parts = resumed_run
    assert [step for part in parts for step in part['reports']] == [40, 80]
    lines = [
        message for part in parts for message in part['messages']
        if '(eval): mean score' in message]
    assert [re.sub(r'mean score \S+, ', '', line).split(', ')[0]
            for line in lines] == [
        'Step 40 (eval): eval steps 40', 'Step 80 (eval): eval steps 80']
    steps = {}
    for phase in ('train', 'eval'):
        steps[phase] = {}
        directory = logdir / phase
        # An event file per part, named after the time it began.
        for name in sorted(os.listdir(directory)):
            for event in tf.train.summary_iterator(str(directory / name)):
                for value in event.summary.value:
                    steps[phase].setdefault(value.tag, []).append(event.step)
    assert steps['eval'] == {'mean_score': [40, 80]}
    assert steps['train']['mean_score'] == [40, 80]
    assert steps['train']['training/update/policy_loss'] == [40, 80]
    assert steps['train']['training/adjust_penalty/kl_change'] == [40, 80]
    assert os.path.basename(
        checkpoints.list_checkpoints(str(logdir))[0]) == 'model.ckpt-160'


def _run_script(*args, timeout=120):
    """Run the script as a user would, without TF_CPP_MIN_LOG_LEVEL."""
    command = [sys.executable, '-m', 'agents.scripts.train', *args]
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=timeout,
        check=False)


def test_unknown_config_lists_choices(tmp_path):
    """One line on stderr: none of TensorFlow's start-up lines either."""
    result = _run_script(f'--logdir={tmp_path}', '--config=pendulm')
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "Error: Unknown config 'pendulm'; valid configs: "
        f"{', '.join(train.config_names())}."]
    assert os.listdir(tmp_path) == []


_CONFIG_FILE = """
import gymnasium as gym

from agents.scripts import configs


def make_env(render_mode=None):
    return gym.make('Pendulum-v1', render_mode=render_mode)


def tiny():
    return dict(
        configs.pendulum(), env=make_env, policy_layers=(8,),
        value_layers=(8,), num_agents=2, update_every=2, eval_episodes=2,
        max_length=20, update_epochs=2, batch_size=2, chunk_length=10,
        steps=120, eval_every=None)
"""
# A progress line of the script's logger, e.g. '12:00:00 INFO Saved ...'.
_OWN_LINE = re.compile(r'^\d\d:\d\d:\d\d (INFO|WARNING) ')


def test_own_config_file_with_overrides_trains_quietly_and_resumes(
        tmp_path, capsys):
    """A config function of a file, --set, quiet start-up, one line per
    report, config.yaml with the overrides and its source, the permissions
    of the umask, and a resume that refuses to change the config."""
    config_file = tmp_path / 'my_configs.py'
    config_file.write_text(_CONFIG_FILE)
    logdir = tmp_path / 'logdir'
    flags = [
        f'--logdir={logdir}', '--timestamp=T', '--env_mode=processes',
        f'--config={config_file}:tiny']
    result = _run_script(*flags, '--set=learning_rate=5e-4', '--set=steps=40')
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert [line for line in lines if not _OWN_LINE.match(line)] == []
    # 40 training steps are one training and one evaluation phase: one
    # report, printed once.
    reports = [line for line in lines if 'mean score' in line]
    assert len(reports) == 1 and '(eval)' in reports[0]
    assert not [line for line in lines if 'Score' in line]
    run_dir = logdir / 'T-tiny'
    text = (run_dir / 'config.yaml').read_text()
    assert 'learning_rate: 0.0005\n' in text
    assert 'steps: 40\n' in text
    assert f'config_function: {config_file}:tiny\n' in text
    assert 'env: !callable my_configs:make_env\n' in text
    umask = os.umask(0)
    os.umask(umask)
    assert (run_dir / 'config.yaml').stat().st_mode & 0o777 == (
        0o666 & ~umask)
    # The refusal, from `main` in this process to spare an import.
    assert _main_last_line(capsys, *flags, '--set=learning_rate=1e-3') == (
        2, f'Error: --set=learning_rate=1e-3 would change learning_rate of '
        f'the resumed run {run_dir} from 0.0005 to 0.001; a resumed run keeps '
        'its config.yaml. Start a new run (another --timestamp) to change '
        'it.')
    # The same value is no change; the file's functions load again.
    result = _run_script(*flags, '--set=learning_rate=0.0005')
    assert result.returncode == 0, result.stderr
    assert f'Resuming run {run_dir}.' in result.stderr
    assert 'Restored checkpoint' in result.stderr


@pytest.mark.parametrize('setting, message', [
    ('lerning_rate=1e-3', "--set=lerning_rate=1e-3: the config has no key "
     "'lerning_rate'; did you mean 'learning_rate'?"),
    ('learning_rate=fast', "--set=learning_rate=fast: learning_rate expects "
     "a number (float), got 'fast'."),
    ('num_agents=2.5', 'Config num_agents=2.5 must be an integer from 1 to '
     'max_agents=1024.'),
    ('num_agents=.inf', 'Config num_agents=inf must be an integer from 1 to '
     'max_agents=1024.'),
    ('policy_layers=' + '[' * 5000 + ']' * 5000,
     '--set=policy_layers=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['
     '[[[[[[[[[[[[...: not a valid value for policy_layers (it nests too '
     'deeply).'),
    ('policy_layers=64', '--set=policy_layers=64: policy_layers expects a '
     'list such as [64, 64] (tuple), got 64.'),
    ('learning_rate', '--set=learning_rate is not KEY=VALUE; expected e.g. '
     '--set=learning_rate=1e-3.'),
])
def test_bad_overrides_exit_2_in_one_line(tmp_path, capsys, setting,
                                          message):
    code = _main(f'--logdir={tmp_path}', '--config=pendulum',
                 f'--set={setting}')
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f'Error: {message}']
    assert os.listdir(tmp_path) == []


def test_config_of_a_package_module_is_recorded(tmp_path, monkeypatch):
    package = tmp_path / 'my_package'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'my_configs.py').write_text(
        'from agents.scripts import configs\n\n\n'
        'def walker_long():\n'
        '    return dict(configs.walker(), steps=2e7)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    config, run_dir, _ = run_folder.prepare_run(
        str(tmp_path / 'logdir'), 'my_package.my_configs:walker_long', 'T',
        ['steps=3e7'])
    assert run_dir == str(tmp_path / 'logdir' / 'T-walker_long')
    assert config.config_function == 'my_package.my_configs:walker_long'
    assert config.steps == 3e7 and config.env == 'Walker2d-v5'
    with pytest.raises(config_io.ConfigError, match=(
            "^Config function 'my_package.my_configs:walker_long' returned "
            'a list; expected a dict')):
        monkeypatch.setattr(
            'my_package.my_configs.walker_long', lambda: [])
        config_spec.load_config_spec('my_package.my_configs:walker_long')


@pytest.mark.parametrize('flags, message', [
    (('--env_processes', '--env_mode=slices'),
     'Error: --env_processes means --env_mode=processes and conflicts with '
     '--env_mode=slices; pass one of them.'),
    (('--noenv_processes', '--env_mode=auto'),
     'Error: --noenv_processes means --env_mode=inprocess and conflicts '
     'with --env_mode=auto; pass one of them.'),
    (('--env_mode=fast',),
     "Error: Unknown env mode 'fast'; expected one of auto, inprocess, "
     f"processes, slices, {', '.join(env_modes.mode_names()[4:])}."),
])
def test_bad_env_mode_flags_exit_2_in_one_line(tmp_path, capsys, flags,
                                               message):
    code = _main(f'--logdir={tmp_path}', '--config=pendulum', *flags)
    assert code == 2
    assert capsys.readouterr().err.strip().splitlines() == [message]
    assert os.listdir(tmp_path) == []


def test_train_refuses_unknown_env_modes():
    with pytest.raises(config_io.ConfigError, match="Unknown env mode 'fast'"):
        next(train.train(_tiny_config('pendulum'), 'fast'))


def test_train_takes_the_2017_env_processes_keyword(resumed_run):
    """Once `TypeError: train() got an unexpected keyword argument
    'env_processes'` for the 2017 call."""
    scores = list(train.train(
        _tiny_config('pendulum', steps=40), env_processes=False))
    # As the first part of `resumed_run`, trained 'inprocess' (its run
    # folder changes nothing of the scores).
    assert scores == resumed_run[1][0]['scores']
    with pytest.raises(config_io.ConfigError, match=(
            r'^--noenv_processes means --env_mode=inprocess and conflicts '
            r'with --env_mode=slices; pass one of them\.$')):
        next(train.train(
            _tiny_config('pendulum'), 'slices', env_processes=False))


_PYTHON_API = """
from agents.scripts import train
from agents.scripts.train_reliability_test import _tiny_config
scores = list(train.train(_tiny_config('pendulum', steps=40), 'inprocess'))
print(len(scores))
"""


def test_train_from_python_prints_nothing_of_tensorflows():
    """Once TensorFlow's start-up lines (oneDNN, cpu_feature_guard, the
    failed cuInit) and its warning about the package's own graph ("will
    trigger an error in the future")."""
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)  # As a user's would be.
    result = subprocess.run(
        [sys.executable, '-c', _PYTHON_API], capture_output=True, text=True,
        env=env, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == '1\n'
    assert result.stderr == ''


def test_auto_mode_trains_like_the_mode_it_chose(caplog):
    with caplog.at_level('INFO', logger='agents'):
        auto = list(train.train(_tiny_config('pendulum', steps=40), 'auto'))
    chosen = [record.getMessage() for record in caplog.records
              if record.getMessage().startswith('Env mode auto: ')]
    assert len(chosen) == 1
    mode = chosen[0].rsplit(' ', 1)[-1].rstrip('.')
    assert auto == list(train.train(_tiny_config('pendulum', steps=40), mode))


def test_envpool_mode_trains_and_repeats_seeded_runs():
    pytest.importorskip('envpool')
    first = list(train.train(_tiny_config('pendulum', steps=40), 'envpool'))
    second = list(train.train(_tiny_config('pendulum', steps=40), 'envpool'))
    assert len(first) == 1 and np.isfinite(first[0])
    assert first == second


class _ThreadRecordingPendulum(gym.Wrapper):
    """Pendulum that records the thread of every step it takes."""

    threads = []

    def __init__(self, seed=None):
        del seed
        super().__init__(gym.make('Pendulum-v1'))

    def step(self, action):
        self.threads.append(threading.get_ident())
        return self.env.step(action)


def test_seeded_runs_repeat_in_either_thread_and_seeds_differ():
    """Environments step in the calling thread unless configured; the
    thread does not change a seeded run."""
    main = threading.get_ident()

    def scores(seed, caller_thread=True):
        _ThreadRecordingPendulum.threads = []
        result = list(train.train(_tiny_config(
            'pendulum', env=_ThreadRecordingPendulum, steps=120, seed=seed,
            caller_thread=caller_thread), 'inprocess'))
        # Three training phases of 40 env steps, each followed by an
        # evaluation phase of two 20-step episodes, on two environments.
        threads = _ThreadRecordingPendulum.threads
        assert len(threads) == 240
        assert all((thread == main) == caller_thread for thread in threads)
        assert len(result) == 3
        return result

    first = scores(3)
    assert scores(3, caller_thread=False) == first
    assert scores(4) != first


def test_training_phases_need_not_hold_whole_episodes():
    # Two agents of 20-step episodes, phases of 10 steps: evaluation has
    # environments of its own, so the training episodes go on.
    assert len(list(train.train(_tiny_config(
        'pendulum', eval_every=10, steps=40), 'inprocess'))) == 4
    assert len(list(train.train(_tiny_config(
        'pendulum', eval_every=9, rollout_length=5, steps=20),
        'inprocess'))) == 3


_BAD_EVALUATION = [
    (dict(eval_every=121),
     'Config eval_every=121 must be None or a number of training steps '
     'from 1 to steps=120: the run evaluates after every eval_every steps '
     'and at its end.'),
    (dict(eval_every=0),
     'Config eval_every=0 must be None or a number of training steps from 1 '
     'to steps=120: the run evaluates after every eval_every steps and at '
     'its end.'),
    (dict(eval_every='often'),
     "Config eval_every='often' must be None or a number of training steps "
     'from 1 to steps=120: the run evaluates after every eval_every steps '
     'and at its end.'),
    (dict(eval_episodes=0),
     'Config eval_episodes=0 must be an integer from 1 to max_agents=1024: '
     'the number of evaluation environments, one episode each.'),
    (dict(eval_episodes=-2),
     'Config eval_episodes=-2 must be an integer from 1 to max_agents=1024: '
     'the number of evaluation environments, one episode each.'),
    (dict(eval_episodes=True),
     'Config eval_episodes=True must be an integer from 1 to max_agents=1024: '
     'the number of evaluation environments, one episode each.'),
    (dict(eval_stochastic='yes'),
     "Config eval_stochastic='yes' must be True (sample actions) or False "
     '(the greedy mode).'),
    (dict(eval_stochastic=None),
     'Config eval_stochastic=None must be True (sample actions) or False '
     '(the greedy mode).'),
]


@pytest.mark.parametrize('overrides, message', _BAD_EVALUATION)
def test_bad_evaluation_settings_are_refused(overrides, message, tmp_path):
    config = _tiny_config('pendulum', logdir=str(tmp_path / 'run'))
    with config.unlocked:
        config.update(overrides)
    with pytest.raises(config_io.ConfigError) as error:
        next(train.train(config, 'inprocess'))
    assert str(error.value) == message
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('setting, message, in_script', [
    ('eval_episodes=0', _BAD_EVALUATION[3][1].replace('120', ''), True),
    ('eval_stochastic=maybe', None, False),
    ('eval_every=1e9', None, False),
])
def test_bad_evaluation_flags_exit_2_with_one_line(
        setting, message, in_script, tmp_path, capsys):
    """One line, in the script's own process none of TensorFlow's either
    (once, as the others: `main` here spares their imports)."""
    flags = f'--logdir={tmp_path}', '--config=cartpole', f'--set={setting}'
    if in_script:
        result = _run_script(*flags)
        code, lines = result.returncode, result.stderr.splitlines()
    else:
        code = _main(*flags)
        lines = capsys.readouterr().err.splitlines()
    assert code == 2
    assert len(lines) == 1 and lines[0].startswith('Error: ')
    key = setting.partition('=')[0]
    assert key in lines[0]
    if message:
        assert lines[0] == f'Error: {message}'
    assert os.listdir(tmp_path) == []
