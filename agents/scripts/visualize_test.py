"""Tests of the video script: recording, GL selection, errors, end to end."""

import functools
import json
import os
import re
import shutil
import subprocess
import sys

from absl import flags
import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import algorithms
from agents import tools
from agents.scripts import configs
from agents.environments import env_construction
from agents.environments import env_modes
from agents.scripts import train
from agents.scripts import utility
from agents.training import checkpoints
from agents.training import config_io
from agents.training import episode_videos
from agents.training import simulation as simulation_lib
from agents.scripts import visualize
from agents.tools import gl_backend
from agents.tools import sliced_batch_env


def _read_video(path):
    """Decoded frames of an mp4 file, shape (frames, height, width, 3)."""
    return iio.imread(path)


def _run_script(*args):
    """Run `python -m agents.scripts.visualize` with arguments."""
    return subprocess.run(
        [sys.executable, '-m', 'agents.scripts.visualize', *args],
        capture_output=True, text=True, timeout=300, check=False,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


def _write_run_config(run_dir, **overrides):
    """A run folder with a config.yaml but no checkpoint."""
    config = dict(
        env='Pendulum-v1', algorithm=algorithms.PPO, max_length=50,
        normalize_ranges=True)
    config.update(overrides)
    config_io.save_config(config, str(run_dir))
    return run_dir


# Errors before anything is written.


def _assert_fails_without_output(tmp_path, logdir, message, **kwargs):
    outdir = tmp_path / 'out'
    with pytest.raises(visualize.VisualizeError, match=message):
        visualize.visualize(str(logdir), str(outdir), **kwargs)
    assert not outdir.exists()


def test_missing_run_folder(tmp_path):
    """A run folder that does not exist fails before writing."""
    _assert_fails_without_output(
        tmp_path, tmp_path / 'missing', 'Run folder .*missing does not exist')


def test_run_folder_without_config(tmp_path):
    """A folder without config.yaml fails before writing."""
    (tmp_path / 'run').mkdir()
    _assert_fails_without_output(
        tmp_path, tmp_path / 'run', 'No config.yaml in run folder .*run')


def test_run_folder_without_checkpoint(tmp_path):
    """A run without a checkpoint yet fails before writing."""
    run_dir = _write_run_config(tmp_path / 'run')
    _assert_fails_without_output(
        tmp_path, run_dir, 'run has no checkpoint yet')


def test_unknown_checkpoint(tmp_path):
    """A --checkpoint that does not exist lists the available ones."""
    run_dir = _write_run_config(tmp_path / 'run')
    _assert_fails_without_output(
        tmp_path, run_dir, "No checkpoint 'model.ckpt-7' in .*available: none",
        checkpoint='model.ckpt-7')


def test_unknown_env_id(tmp_path):
    """A config naming an unregistered env id fails before writing."""
    run_dir = _write_run_config(tmp_path / 'run', env='NoSuchEnv-v0')
    _assert_fails_without_output(
        tmp_path, run_dir, "Unknown env id 'NoSuchEnv-v0'")


def test_outdir_is_a_file(tmp_path):
    """An --outdir that is a file is refused."""
    run_dir = _write_run_config(tmp_path / 'run')
    (tmp_path / 'file').write_text('')
    with pytest.raises(visualize.VisualizeError, match='not a directory'):
        visualize.visualize(str(run_dir), str(tmp_path / 'file'))


@pytest.mark.parametrize('name', ['num_agents', 'num_episodes'])
@pytest.mark.parametrize('value', [0, -1, 1.5, True, '2'])
def test_counts_must_be_positive_integers(tmp_path, name, value):
    """Agent and episode counts below one or not integers are refused."""
    with pytest.raises(ValueError, match=(
            f'{name} must be a positive integer, got {value!r}')):
        visualize.visualize(
            str(tmp_path), str(tmp_path / 'out'), **{name: value})
    assert not (tmp_path / 'out').exists()


def test_unknown_env_mode_is_refused(tmp_path):
    """An unknown env mode fails before anything is written."""
    with pytest.raises(visualize.VisualizeError, match=re.escape(
            "Unknown env mode 'fast'; expected one of "
            f"{', '.join(env_modes.mode_names())}.")):
        visualize.visualize(
            str(tmp_path), str(tmp_path / 'out'), env_mode='fast')
    assert not (tmp_path / 'out').exists()


def test_command_line_error_is_one_line(tmp_path):
    """The script reports a bad run folder in one line and exits with 2."""
    outdir = tmp_path / 'out'
    result = _run_script(
        f'--logdir={tmp_path / "missing"}', f'--outdir={outdir}')
    assert result.returncode == 2
    assert 'Traceback' not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f'Error: Run folder {tmp_path / "missing"} does not exist.')
    assert not outdir.exists()


@pytest.mark.parametrize('name', ['num_agents', 'num_episodes'])
def test_count_flags_must_be_positive(name):
    """The flags refuse counts below one when they are parsed."""
    try:
        with pytest.raises(
                flags.IllegalFlagValueError,
                match=f'flag --{name}=0: 0 is not a positive integer'):
            visualize.FLAGS(['visualize', f'--{name}=0'])
    finally:
        visualize.FLAGS.unparse_flags()


# End to end: train a tiny policy, then record it.


def _tiny_config(name, run_dir, max_length, steps):
    """A configuration of `configs` that trains in seconds into `run_dir`."""
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.logdir = str(run_dir)
        config.seed = 0
        config.num_agents = 2
        config.max_length = max_length
        config.steps = steps
        config.eval_every = None
        config.update_every = 2
        config.eval_episodes = 1
        config.update_epochs = 1
        config.batch_size = 2
        config.chunk_length = max_length
        config.policy_layers = (8,)
        config.value_layers = (8,)
    config.lock()
    return config


def _train_run(run_dir, name, max_length, steps):
    """Train a tiny configuration as `agents.scripts.train` main does."""
    config = _tiny_config(name, run_dir, max_length, steps)
    config_io.save_config(config, str(run_dir))
    for _ in train.train(config, 'inprocess'):
        pass
    assert checkpoints.list_checkpoints(str(run_dir))
    return run_dir


def _greedy_episodes(run_dir, num_agents, seed, num_episodes):
    """Returns and lengths of greedy episodes, simulated without recording.

    Runs the restored policy in a graph of its own, over environments seeded
    as `visualize` seeds them, and lists the episodes in the order they end,
    those of the same step in the order of the batch.
    """
    config = config_io.load_config(str(run_dir))
    graph = tf.Graph()
    with graph.as_default():
        batch_env = utility.define_batch_env(
            functools.partial(env_construction.create_environment, config),
            num_agents, False, seed)
        simulation = simulation_lib.define_simulation_graph(
            batch_env, config.algorithm, config)
        saver = checkpoints.define_saver(exclude=(r'.*_temporary.*',))
    episodes = []
    lengths = np.zeros(num_agents, int)
    try:
        with tf.Session(graph=graph) as sess:
            checkpoints.initialize_variables(
                sess, saver, str(run_dir), resume=True)
            reset = True
            while len(episodes) < num_episodes:
                done, score = sess.run(
                    [simulation.done, simulation.score], {
                        simulation.is_training: False,
                        simulation.should_log: False,
                        simulation.force_reset: reset})
                reset = False
                lengths += 1
                for agent in np.flatnonzero(done):
                    episodes.append((float(score[agent]), int(lengths[agent])))
                    lengths[agent] = 0
    finally:
        batch_env.close()
    return episodes[:num_episodes]


def _check_output(outdir, statistics, expected, frame_shape):
    """Compare the videos and the statistics file with the expectation."""
    names = [f'episode-{index:03d}.mp4' for index in range(len(expected))]
    assert sorted(os.listdir(outdir)) == names + ['episodes.json']
    with open(os.path.join(outdir, 'episodes.json'), encoding='utf-8') as file_:
        assert json.load(file_) == statistics
    episodes = statistics['episodes']
    assert [episode['video'] for episode in episodes] == names
    assert [episode['index'] for episode in episodes] == list(
        range(len(expected)))
    np.testing.assert_allclose(
        [episode['return'] for episode in episodes],
        [score for score, _ in expected], rtol=1e-5)
    assert [episode['length'] for episode in episodes] == [
        length for _, length in expected]
    assert statistics['mean_return'] == pytest.approx(
        np.mean([episode['return'] for episode in episodes]))
    for episode in episodes:
        frames = _read_video(os.path.join(outdir, episode['video']))
        # The reset frame and one frame per step.
        assert episode['frames'] == episode['length'] + 1
        assert frames.shape == (episode['frames'],) + frame_shape


@pytest.fixture(scope='module', name='pendulum_run')
def fixture_pendulum_run(tmp_path_factory):
    """Run folder of a tiny pendulum policy with episodes of 50 steps."""
    run_dir = tmp_path_factory.mktemp('pendulum') / 'run'
    return _train_run(run_dir, 'pendulum', max_length=50, steps=200)


@pytest.fixture(scope='module', name='pendulum_expected')
def fixture_pendulum_expected(pendulum_run):
    """Greedy episodes of two pendulums seeded 3 and 4, in order of ending.

    Both end an episode every 50 steps: the first of environment 3, the
    first of environment 4, the second of environment 3.
    """
    return _greedy_episodes(pendulum_run, 2, 3, 3)


def test_pendulum_two_episodes(pendulum_run, pendulum_expected, tmp_path):
    """Two sequential greedy episodes become two videos and their stats."""
    outdir = tmp_path / 'videos'
    statistics = visualize.visualize(
        str(pendulum_run), str(outdir), num_agents=1, num_episodes=2, seed=3)
    # One environment, seeded 3, runs both episodes.
    expected = [pendulum_expected[0], pendulum_expected[2]]
    assert [length for _, length in expected] == [50, 50]
    _check_output(str(outdir), statistics, expected, (512, 512, 3))
    assert [episode['agent'] for episode in statistics['episodes']] == [0, 0]
    assert statistics['env'] == 'Pendulum-v1'
    assert statistics['seed'] == 3
    assert statistics['checkpoint'] == os.path.abspath(
        checkpoints.list_checkpoints(str(pendulum_run))[0])


class _Clock:
    """A clock that advances by a second on every reading."""

    def __init__(self):
        self._now = 0.0

    def monotonic(self):
        """Return the time, then advance it."""
        self._now += 1.0
        return self._now - 1.0


def test_recording_logs_its_progress(
        pendulum_run, tmp_path, monkeypatch, caplog):
    """Once nothing for 3.5 minutes while a cheetah episode rendered."""
    monkeypatch.setattr(episode_videos, 'time', _Clock())
    with caplog.at_level('INFO', logger='agents'):
        visualize.visualize(
            str(pendulum_run), str(tmp_path / 'videos'), num_agents=1,
            num_episodes=2, seed=3)
    # A line every 10 s of the clock: every 10 steps of episodes of 50.
    assert [record.getMessage() for record in caplog.records
            if record.getMessage().startswith('Recording')] == [
        f'Recording: {step // 51} of 2 episodes done, {step} steps at 1.0 '
        'steps/s.' for step in range(10, 101, 10)]


def test_episodes_use_the_cores_by_default(
        pendulum_run, pendulum_expected, tmp_path, monkeypatch, caplog):
    """Without num_agents, one environment per core records in a worker."""
    monkeypatch.setattr(sliced_batch_env, 'available_cpus', lambda: 2)
    outdir = tmp_path / 'videos'
    with caplog.at_level('INFO', logger='agents'):
        statistics = visualize.visualize(
            str(pendulum_run), str(outdir), num_episodes=2, seed=3,
            render_effects=False)
    _check_output(str(outdir), statistics, pendulum_expected[:2],
                  (512, 512, 3))
    assert [episode['agent'] for episode in statistics['episodes']] == [0, 1]
    assert statistics['num_agents'] == 2
    assert statistics['env_mode'] == 'slices'
    assert statistics['render_effects'] is False


@pytest.mark.parametrize('mode_flag', ['--env_processes', '--env_mode=slices'])
def test_pendulum_command_line_with_processes(
        pendulum_run, pendulum_expected, tmp_path, mode_flag):
    """The script steps agents in workers and drops surplus episodes."""
    outdir = tmp_path / 'videos'
    checkpoint = os.path.basename(checkpoints.list_checkpoints(
        str(pendulum_run))[0])
    result = _run_script(
        f'--logdir={pendulum_run}', f'--outdir={outdir}',
        f'--checkpoint={checkpoint}', '--num_agents=2', '--num_episodes=3',
        mode_flag, '--seed=3')
    assert result.returncode == 0, result.stderr
    with open(outdir / 'episodes.json', encoding='utf-8') as file_:
        statistics = json.load(file_)
    # Both agents end an episode at step 50 and 100; the fourth is dropped.
    _check_output(str(outdir), statistics, pendulum_expected, (512, 512, 3))
    assert [episode['agent'] for episode in statistics['episodes']] == [
        0, 1, 0]
    progress = [line for line in result.stderr.splitlines()
                if ' Episode ' in line]
    assert len(progress) == 3
    for line, episode in zip(progress, statistics['episodes']):
        assert line.endswith(
            f"Episode {episode['index']}: return {episode['return']:.3f}, "
            f"length 50, video {outdir / episode['video']}.")


def unrendered_pendulum(render_mode=None):
    """A config.env constructor that ignores the render mode it is given."""
    del render_mode
    return gym.make('Pendulum-v1')


@pytest.mark.parametrize('env_mode', ['inprocess', 'slices'])
def test_environment_without_rgb_arrays(pendulum_run, tmp_path, env_mode):
    """A constructor that does not render RGB arrays fails in one line, in
    this process and in workers (whose error keeps its type)."""
    run_dir = tmp_path / 'run'
    shutil.copytree(pendulum_run, run_dir)
    config = config_io.load_config(str(run_dir)).copy(env=unrendered_pendulum)
    config_io.save_config(config, str(run_dir))
    _assert_fails_without_output(
        tmp_path, run_dir, '^The environment agents.scripts.visualize_test:'
        'unrendered_pendulum does not render RGB arrays; .*$',
        env_mode=env_mode, num_agents=2)


def test_cheetah_command_line(tmp_path, restore_mujoco_gl):
    """MuJoCo renders off-screen into a video of length + 1 frames.

    Through the command line, whose script imports TensorFlow: its worker
    processes must stay free of it, with which Mesa's OpenGL crashes.
    """
    del restore_mujoco_gl  # select_gl_backend stores the backend it chose.
    try:
        gl_backend.select_gl_backend()
    except gl_backend.GLBackendError as error:
        pytest.skip(f'No off-screen OpenGL: {error}')
    run_dir = _train_run(
        tmp_path / 'run', 'cheetah', max_length=10, steps=60)
    outdir = tmp_path / 'videos'
    result = _run_script(
        f'--logdir={run_dir}', f'--outdir={outdir}', '--seed=1')
    assert result.returncode == 0, result.stderr
    with open(outdir / 'episodes.json', encoding='utf-8') as file_:
        statistics = json.load(file_)
    expected = _greedy_episodes(run_dir, 1, 1, 1)
    assert expected[0][1] == 10
    _check_output(str(outdir), statistics, expected, (480, 480, 3))


@pytest.fixture(scope='module', name='graph_pendulum_run')
def fixture_graph_pendulum_run(tmp_path_factory):
    """Run folder of a tiny pendulum policy trained on the in-graph task."""
    run_dir = tmp_path_factory.mktemp('graph_pendulum') / 'run'
    config = _tiny_config('pendulum', run_dir, max_length=50, steps=200)
    config_io.save_config(config, str(run_dir))
    for _ in train.train(config, 'graph'):
        pass
    return run_dir


@pytest.fixture(scope='module', name='graph_pendulum_expected')
def fixture_graph_pendulum_expected(graph_pendulum_run):
    """Greedy episodes of `graph_pendulum_run` as `pendulum_expected`."""
    return _greedy_episodes(graph_pendulum_run, 2, 3, 3)


@pytest.mark.parametrize('env_mode', ['auto', 'graph'])
def test_graph_trained_policy_records_on_gymnasium(
        graph_pendulum_run, graph_pendulum_expected, tmp_path, env_mode):
    """A policy trained with --env_mode=graph records on gymnasium's
    Pendulum-v1 as the greedy policy steps there."""
    reader = tf.train.load_checkpoint(
        checkpoints.list_checkpoints(str(graph_pendulum_run))[0])
    assert reader.has_tensor('environments/task/state')
    outdir = tmp_path / 'videos'
    statistics = visualize.visualize(
        str(graph_pendulum_run), str(outdir), num_agents=1, num_episodes=2,
        seed=3, env_mode=env_mode)
    _check_output(
        str(outdir), statistics,
        [graph_pendulum_expected[0], graph_pendulum_expected[2]],
        (512, 512, 3))
    assert statistics['env'] == 'Pendulum-v1'
    assert statistics['env_mode'] == 'inprocess'
