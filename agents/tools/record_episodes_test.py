"""Tests of the episode recording wrapper."""

import functools
import os
import subprocess
import sys

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest

from agents import tools
from agents.tools import record_episodes


def _read_video(path):
    """Decoded frames of an mp4 file, shape (frames, height, width, 3)."""
    return iio.imread(path)


def test_record_episodes_keeps_finished_episodes_with_reset_frame(tmp_path):
    """Each ended episode keeps a video of its reset frame and its steps."""
    env = tools.MockEnvironment(durations=(3, 2), render_mode='rgb_array')
    env = record_episodes.RecordEpisodes(env, str(tmp_path / 'videos'))
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
    env = record_episodes.RecordEpisodes(env, str(tmp_path))
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
    with pytest.raises(
            record_episodes.RenderModeError,
            match="^Recording needs an environment with render_mode "
            "'rgb_array', got None from "):
        record_episodes.RecordEpisodes(env, str(tmp_path))
    assert issubclass(record_episodes.RenderModeError, ValueError)


def _unrendered_recording(directory):
    """A recording of an environment that renders no RGB arrays."""
    return record_episodes.RecordEpisodes(
        tools.MockEnvironment(render_mode=None), directory)


def test_render_mode_error_keeps_its_type_from_a_worker(tmp_path):
    """The refusal in a worker process arrives as a RenderModeError."""
    env = tools.wrappers.ExternalProcess(
        functools.partial(_unrendered_recording, str(tmp_path)))
    try:
        with pytest.raises(record_episodes.RenderModeError) as info:
            env.reset()
    finally:
        env.close()
    message = str(info.value)
    assert message.startswith('RenderModeError in ')
    assert "render_mode 'rgb_array', got None" in message


def test_record_episodes_needs_reset_before_step(tmp_path):
    """Stepping before the first reset names the missing reset."""
    env = tools.MockEnvironment(render_mode='rgb_array')
    env = record_episodes.RecordEpisodes(env, str(tmp_path))
    with pytest.raises(RuntimeError, match='Reset the recorded environment'):
        env.step(np.zeros(3, np.float32))


def test_pad_frame_centres_to_multiple_of_16():
    """Frames grow to multiples of 16 by repeating their edges."""
    frame = np.zeros((500, 30, 3), np.uint8)
    frame[0, :] = 200
    padded = record_episodes.pad_frame(frame)
    assert padded.shape == (512, 32, 3)
    assert padded.flags['C_CONTIGUOUS']
    # 12 rows split 6 above and 6 below; the edge row is repeated.
    assert (padded[:7] == 200).all() and (padded[7:] == 0).all()
    same = np.ones((32, 48, 3), np.uint8)
    np.testing.assert_array_equal(record_episodes.pad_frame(same), same)


def test_recorded_environment_builds_a_recording_env(tmp_path, monkeypatch):
    """The constructor asks for RGB arrays and sets the GL backend."""
    # Setting first makes monkeypatch restore the variable's absence too.
    monkeypatch.setenv('MUJOCO_GL', 'placeholder')
    monkeypatch.delenv('MUJOCO_GL')
    calls = []

    def constructor(seed, render_mode=None):
        calls.append((seed, render_mode))
        return tools.MockEnvironment(render_mode=render_mode)

    monkeypatch.setenv('LP_NUM_THREADS', 'placeholder')
    monkeypatch.delenv('LP_NUM_THREADS')
    make = record_episodes.RecordedEnvironment(
        constructor, str(tmp_path), gl_backend='osmesa', threads=1)
    env = make(7)
    try:
        assert isinstance(env, record_episodes.RecordEpisodes)
        assert calls == [(7, 'rgb_array')]
        assert os.environ['MUJOCO_GL'] == 'osmesa'
        # Mesa's software renderer, one thread per worker.
        assert os.environ['LP_NUM_THREADS'] == '1'
    finally:
        env.close()


def test_encoder_uses_a_fast_preset(tmp_path, monkeypatch):
    """x264 'veryfast' halves the encoder's time of ffmpeg's 'medium'."""
    options = []
    write_frames = record_episodes.imageio_ffmpeg.write_frames

    def spy(*args, **kwargs):
        options.append(kwargs['output_params'])
        return write_frames(*args, **kwargs)

    monkeypatch.setattr(record_episodes.imageio_ffmpeg, 'write_frames', spy)
    for threads, expected in ((None, []), (2, ['-threads', '2'])):
        env = record_episodes.RecordEpisodes(
            tools.MockEnvironment(durations=(1,), render_mode='rgb_array'),
            str(tmp_path), threads=threads)
        env.reset()
        env.step(np.zeros(3, np.float32))
        env.close()
        assert options.pop() == ['-preset', 'veryfast'] + expected
    assert len(os.listdir(tmp_path)) == 2


def test_effects_off_removes_shadows_and_reflections_of_mujoco(tmp_path):
    """No shadow map and no reflective materials; other envs unchanged."""

    def cheetah(seed, render_mode=None):
        del seed
        return gym.make('HalfCheetah-v5', render_mode=render_mode)

    env = record_episodes.RecordedEnvironment(
        cheetah, str(tmp_path), effects=False)(0)
    try:
        model = env.unwrapped.model
        assert model.vis.quality.shadowsize == 0
        assert not model.mat_reflectance.any()
    finally:
        env.close()
    default = gym.make('HalfCheetah-v5')
    assert default.unwrapped.model.vis.quality.shadowsize > 0
    assert default.unwrapped.model.mat_reflectance.any()
    default.close()
    assert not record_episodes.disable_effects(tools.MockEnvironment())


_IMPORTS = """
import sys
import agents.tools.gl_backend
import agents.tools.record_episodes
print(sorted(name for name in sys.modules if name.startswith('tensorflow')))
"""


def test_recording_modules_do_not_import_tensorflow():
    """Workers that render MuJoCo through Mesa crash once it is loaded."""
    result = subprocess.run(
        [sys.executable, '-c', _IMPORTS], capture_output=True, text=True,
        check=True)
    assert result.stdout.strip() == '[]'
