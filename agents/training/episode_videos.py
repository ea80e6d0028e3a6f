"""The output folder of recorded episodes: its checks, videos and statistics.

`visualize.visualize` and `policy_video.visualize_policy` write the videos
`episode-000.mp4`, ... and `episodes.json` through these functions.
"""

import json
import logging
import os
import time

import numpy as np

from agents.training import config_io
from agents.tools import episode_wrappers
from agents.tools import gl_backend as gl_backend_lib

STATISTICS_FILE = 'episodes.json'
# Seconds between the progress lines of a recording.
PROGRESS_SECONDS = 10.0


class VisualizeError(Exception):
    """A run folder, flag or system setup with which no video can be made."""


def check_count(name, value):
    """A positive integer argument as an int, or a ValueError naming it."""
    if not episode_wrappers.is_integer(value) or value < 1:
        raise ValueError(
            f'{name} must be a positive integer, got {value!r}.')
    return int(value)


def check_outdir(outdir):
    """Raise a VisualizeError unless `outdir` is or can become a writable
    directory; creates nothing."""
    if os.path.exists(outdir):
        if not os.path.isdir(outdir):
            raise VisualizeError(f'--outdir {outdir} is not a directory.')
        if not os.access(outdir, os.W_OK | os.X_OK):
            raise VisualizeError(f'--outdir {outdir} is not writable.')
        return
    parent = os.path.dirname(os.path.abspath(outdir))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(
            parent, os.W_OK | os.X_OK):
        raise VisualizeError(
            f'Cannot create --outdir {outdir}: {parent} is not a writable '
            'directory.')


def select_gl_backend(env):
    """`gl_backend.needs_gl(env)` and the backend to use (None: no OpenGL).

    Raises:
      VisualizeError: When MuJoCo needs an off-screen backend and none
          loads.
    """
    gl_needed = gl_backend_lib.needs_gl(env)
    gl_backend = None
    if gl_needed is not False:
        try:
            gl_backend = gl_backend_lib.select_gl_backend(
                required=bool(gl_needed))
        except gl_backend_lib.GLBackendError as error:
            raise VisualizeError(str(error)) from error
    return gl_needed, gl_backend


class Progress:
    """Logs a line every `PROGRESS_SECONDS` while `num_episodes` record.

    Rendering is slow: a MuJoCo episode takes minutes on a CPU.
    """

    def __init__(self, num_episodes):
        self._num_episodes = num_episodes
        self._start = self._last = time.monotonic()
        self._steps = 0

    def step(self, episodes_done, count=1):
        """Count `count` environment steps; log when it is time."""
        self._steps += count
        now = time.monotonic()
        if now - self._last < PROGRESS_SECONDS:
            return
        self._last = now
        logging.getLogger('agents').info(
            'Recording: %d of %d episodes done, %s steps at %.1f steps/s.',
            episodes_done, self._num_episodes, f'{self._steps:,}',
            self._steps / (now - self._start))


def keep_episode(
        recording, outdir, index, num_episodes, agent, episode_return,
        length):
    """Move an episode's video into `outdir` under its number and log it.

    Args:
      recording: Path of the finished video.
      outdir: The output folder.
      index: Number of the episode, in the order the episodes ended.
      num_episodes: Number of episodes recorded, for the digits of names.
      agent: Index of the environment that ran the episode.
      episode_return: Sum of the episode's rewards.
      length: Number of steps of the episode.

    Returns:
      Dict of `index`, `agent`, `return`, `length`, `frames` and `video`.
    """
    width = max(3, len(str(num_episodes - 1)))
    video = f'episode-{index:0{width}d}.mp4'
    os.replace(recording, os.path.join(outdir, video))
    episode = {
        'index': index, 'agent': int(agent), 'return': float(episode_return),
        'length': length, 'frames': length + 1, 'video': video}
    logging.getLogger('agents').info(
        'Episode %d: return %.3f, length %d, video %s.', index,
        episode['return'], length, os.path.join(outdir, video))
    return episode


def remove_recordings(outdir):
    """Delete the recordings in `outdir` that were never handed out."""
    if not os.path.isdir(outdir):
        return
    for name in os.listdir(outdir):
        if name.startswith('.recording-') and name.endswith('.mp4'):
            os.remove(os.path.join(outdir, name))


def write_statistics(outdir, description, episodes):
    """Write `episodes.json` with the mean return of the episodes, and log it.

    Args:
      outdir: The output folder.
      description: Dict of what was recorded, the first keys of the file.
      episodes: List of `keep_episode`'s dicts.

    Returns:
      Dict of the description, `mean_return` and `episodes`.
    """
    statistics = dict(
        description,
        mean_return=float(np.mean([episode['return'] for episode in episodes])),
        episodes=episodes)
    config_io.write_atomic(
        os.path.join(outdir, STATISTICS_FILE),
        json.dumps(statistics, indent=2) + '\n')
    logging.getLogger('agents').info(
        'Mean return %.3f over %d episodes; statistics in %s.',
        statistics['mean_return'], len(episodes),
        os.path.join(outdir, STATISTICS_FILE))
    return statistics
