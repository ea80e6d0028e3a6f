"""Videos of the episodes of an environment, encoded where it steps (in
worker processes: frames never cross a pipe). No TensorFlow here: a worker
that renders MuJoCo through Mesa's OpenGL crashes once it is loaded."""

import collections
import contextlib
import os
import uuid

import gymnasium as gym
import imageio_ffmpeg
import numpy as np

from agents.tools import worker_errors

# The x264 preset of the videos: half the encoder's CPU time of ffmpeg's
# default ('medium') for files about 6% larger (HalfCheetah at 480x480; see
# benchmarks/profile_video.py).
PRESET = 'veryfast'


@worker_errors.travels
class RenderModeError(ValueError):
    """An environment to record does not render RGB arrays."""


class RecordEpisodes(gym.Wrapper):
    """Encode every complete episode of an environment into an mp4 video.

    Frames stream to an ffmpeg encoder (H.264, `PRESET`, at the env's
    `metadata['render_fps']` or 30), padded to sizes divisible by 16. The
    video of an episode that ends joins `videos`; that of one cut short by a
    reset or `close` is deleted. A `RenderModeError` unless the environment
    renders RGB arrays (`render_mode='rgb_array'`). The videos go to
    `directory`, created at the first reset; the encoder runs `threads`
    threads, or as many as ffmpeg chooses for None.
    """

    def __init__(self, env, directory, threads=None):
        if env.render_mode != 'rgb_array':
            raise RenderModeError(
                "Recording needs an environment with render_mode "
                f"'rgb_array', got {env.render_mode!r} from {env}.")
        super().__init__(env)
        self._directory = directory
        self._fps = float(env.metadata.get('render_fps') or 30)
        self._encoder_options = ['-preset', PRESET]
        if threads:
            self._encoder_options += ['-threads', str(int(threads))]
        self._writer = None
        self._path = None
        self._videos = []

    @property
    def videos(self):
        """Paths of the videos of the completed episodes, oldest first."""
        return tuple(self._videos)

    def reset(self, *, seed=None, options=None):
        """Reset the environment and start recording a new episode."""
        self._discard()
        observ, info = self.env.reset(seed=seed, options=options)
        os.makedirs(self._directory, exist_ok=True)
        # Unique and not created here: the encoder creates it (umask).
        self._path = os.path.join(
            self._directory, f'.recording-{uuid.uuid4().hex}.mp4')
        self._write(self.env.render())
        return observ, info

    def step(self, action):
        """Step the environment (after a reset) and record the frame."""
        if self._path is None:
            raise RuntimeError(
                'Reset the recorded environment before stepping it.')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._write(self.env.render())
        if terminated or truncated:
            self._writer.close()
            self._videos.append(self._path)
            self._writer = self._path = None
        return observ, reward, terminated, truncated, info

    def close(self):
        """Delete the video of an unfinished episode and close the env."""
        self._discard()
        super().close()

    def _write(self, frame):
        """Encode a frame, starting the encoder at the first."""
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            got = (f'an array of shape {frame.shape}'
                   if isinstance(frame, np.ndarray) else repr(frame))
            raise ValueError(
                'Expected an RGB frame of shape (height, width, 3) from '
                f'render(), got {got}.')
        frame = pad_frame(frame)
        if self._writer is None:
            height, width = frame.shape[:2]
            self._writer = imageio_ffmpeg.write_frames(
                self._path, (width, height), fps=self._fps, codec='libx264',
                pix_fmt_out='yuv420p', macro_block_size=16,
                ffmpeg_log_level='error', output_params=self._encoder_options)
            self._writer.send(None)
        self._writer.send(frame)

    def _discard(self):
        """Close and delete the video of an unfinished episode."""
        if self._writer is not None:
            # The partial video is deleted below either way.
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        if self._path is not None and os.path.exists(self._path):
            os.remove(self._path)
        self._path = None


def pad_frame(frame, multiple=16):
    """An image (height, width, 3) as a C-contiguous uint8 array, centred
    and padded to sizes divisible by `multiple` by repeating its edges."""
    frame = np.asarray(frame)
    if frame.dtype != np.uint8:
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    pad_height, pad_width = (-size % multiple for size in frame.shape[:2])
    if pad_height or pad_width:
        frame = np.pad(frame, (
            (pad_height // 2, pad_height - pad_height // 2),
            (pad_width // 2, pad_width - pad_width // 2),
            (0, 0)), mode='edge')
    return np.ascontiguousarray(frame)


class RecordedEnvironment(collections.namedtuple(
        'RecordedEnvironment', 'constructor, directory, gl_backend, threads, '
        'effects', defaults=(None, None, True))):
    """Picklable constructor `(seed) -> RecordEpisodes` that sets the
    rendering environment variables before it creates the env (and MuJoCo).

    Args:
        constructor: Callable `(seed, render_mode='rgb_array') -> env`.
        gl_backend: Value for `MUJOCO_GL`, or None to leave it alone.
        threads: Threads of Mesa's software renderer (`LP_NUM_THREADS`,
            unless set) and of each encoder; None leaves both to choose.
        effects: Whether MuJoCo renders shadows and reflections.
    """

    def __call__(self, seed=None):
        """Build one recorded environment with a seed or None."""
        if self.gl_backend:
            os.environ['MUJOCO_GL'] = self.gl_backend
        # Rendering to arrays opens no window. SDL, which the classic control
        # tasks render with through pygame, would otherwise probe for a
        # display and install handlers that swallow SIGINT and SIGTERM,
        # leaving the process deaf to `kill` and the workers to `close`.
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        os.environ.setdefault('SDL_NO_SIGNAL_HANDLERS', '1')
        if self.threads:
            os.environ.setdefault('LP_NUM_THREADS', str(int(self.threads)))
        env = self.constructor(seed, render_mode='rgb_array')
        try:
            if not self.effects:
                disable_effects(env)
            return RecordEpisodes(env, self.directory, threads=self.threads)
        except BaseException:
            env.close()
            raise


def disable_effects(env):
    """Turn off the shadows and reflections of a MuJoCo environment, most of
    the time of Mesa's software renderer, before its first frame; whether
    the environment renders through MuJoCo."""
    model = getattr(env.unwrapped, 'model', None)
    if model is None or not hasattr(model, 'mat_reflectance'):
        return False
    model.vis.quality.shadowsize = 0
    model.mat_reflectance[:] = 0
    return True
