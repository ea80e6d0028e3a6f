"""Smoke tests that train every configuration briefly, and resume a run."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import configs
from agents.scripts import env_modes
from agents.scripts import networks
from agents.scripts import train
from agents.scripts import utility


def _tiny_config(name, **overrides):
    """A configuration that trains for a few hundred steps in seconds."""
    config = tools.AttrDict(getattr(configs, name)())
    config.update(
        policy_layers=(8,), value_layers=(8,), num_agents=2,
        update_every=2, eval_episodes=2, max_length=20, update_epochs=2,
        batch_size=2, chunk_length=10, steps=120, logdir=None, seed=0,
        update_steps=None, eval_every=None)
    config.update(overrides)
    return config


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


def test_resume_continues_global_step(tmp_path):
    config = _tiny_config('pendulum', logdir=str(tmp_path), steps=40)
    list(train.train(config, 'inprocess'))
    first = utility.list_checkpoints(str(tmp_path))
    assert [os.path.basename(path) for path in first] == ['model.ckpt-80']
    config = _tiny_config('pendulum', logdir=str(tmp_path), steps=80)
    scores = list(train.train(config, 'inprocess'))
    # Only the second training and evaluation phases are left to run.
    assert len(scores) == 1
    last = utility.list_checkpoints(str(tmp_path))
    assert os.path.basename(last[0]) == 'model.ckpt-160'
    assert sorted(os.listdir(tmp_path)) == [
        'checkpoint', 'config.yaml', 'eval',
        'model.ckpt-160.data-00000-of-00001',
        'model.ckpt-160.index', 'model.ckpt-160.meta',
        'model.ckpt-80.data-00000-of-00001', 'model.ckpt-80.index',
        'model.ckpt-80.meta', 'train']


def test_summaries_written_for_both_phases(tmp_path):
    config = _tiny_config('pendulum', logdir=str(tmp_path), steps=40)
    list(train.train(config, 'inprocess'))
    tags = {}
    for phase in ('train', 'eval'):
        tags[phase] = set()
        directory = tmp_path / phase
        for name in os.listdir(directory):
            for event in tf.train.summary_iterator(str(directory / name)):
                for value in event.summary.value:
                    tags[phase].add(value.tag)
    assert 'simulate/mean_score' in tags['eval'] or 'mean_score' in ' '.join(
        tags['eval'])
    assert any('policy_loss' in tag for tag in tags['train'])
    assert any('kl_change' in tag for tag in tags['train'])


def _run_script(*args):
    command = [sys.executable, '-m', 'agents.scripts.train', *args]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=120,
        check=False)


def test_unknown_config_lists_choices(tmp_path):
    result = _run_script(f'--logdir={tmp_path}', '--config=pendulm')
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (
        "Error: Unknown config 'pendulm'; valid configs: "
        f"{', '.join(train.config_names())}.")
    assert os.listdir(tmp_path) == []


def _main(*args):
    """Run the script's main in this process; return its exit code."""
    train.FLAGS(['train', *args])
    try:
        train.main([])
    except SystemExit as exit_:
        return exit_.code
    finally:
        train.FLAGS.unparse_flags()
    return 0


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
    with pytest.raises(utility.ConfigError, match="Unknown env mode 'fast'"):
        next(train.train(_tiny_config('pendulum'), 'fast'))


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
