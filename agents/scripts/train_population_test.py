"""Tests of `train.py --seeds`: a population, each member trained as its
seed's single run, and the flags it refuses."""

import json
import os
import pathlib
import signal
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.environments import graph_env
from agents.scripts.train_reliability_test import _listing
from agents.scripts.train_reliability_test import _main
from agents.scripts.train_reliability_test import _resume_one_phase
from agents.scripts.train_reliability_test import _Script
from agents.training import checkpoints
from agents.training import config_io
from agents.training import episode_videos
from agents.training import member_checkpoint
from agents.training import policy_export
from agents.training import population_run
from agents.training import run_folder
from agents.training import trainer

# Two training phases of 40 steps, an update at the end of each.
_SETTINGS = (
    'policy_layers=[8]', 'value_layers=[8]', 'num_agents=2',
    'update_every=2', 'eval_episodes=2', 'max_length=20', 'update_epochs=2',
    'batch_size=2', 'chunk_length=10', 'steps=80', 'eval_every=null',
    'update_steps=null')


# Final scores of single runs by config: a variant of the config's own
# value (`learning_rate=1e-3`) reads the run of the seed without variants.
_ALONE = {}


def _alone(seed, *settings):
    """The final score of the seed's single run (with `--set` settings)."""
    config, _, _ = run_folder.prepare_run(
        None, 'pendulum', None, _SETTINGS + settings)
    with config.unlocked:
        config.seed = seed
    key = repr(sorted(config.items()))
    if key not in _ALONE:
        _ALONE[key] = list(trainer.train(config, 'graph'))[-1]
    return _ALONE[key]


def _scalars(folder):
    """The `mean_score` values of a folder's event files, by step."""
    values = {}
    for name in os.listdir(folder):
        for event in tf.train.summary_iterator(os.path.join(folder, name)):
            for value in event.summary.value:
                if value.tag == 'mean_score':
                    values[event.step] = value.simple_value
    return values


@pytest.fixture(name='resumed', scope='module')
def _resumed(tmp_path_factory):
    """The run folder of a population of seeds 3 and 8, stopped at its
    first evaluation and resumed with its seeds for the one left.

    Its members score as their seeds' single runs straight through
    (`test_members_score_as_their_seeds_alone`); a population trained
    straight through: `test_variants_score_as_their_single_runs`.
    """
    logdir = tmp_path_factory.mktemp('resumed')
    config, run_dir, _ = run_folder.prepare_run(
        str(logdir), 'pendulum', 'T', _SETTINGS)
    scores = trainer.train(config, 'graph', seeds=[3, 8])
    first = next(scores)
    scores.close()  # Saved at the first evaluation.
    rest = list(trainer.train(config, 'graph', seeds=[3, 8]))
    assert len(rest) == 1 and np.isfinite([first] + rest).all()
    return pathlib.Path(run_dir)


def _results(run_dir):
    return json.loads((run_dir / population_run.RESULTS_NAME).read_text())


def test_members_score_as_their_seeds_alone(resumed):
    assert {'config.yaml', 'provenance.yaml', 'checkpoint', 'train', 'eval',
            'seed-3', 'seed-8', population_run.RESULTS_NAME,
            population_run.CURVES_NAME} <= set(
                os.listdir(resumed))
    results = _results(resumed)
    rows = results['members']
    assert [(row['member'], row['seed']) for row in rows] == [
        ('seed-3', 3), ('seed-8', 8)]
    assert config_io.load_config(resumed)[
        checkpoints.POPULATION_KEY] == '--seeds=3,8'
    scores = [row['final_score'] for row in rows]
    assert results['final']['seeds'] == 2
    assert results['final']['iqm'] == pytest.approx(sum(scores) / 2)
    for row in rows:
        # Each member's evaluations, after both training phases.
        curve = _scalars(resumed / row['member'] / 'eval')
        assert sorted(curve) == [40, 80]
        assert curve[80] == pytest.approx(row['final_score'], rel=1e-6)
        # Batched arithmetic rounds otherwise: measured 1.3e-7 of seed 3's
        # score after two updates, seed 8's equal.
        assert row['final_score'] == pytest.approx(
            _alone(row['seed']), rel=1e-6)


def test_population_resumes_with_its_seeds_only(resumed):
    config, run_dir, _ = run_folder.prepare_run(
        str(resumed.parent), 'pendulum', 'T', _SETTINGS)
    saved = _listing(run_dir)
    for seeds, message in (
            ([3, 9], 'with --seeds=3,9: it trained a population of '
             '--seeds=3,8; resume it with --seeds=3,8, or start a new run '
             '(another --timestamp).'),
            (None, 'as a single run: it trained a population of '
             '--seeds=3,8; resume it with --seeds=3,8, or start')):
        with pytest.raises(config_io.ConfigError) as error:
            next(trainer.train(config, 'graph', seeds=seeds))
        assert str(error.value).startswith(
            f'Cannot resume {run_dir} {message}')
        assert _listing(run_dir) == saved


@pytest.mark.parametrize('flags, message', [
    (('--seeds=3,9',), 'with --seeds=3,9: it trained a population of '
     '--seeds=3,8; resume it with --seeds=3,8, or start'),
    ((), 'as a single run: it trained a population of --seeds=3,8;'),
    (('--seeds=3,8', '--set=discount=0.9', '--set=discount=0.99'),
     'with --seeds=3,8 --set=discount=0.9 --set=discount=0.99: it trained'),
])
def test_population_killed_before_a_checkpoint_resumes_with_its_seeds_only(
        resumed, tmp_path, capsys, flags, message):
    # Its folder as the first checkpoint would have found it.
    run_dir = tmp_path / 'K-pendulum'
    run_dir.mkdir()
    for name in ('config.yaml', run_folder.PROVENANCE):
        (run_dir / name).write_bytes((resumed / name).read_bytes())
    saved = _listing(run_dir)
    code = _main(f'--logdir={tmp_path}', '--timestamp=K', *flags)
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    # After the log lines of the run folder.
    assert [line for line in lines if ' INFO ' not in line] == lines[-1:]
    assert lines[-1].startswith(f'Error: Cannot resume {run_dir} {message}')
    assert _listing(run_dir) == saved
    # The config.yaml of an older population records none: its checkpoint,
    # once it has one, decides.
    assert checkpoints.check_resumed_seeds(
        str(run_dir), graph_env.NEW_RUN, [3, 9], None, None) is None


def test_export_and_visualize_take_a_member(resumed, tmp_path):
    rows = _results(resumed)['members']
    best = max(rows, key=lambda row: row['final_score'])['member']
    exported = policy_export.export_run(resumed, tmp_path / 'best')
    assert exported['member'] == best
    other = 'seed-8' if best == 'seed-3' else 'seed-3'
    policies = [tf.saved_model.load_v2(str(tmp_path / name)) for name in (
        'best', policy_export.export_run(
            resumed, tmp_path / other, member=other)['member'])]
    observ = tf.constant([[0.5, -0.5, 1.0]])
    actions = [policy.action(observ).numpy() for policy in policies]
    assert not np.array_equal(*actions)
    with pytest.raises(policy_export.ExportError, match=(
            f'^--member=seed-9 is not a member of {resumed}/model.ckpt-')):
        policy_export.export_run(resumed, tmp_path / 'none', member='seed-9')
    statistics = episode_videos.visualize(
        resumed, tmp_path / 'videos', num_episodes=1, env_mode='inprocess',
        seed=0, member=other)
    assert statistics['member'] == other


def test_sigterm_saves_every_member_and_the_population_resumes(
        monkeypatch, tmp_path):
    # On Python environments (the bridge), whose state checkpoints hold.
    settings = [f'--set={setting}' for setting in _SETTINGS
                if not setting.startswith('steps=')]
    script = _Script(
        f'--logdir={tmp_path}', '--config=pendulum', '--timestamp=T',
        '--seeds=3,8', '--env_mode=inprocess', *settings, '--set=steps=1e5')
    try:
        # The members' IQM and range follow the pooled mean score.
        script.wait_for(
            r'INFO Step \d+ \(eval\): mean score -?[\d.]+, members IQM '
            r'-?\d+\.\d range -?\d+\.\d to -?\d+\.\d, ')
        script.process.send_signal(signal.SIGTERM)
        code, _ = script.finish()
    finally:
        script.kill()
    assert code == 128 + signal.SIGTERM
    assert script.lines[-1] == (
        f'Interrupted by SIGTERM; resume with --logdir={tmp_path} '
        '--timestamp=T.')
    run_dir = str(tmp_path / 'T-pendulum')
    saved = checkpoints.saved_env(run_dir)
    assert (saved.seeds, saved.mode) == ([3, 8], 'inprocess')
    reader = tf.train.load_checkpoint(saved.path)
    assert reader.get_tensor(
        member_checkpoint.SEEDS_VARIABLE).tolist() == [3, 8]
    assert reader.get_tensor('penalty').shape == (2,)
    # The resume hint's flags and --seeds; auto resumes in process.
    _resume_one_phase(
        monkeypatch, tmp_path, run_dir, saved.path, 'auto', '--seeds=3,8')
    rows = _results(pathlib.Path(run_dir))['members']
    assert [row['member'] for row in rows] == ['seed-3', 'seed-8']
    assert np.isfinite([row['final_score'] for row in rows]).all()


@pytest.fixture(name='variants', scope='module')
def _variants(tmp_path_factory):
    """The run folder of a population of two learning rates and the
    seeds 3 and 8."""
    logdir = tmp_path_factory.mktemp('variants')
    code = _main(
        f'--logdir={logdir}', '--config=pendulum', '--timestamp=V',
        '--seeds=3,8', '--set=learning_rate=1e-3', '--set=learning_rate=0.01',
        *(f'--set={setting}' for setting in _SETTINGS))
    assert code == 0
    return logdir / 'V-pendulum'


def test_variants_score_as_their_single_runs(variants):
    names = ['learning_rate=1e-3/seed-3', 'learning_rate=1e-3/seed-8',
             'learning_rate=0.01/seed-3', 'learning_rate=0.01/seed-8']
    results = _results(variants)
    rows = results['members']
    assert [row['member'] for row in rows] == names
    # The flags of the members, beside the config's values.
    assert config_io.load_config(variants)[checkpoints.POPULATION_KEY] == (
        '--seeds=3,8 --set=learning_rate=1e-3 --set=learning_rate=0.01')
    assert [(row['seed'], row['setting']) for row in rows] == [
        (3, {'learning_rate': '1e-3'}), (8, {'learning_rate': '1e-3'}),
        (3, {'learning_rate': '0.01'}), (8, {'learning_rate': '0.01'})]
    assert [(row['variant'], row['setting'], row['final']['seeds'])
            for row in results['variants']] == [
                ('learning_rate=1e-3', {'learning_rate': '1e-3'}, 2),
                ('learning_rate=0.01', {'learning_rate': '0.01'}, 2)]
    scores = [row['final_score'] for row in rows]
    assert results['variants'][1]['final']['iqm'] == pytest.approx(
        sum(scores[2:]) / 2)
    for row in rows:
        curve = _scalars(variants / row['member'] / 'eval')
        assert curve[80] == pytest.approx(row['final_score'], rel=1e-6)
        assert row['final_score'] == pytest.approx(_alone(
            row['seed'], f"learning_rate={row['setting']['learning_rate']}"),
            rel=1e-5)
    assert scores[0] != scores[2]
    curves = (variants / population_run.CURVES_NAME).read_text().split()
    assert curves[1:3] == [
        f'pendulum-learning_rate=1e-3,3,40,{curves[1].split(",")[3]}',
        f'pendulum-learning_rate=1e-3,3,80,{scores[0]!r}']


def test_variants_resume_with_their_own_only(variants):
    config, run_dir, _ = run_folder.prepare_run(
        str(variants.parent), 'pendulum', 'V', _SETTINGS)
    saved = _listing(run_dir)
    with pytest.raises(config_io.ConfigError) as error:
        next(trainer.train(config, 'graph', seeds=[3, 8], variants=[
            (('learning_rate', '1e-3'),), (('learning_rate', '0.1'),)]))
    assert str(error.value) == (
        f'Cannot resume {run_dir} with --seeds=3,8 --set=learning_rate=1e-3 '
        '--set=learning_rate=0.1: it trained a population of --seeds=3,8 '
        '--set=learning_rate=1e-3 --set=learning_rate=0.01; resume it with '
        '--seeds=3,8 --set=learning_rate=1e-3 --set=learning_rate=0.01, or '
        'start a new run (another --timestamp).')
    assert _listing(run_dir) == saved
    # Resumed at its end with its own variants, it reports them again.
    before = _results(variants)
    assert not list(trainer.train(config, 'graph', seeds=[3, 8], variants=[
        (('learning_rate', '1e-3'),), (('learning_rate', '0.01'),)]))
    assert _results(variants) == before
    exported = policy_export.export_run(
        variants, variants.parent / 'export',
        member='learning_rate=0.01/seed-8')
    assert exported['member'] == 'learning_rate=0.01/seed-8'


@pytest.mark.parametrize('flags, message', [
    (('--seeds=0,3,3',), '--seeds=0,3,3 lists seed 3 twice; expected each '
     'once.'),
    (('--seeds=0-2,1',), '--seeds=0-2,1 lists seed 1 twice; expected each '
     'once.'),
    (('--seeds=2,-1',), '--seeds=2,-1: seed -1 must be an integer from 0 to '
     '4294967295.'),
    (('--seeds=',), '--seeds= lists no seeds; expected e.g. --seeds=0-15 or '
     '--seeds=0,3,7.'),
    (('--seeds=0,,1',), "--seeds=0,,1: '' is not a seed or a range of "
     'seeds; expected e.g. --seeds=0-15 or --seeds=0,3,7.'),
    (('--seeds=5-2',), '--seeds=5-2: the range 5-2 is empty; expected '
     'LOW-HIGH with LOW <= HIGH.'),
    (('--seeds=0-99999',), '--seeds=0-99999 lists 100000 seeds; expected '
     'at most 65536.'),
    (('--seeds=0-128',), '--seeds=0-128 makes 129 members of num_agents=8, '
     '1032 environments; expected at most max_agents=1024 (raise it where '
     'intended).'),
    (('--seeds=0,1', '--seed=3'), '--seeds=0,1 and --seed=3 conflict: '
     '--seeds trains a member per seed; pass one of them.'),
    (('--seeds=0,1', '--config=cheetah', '--env_mode=graph'), '--seeds=0,1: '
     "the config env 'HalfCheetah-v5' has no in-graph task; tasks with one: "
     'Acrobot-v1, '),
    (('--set=discount=0.9', '--set=discount=0.99'), '--set=discount is '
     'given several times, which makes variants of a population; pass '
     '--seeds too (e.g. --seeds=0).'),
    (('--seeds=0,1', '--set=num_agents=2', '--set=num_agents=4'), 'Variants '
     'of --set: num_agents cannot vary among the members of a population: '
     'it changes the shapes or the structure of the graph; keys that may: '
     'learning_rate, entropy_regularization, '),
    (('--seeds=0', '--set=ppo_clip=0.2', '--set=ppo_clip=null'), 'Variants '
     'of --set: ppo_clip of 0.2, None switches a part of the graph off in '
     'some members only; vary it among values that are all set (or run '
     'apart).'),
    (('--seeds=0', '--set=discount=0.9', '--set=discount=2'), 'Config '
     'discount=2.0 must be in [0, 1].'),
    (('--seeds=0-64', '--set=discount=0.9', '--set=discount=0.99'),
     '--seeds=0-64 with 2 variants makes 130 members of num_agents=8, 1040 '
     'environments; expected at most max_agents=1024'),
    # Ray here as where it is not installed.
    (('--seeds=0,1', '--env_mode=ray'), "--env_mode=ray: Ray is not "
     "installed; install the 'ray' extra: pip install -e '.[ray]'"),
])
def test_bad_seeds_exit_2_in_one_line(
        monkeypatch, tmp_path, capsys, flags, message):
    monkeypatch.setitem(sys.modules, 'ray', None)
    code = _main(f'--logdir={tmp_path}', '--config=pendulum', *flags)
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f'Error: {message}')
    assert os.listdir(tmp_path) == []
