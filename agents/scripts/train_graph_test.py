"""End-to-end tests of training on the in-graph tasks (--env_mode=graph)."""

import os
import signal

import numpy as np
import pytest

from agents import tools
from agents.training import config_io
from agents.scripts import configs
from agents.environments import graph_env
from agents.training import checkpoints
from agents.scripts import train
from agents.scripts.train_reliability_test import _Script
from agents.scripts.train_reliability_test import _listing
from agents.scripts.train_reliability_test import _main
from agents.scripts.train_reliability_test import _new_run_folder
from agents.scripts.train_reliability_test import _resume_one_phase
from agents.scripts.train_reliability_test import _saved_checkpoint
from agents.scripts.train_reliability_test import _tiny_config


def _config(name, **overrides):
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.update(dict(dict(logdir=None, seed=3), **overrides))
    return config


def test_pendulum_trains_in_graph_mode_and_a_seed_repeats(tmp_path):
    """Two phases of the pendulum config on the in-graph task, twice."""
    scores = []
    for index in range(2):
        logdir = str(tmp_path / str(index))
        config = _config('pendulum', steps=3200, eval_episodes=8,
                         logdir=logdir)
        scores.append(list(train.train(config, 'graph')))
        assert checkpoints.saved_env(logdir) == graph_env.SavedEnv(
            'graph', None, os.path.join(logdir, 'model.ckpt-6400'))
    assert len(scores[0]) == 2 and np.isfinite(scores[0]).all()
    assert scores[0] == scores[1]


def test_cartpole_trains_in_graph_mode_picked_by_auto(tmp_path):
    """'auto' trains the cartpole config on its in-graph task."""
    logdir = str(tmp_path / 'run')
    config = _config('cartpole', steps=4000, eval_episodes=8, logdir=logdir)
    scores = list(train.train(config, 'auto'))
    # Evaluations after each of the two training phases of eval_every.
    assert len(scores) == 2 and np.isfinite(scores).all()
    assert checkpoints.saved_env(logdir).kind == 'graph'


def test_resuming_with_the_other_kind_of_batch_fails_in_one_line(tmp_path):
    """A checkpoint resumes only on the kind of batch that trained it;
    'auto' follows the checkpoint."""
    graph_run = str(tmp_path / 'graph')
    python_run = str(tmp_path / 'python')
    list(train.train(_tiny_config(logdir=graph_run), 'graph'))
    list(train.train(_tiny_config(logdir=python_run), 'inprocess'))
    graph_checkpoint = os.path.join(graph_run, 'model.ckpt-80')
    python_checkpoint = os.path.join(python_run, 'model.ckpt-80')
    assert checkpoints.saved_env(python_run) == graph_env.SavedEnv(
        'python', 'inprocess', python_checkpoint)
    for run, env_mode, message in (
            (graph_run, 'inprocess',
             f'Cannot resume {graph_run} on Python environments: checkpoint '
             f'{graph_checkpoint} holds the state of an in-graph task '
             '(task/*), it was trained with --env_mode=graph; resume with '
             '--env_mode=graph or auto.'),
            (python_run, 'graph',
             f'Cannot resume {python_run} with --env_mode=graph: checkpoint '
             f'{python_checkpoint} holds no in-graph task state (task/*), it '
             'was trained on Python environments; resume with '
             '--env_mode=auto or a Python env mode.')):
        with pytest.raises(config_io.ConfigError) as error:
            list(train.train(_tiny_config(logdir=run), env_mode))
        assert str(error.value) == message
    # Python runs that 'auto' resumes in their mode: train_resume_python_test.
    list(train.train(_tiny_config(logdir=graph_run, steps=80), 'auto'))
    assert checkpoints.saved_env(graph_run) == graph_env.SavedEnv(
        'graph', None, os.path.join(graph_run, 'model.ckpt-160'))


def test_graph_mode_for_a_task_without_one_exits_2_writing_nothing(
        tmp_path, capsys):
    code = _main(f'--logdir={tmp_path}', '--config=cheetah',
                 '--env_mode=graph')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines == [
        "Error: --env_mode=graph: the config env 'HalfCheetah-v5' has no "
        'in-graph task; tasks with one: Acrobot-v1, CartPole-v1, '
        'MountainCar-v0, MountainCarContinuous-v0, Pendulum-v1.']
    assert not _listing(tmp_path) and not os.listdir(tmp_path)


def test_network_that_refuses_the_space_exits_2_in_one_line(
        tmp_path, capsys):
    """Without the "originally defined at" lines of `tf.make_template`."""
    code = _main(f'--logdir={tmp_path}', '--config=pendulum',
                 '--env_mode=graph', '--set=env=CartPole-v1')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1:] == [
        'Error: feed_forward_gaussian needs a Box action space with one '
        'dimension, got Discrete(2)']
    assert not [line for line in lines if not line[:1].isdigit()][:-1]
    assert not os.listdir(tmp_path)


def test_sigterm_saves_a_checkpoint_and_the_graph_run_resumes(
        monkeypatch, tmp_path):
    """SIGTERM during a graph-mode run saves and exits 143; the same
    timestamp resumes the run on the in-graph task."""
    # Without a seed, so that `main` here leaves op determinism alone.
    run_dir = _new_run_folder(str(tmp_path), 'T', steps=1e5, seed=None)
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=graph')
    try:
        script.wait_for(r'INFO Step \d+ \(eval\): mean score ')
        script.process.send_signal(signal.SIGTERM)
        code, seconds = script.finish()
    finally:
        script.kill()
    assert code == 143 and seconds < 15
    assert script.lines[-1] == (
        f'Interrupted by SIGTERM; resume with --logdir={tmp_path} '
        '--timestamp=T.')
    saved, _ = _saved_checkpoint(script, run_dir)
    assert checkpoints.saved_env(run_dir) == graph_env.SavedEnv(
        'graph', None, saved)
    _resume_one_phase(monkeypatch, tmp_path, run_dir, saved, 'graph')
