"""Tests of the video script: recording, GL selection, errors, end to end."""

import os

import imageio.v3 as iio
import numpy as np
import pytest

from agents import algorithms
from agents import tools
from agents.scripts import utility
from agents.scripts import visualize


def _read_video(path):
    """Decoded frames of an mp4 file, shape (frames, height, width, 3)."""
    return iio.imread(path)


def _write_run_config(run_dir, **overrides):
    """A run folder with a config.yaml but no checkpoint."""
    config = dict(
        env='Pendulum-v1', algorithm=algorithms.PPO, max_length=50,
        normalize_ranges=True)
    config.update(overrides)
    utility.save_config(config, str(run_dir))
    return run_dir


# Recording wrapper.


def test_record_episodes_keeps_finished_episodes_with_reset_frame(tmp_path):
    """Each ended episode keeps a video of its reset frame and its steps."""
    env = tools.MockEnvironment(durations=(3, 2), render_mode='rgb_array')
    env = visualize.RecordEpisodes(env, str(tmp_path / 'videos'))
    env.reset()
    for _ in range(3):
        _, _, terminated, _, _ = env.step(np.zeros(3, np.float32))
    assert terminated
    assert len(env.videos) == 1
    frames = _read_video(env.videos[0])
    # The reset frame and one frame per step: length + 1.
    assert frames.shape == (4, 16, 16, 3)
    # MockEnvironment paints step k with the intensity 10 k.
    intensities = frames.reshape(4, -1).mean(axis=1)
    np.testing.assert_allclose(intensities, [0, 10, 20, 30], atol=3)
    env.reset()
    env.step(np.zeros(3, np.float32))
    env.step(np.zeros(3, np.float32))
    assert len(env.videos) == 2
    assert _read_video(env.videos[1]).shape[0] == 3
    env.close()
    assert sorted(os.listdir(tmp_path / 'videos')) == sorted(
        os.path.basename(path) for path in env.videos)


def test_record_episodes_deletes_unfinished_episodes(tmp_path):
    """Episodes cut short by a reset or by close leave no file."""
    env = tools.MockEnvironment(durations=(5,), render_mode='rgb_array')
    env = visualize.RecordEpisodes(env, str(tmp_path))
    env.reset()
    env.step(np.zeros(3, np.float32))
    env.reset()  # Cuts the first episode short.
    env.step(np.zeros(3, np.float32))
    env.close()  # Cuts the second episode short.
    assert not env.videos
    assert not os.listdir(tmp_path)


def test_record_episodes_needs_rgb_array_rendering(tmp_path):
    """An env without rgb_array rendering is refused at once."""
    env = tools.MockEnvironment(render_mode=None)
    with pytest.raises(ValueError, match="render_mode 'rgb_array', got None"):
        visualize.RecordEpisodes(env, str(tmp_path))


def test_record_episodes_needs_reset_before_step(tmp_path):
    """Stepping before the first reset names the missing reset."""
    env = tools.MockEnvironment(render_mode='rgb_array')
    env = visualize.RecordEpisodes(env, str(tmp_path))
    with pytest.raises(RuntimeError, match='Reset the recorded environment'):
        env.step(np.zeros(3, np.float32))


def test_pad_frame_centres_to_multiple_of_16():
    """Frames grow to multiples of 16 by repeating their edges."""
    frame = np.zeros((500, 30, 3), np.uint8)
    frame[0, :] = 200
    padded = visualize.pad_frame(frame)
    assert padded.shape == (512, 32, 3)
    assert padded.flags['C_CONTIGUOUS']
    # 12 rows split 6 above and 6 below; the edge row is repeated.
    assert (padded[:7] == 200).all() and (padded[7:] == 0).all()
    same = np.ones((32, 48, 3), np.uint8)
    np.testing.assert_array_equal(visualize.pad_frame(same), same)


# Off-screen OpenGL.


def test_needs_gl():
    """MuJoCo ids need GL, classic control ids not, constructors unknown."""
    assert visualize.needs_gl('HalfCheetah-v5') is True
    assert visualize.needs_gl('Pendulum-v1') is False
    assert visualize.needs_gl(tools.MockEnvironment) is None


def test_gl_backend_error_names_packages(monkeypatch):
    """Without a backend, one line names the Debian packages to install."""
    monkeypatch.delenv('MUJOCO_GL', raising=False)
    monkeypatch.setattr(
        visualize, '_probe_gl_backend', lambda backend: 'cannot load')
    with pytest.raises(visualize.GLBackendError) as error:
        visualize.select_gl_backend()
    message = str(error.value)
    assert '\n' not in message
    assert 'egl: cannot load; osmesa: cannot load' in message
    assert 'libegl1 libgl1-mesa-dri (EGL)' in message
    assert 'libosmesa6 (OSMESA)' in message
    assert 'MUJOCO_GL' not in os.environ
    assert visualize.select_gl_backend(required=False) is None


def test_gl_backend_falls_back_to_osmesa(monkeypatch):
    """OSMesa is chosen when EGL fails, and stored in MUJOCO_GL."""
    monkeypatch.delenv('MUJOCO_GL', raising=False)
    tried = []

    def probe(backend):
        tried.append(backend)
        return 'no EGL' if backend == 'egl' else None

    monkeypatch.setattr(visualize, '_probe_gl_backend', probe)
    assert visualize.select_gl_backend() == 'osmesa'
    assert tried == ['egl', 'osmesa']
    assert os.environ['MUJOCO_GL'] == 'osmesa'


def test_gl_backend_rejects_unusable_requested_backend(monkeypatch):
    """A MUJOCO_GL value that cannot render is reported, not replaced."""
    monkeypatch.setenv('MUJOCO_GL', 'nonsense')
    with pytest.raises(visualize.GLBackendError, match=(
            'MuJoCo cannot render with MUJOCO_GL=nonsense .*invalid value')):
        visualize.select_gl_backend()


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
@pytest.mark.parametrize('value', [0, -1, 1.5, True])
def test_counts_must_be_positive_integers(tmp_path, name, value):
    """Agent and episode counts below one or not integers are refused."""
    with pytest.raises(ValueError, match=(
            f'{name} must be a positive integer, got {value!r}')):
        visualize.visualize(
            str(tmp_path), str(tmp_path / 'out'), **{name: value})
    assert not (tmp_path / 'out').exists()
