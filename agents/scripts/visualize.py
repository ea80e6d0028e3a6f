r"""Render videos of a trained policy and record its episode statistics.

Command line:

  python -m agents.scripts.visualize --logdir=~/logdir/<timestamp>-pendulum \
      --outdir=/tmp/pendulum-videos [--checkpoint=model.ckpt-100000] \
      [--num_agents=1] [--num_episodes=1] [--env_mode=auto] [--seed=0]

The script restores the configuration and the latest (or the named) checkpoint
of a run folder written by `agents.scripts.train`, rebuilds the environment
with the same wrappers, and runs the policy greedily: the mode of the action
distribution, without exploration noise and without training. It writes one
H.264 video per episode, `episode-000.mp4`, `episode-001.mp4`, ..., and the
statistics file `episodes.json` with every episode's index, return, length,
frame count and video name, and the mean return.

A video holds `length + 1` frames: the frame rendered after the reset that
began the episode, then one after every step. Frames are rendered and encoded
inside the process that steps the environment, so with worker processes
they never cross a pipe.

`--env_mode` picks where the environments step: `inprocess`, `processes`
(one worker each, also `--env_processes`), `slices` (one worker per CPU
core, stepping a slice of the batch each), or `auto`, the default. Rendering
and encoding dominate the time of a recorded step, so here `auto` measures
nothing: it means `slices` for MuJoCo tasks and `inprocess` for the others.

MuJoCo tasks render off-screen with `MUJOCO_GL=egl` when the variable is
unset, falling back to `osmesa`; when neither loads, the script says which
system packages to install. They always render in worker processes, as with
`--env_mode=slices` or `processes`: Mesa's OpenGL crashes in a process that
loaded TensorFlow.
"""

import contextlib
import json
import logging
import os
import subprocess
import sys
import uuid

from absl import app
from absl import flags
import cloudpickle
import gymnasium as gym
import imageio_ffmpeg
import numpy as np

from agents import tools

# TensorFlow, and `agents.scripts.utility`, which imports it, load inside the
# functions that need them. Worker processes started by
# `python -m agents.scripts.visualize` import this module again as their
# main module before they build their environment, and a worker that renders
# MuJoCo through Mesa's OpenGL crashes once TensorFlow is loaded.

FLAGS = flags.FLAGS


def _define_flag(define, name, default, help_string, **kwargs):
    """Define a flag unless another module of the process defined it.

    absl keeps one definition of a name per process, and `train.py` defines
    --logdir, --env_mode, --env_processes and --seed too; a process that
    imports both
    scripts, such as the test suite, shares the first definition. Running
    this script alone always uses the definitions below.
    """
    if name not in FLAGS:
        define(name, default, help_string, **kwargs)


_define_flag(
    flags.DEFINE_string, 'logdir', None, 'Run folder written by '
    'agents.scripts.train, holding config.yaml and checkpoints.')
_define_flag(
    flags.DEFINE_string, 'outdir', None, 'Directory to write the videos and '
    'episodes.json to; created when missing.')
_define_flag(
    flags.DEFINE_string, 'checkpoint', None, 'Checkpoint to restore, by name '
    'in the run folder (e.g. model.ckpt-100000) or by path; the latest when '
    'unset.')
_define_flag(
    flags.DEFINE_integer, 'num_agents', 1, 'Number of environments that run '
    'episodes in parallel.', lower_bound=1)
_define_flag(
    flags.DEFINE_integer, 'num_episodes', 1, 'Number of episodes to record.',
    lower_bound=1)
_define_flag(
    flags.DEFINE_string, 'env_mode', None, 'Where to step and render the '
    'environments: auto (the default: slices for MuJoCo, else inprocess), '
    'inprocess, processes (one worker process each) or slices (one worker '
    'per CPU core, stepping a slice of the batch each).')
_define_flag(
    flags.DEFINE_boolean, 'env_processes', None, 'Shorthand for '
    '--env_mode=processes; --noenv_processes for --env_mode=inprocess.')
_define_flag(
    flags.DEFINE_integer, 'seed', None, 'Seed of the environments: '
    'environment i gets seed + i. Unseeded when unset.')

STATISTICS_FILE = 'episodes.json'

# Off-screen OpenGL backends of MuJoCo in the order they are tried, and the
# Debian packages that provide each.
GL_BACKENDS = ('egl', 'osmesa')
_GL_PACKAGES = {
    'egl': ('EGL', 'libegl1 libgl1-mesa-dri'),
    'osmesa': ('OSMesa', 'libosmesa6'),
}
# Creates a context the way MuJoCo's renderer does, in a fresh interpreter:
# the backend is fixed at import time and cannot change in a process that
# already tried another one.
_GL_PROBE = (
    'import mujoco\n'
    'context = mujoco.GLContext(16, 16)\n'
    'context.make_current()\n'
    'context.free()\n')
_GL_PROBE_SECONDS = 60
_NO_RGB_ARRAY = "Recording needs an environment with render_mode 'rgb_array'"


class VisualizeError(Exception):
    """A run folder, flag or system setup with which no video can be made."""


class GLBackendError(VisualizeError):
    """No off-screen OpenGL backend for MuJoCo rendering is available."""


class RecordEpisodes(gym.Wrapper):
    """Encode every complete episode of an environment into an mp4 video.

    The frame after `reset` and the frame after every `step` are streamed to
    an ffmpeg encoder (H.264, yuv420p), so memory stays constant however long
    the episode. Frames are padded at their borders, repeating the edge
    pixels, to sizes divisible by 16, which every H.264 decoder accepts
    without rescaling. An episode that ends (terminated or truncated) keeps
    its video, and its path is appended to `videos`; an episode cut short by
    a reset or by `close` is deleted.
    """

    def __init__(self, env, directory, fps=None):
        """Record the episodes of an environment.

        Args:
            env: Environment created with `render_mode='rgb_array'`.
            directory: Existing or future directory for the video files;
                created at the first reset.
            fps: Frames per second of the videos; None uses the
                environment's `metadata['render_fps']`, or 30 without one.

        Raises:
            ValueError: When the environment does not render RGB arrays.
        """
        if env.render_mode != 'rgb_array':
            raise ValueError(
                f'{_NO_RGB_ARRAY}, got {env.render_mode!r} from {env}.')
        super().__init__(env)
        self._directory = directory
        self._fps = float(fps or env.metadata.get('render_fps') or 30)
        self._writer = None
        self._path = None
        self._videos = []

    @property
    def videos(self):
        """Paths of the videos of the completed episodes, oldest first."""
        return tuple(self._videos)

    def reset(self, *, seed=None, options=None):
        """Reset the environment and start recording a new episode.

        Args:
            seed: Seed for the environment's random generator, or None.
            options: Options for the environment's reset, or None.

        Returns:
            Tuple of the first observation and the info dict.
        """
        self._discard()
        observ, info = self.env.reset(seed=seed, options=options)
        os.makedirs(self._directory, exist_ok=True)
        # A unique name, without creating the file: the encoder creates it
        # with the permissions the umask grants.
        self._path = os.path.join(
            self._directory, f'.recording-{uuid.uuid4().hex}.mp4')
        self._write(self.env.render())
        return observ, info

    def step(self, action):
        """Step the environment, record the frame, and finish the video when
        the episode ends.

        Args:
            action: Action for the environment.

        Raises:
            RuntimeError: When stepped before the first reset.

        Returns:
            Tuple of observation, reward, terminated, truncated, and info.
        """
        if self._path is None:
            raise RuntimeError(
                'Reset the recorded environment before stepping it.')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._write(self.env.render())
        if terminated or truncated:
            self._finish()
        return observ, reward, terminated, truncated, info

    def close(self):
        """Delete the video of an unfinished episode and close the env."""
        self._discard()
        super().close()

    def _write(self, frame):
        if not isinstance(frame, np.ndarray) or frame.ndim != 3:
            raise ValueError(
                f'Expected an RGB frame of shape (height, width, 3) from '
                f'render(), got {_describe_frame(frame)}.')
        frame = pad_frame(frame)
        if self._writer is None:
            height, width = frame.shape[:2]
            self._writer = imageio_ffmpeg.write_frames(
                self._path, (width, height), fps=self._fps, codec='libx264',
                pix_fmt_out='yuv420p', macro_block_size=16,
                ffmpeg_log_level='error')
            self._writer.send(None)
        self._writer.send(frame)

    def _finish(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._path is not None:
            self._videos.append(self._path)
            self._path = None

    def _discard(self):
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:
                pass  # The partial video is deleted below either way.
            self._writer = None
        if self._path is not None:
            if os.path.exists(self._path):
                os.remove(self._path)
            self._path = None


def pad_frame(frame, multiple=16):
    """Pad an image to a height and width divisible by `multiple`.

    The padding repeats the edge pixels and is split evenly between both
    sides, so the picture stays centred and is never rescaled.

    Args:
        frame: Array of shape (height, width, 3); converted to uint8.
        multiple: Divisor of the padded height and width.

    Returns:
        C-contiguous uint8 array of the padded frame.
    """
    frame = np.asarray(frame)
    if frame.dtype != np.uint8:
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    height, width = frame.shape[:2]
    pad_height = -height % multiple
    pad_width = -width % multiple
    if pad_height or pad_width:
        frame = np.pad(frame, (
            (pad_height // 2, pad_height - pad_height // 2),
            (pad_width // 2, pad_width - pad_width // 2),
            (0, 0)), mode='edge')
    return np.ascontiguousarray(frame)


def select_gl_backend(required=True):
    """Choose MuJoCo's off-screen OpenGL backend for this process.

    A backend set in `MUJOCO_GL` is checked as it is; otherwise EGL and then
    OSMesa are tried, each in a fresh interpreter, and the first that creates
    a context is stored in `MUJOCO_GL`, where worker processes started later
    inherit it.

    Args:
        required: Whether to raise when no backend works; otherwise None is
            returned and `MUJOCO_GL` left as it was.

    Raises:
        GLBackendError: Naming the packages to install when no backend
            works and `required` is true.

    Returns:
        Name of the backend, or None.
    """
    requested = os.environ.get('MUJOCO_GL')
    candidates = (requested,) if requested else GL_BACKENDS
    failures = []
    for backend in candidates:
        failure = _probe_gl_backend(backend)
        if failure is None:
            os.environ['MUJOCO_GL'] = backend
            return backend
        failures.append(f'{backend}: {failure}')
    if not required:
        return None
    packages = ' or '.join(
        f'{_GL_PACKAGES[name][1]} ({_GL_PACKAGES[name][0]})'
        for name in GL_BACKENDS)
    if requested:
        raise GLBackendError(
            f'MuJoCo cannot render with MUJOCO_GL={requested} '
            f'({failures[0]}); unset MUJOCO_GL to try '
            f"{' and '.join(GL_BACKENDS)}, or install the Debian packages "
            f'{packages}.')
    raise GLBackendError(
        'No off-screen OpenGL backend for MuJoCo rendering ('
        + '; '.join(failures) + '). Install the Debian packages '
        f'{packages}, e.g. sudo apt-get install libegl1 libgl1-mesa-dri.')


def _probe_gl_backend(backend):
    """Error line of creating a MuJoCo GL context with a backend, or None."""
    environ = dict(os.environ, MUJOCO_GL=backend)
    try:
        result = subprocess.run(
            [sys.executable, '-c', _GL_PROBE], env=environ,
            capture_output=True, text=True, timeout=_GL_PROBE_SECONDS,
            check=False)
    except subprocess.TimeoutExpired:
        return f'no context within {_GL_PROBE_SECONDS} seconds'
    if result.returncode == 0:
        return None
    lines = result.stderr.strip().splitlines()
    return lines[-1] if lines else f'exit status {result.returncode}'


def needs_gl(env):
    """Whether an environment id or constructor renders through MuJoCo.

    Args:
        env: Gymnasium id or environment constructor of a configuration.

    Returns:
        True for MuJoCo environments, False for others, and None when a
        constructor does not reveal it.
    """
    if isinstance(env, str):
        entry_point = gym.spec(env).entry_point
        if callable(entry_point):
            entry_point = getattr(entry_point, '__module__', '')
        return 'mujoco' in str(entry_point)
    module = getattr(env, '__module__', '') or ''
    if 'mujoco' in module:
        return True
    return None


class RecordedEnvironment:
    """Constructor of the recorded environments of the batch.

    Called as `constructor(seed)` by `utility.define_batch_env`, it builds
    the configured environment with the wrappers of training, rendering RGB
    arrays, inside `RecordEpisodes`. With worker processes it runs in the
    worker, so it sets the rendering environment variables there too before
    the environment, and with it MuJoCo, is created.

    Mesa's OpenGL and TensorFlow crash when loaded into one process (their
    bundled LLVM builds collide), so a worker that renders MuJoCo must not
    import TensorFlow. This module imports it only inside functions, and
    `define_batch_env` sends `utility.create_environment` pickled by value
    (see `_pickle_by_value`) rather than as a reference whose unpickling
    would import `utility`, and with it TensorFlow.
    """

    def __init__(
            self, config, directory, gl_backend=None, create_environment=None):
        """Describe the environments to build.

        Args:
            config: Configuration with `env`, `max_length` and
                `normalize_ranges`.
            directory: Directory for the videos.
            gl_backend: Value for `MUJOCO_GL`, or None to leave it alone.
            create_environment: Function `(config, seed, render_mode)` that
                builds the environment with the wrappers of training; None
                uses `utility.create_environment`.
        """
        if create_environment is None:
            from agents.scripts import utility
            create_environment = utility.create_environment
        keys = ('env', 'max_length', 'normalize_ranges')
        self._config = tools.AttrDict(
            {key: config[key] for key in keys if key in config})
        self._config.lock()
        self._directory = directory
        self._gl_backend = gl_backend
        self._create_environment = create_environment

    def __call__(self, seed=None):
        """Build one recorded environment.

        Args:
            seed: Seed of the environment, or None.

        Returns:
            `RecordEpisodes` around the wrapped environment.
        """
        if self._gl_backend:
            os.environ['MUJOCO_GL'] = self._gl_backend
        # Rendering to arrays opens no window. SDL, which the classic control
        # tasks render with through pygame, would otherwise probe for a
        # display and install handlers that swallow SIGINT and SIGTERM,
        # leaving the process deaf to `kill` and the workers to `close`.
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        os.environ.setdefault('SDL_NO_SIGNAL_HANDLERS', '1')
        env = self._create_environment(
            self._config, seed, render_mode='rgb_array')
        try:
            return RecordEpisodes(env, self._directory)
        except BaseException:
            env.close()
            raise


@contextlib.contextmanager
def _pickle_by_value(*modules):
    """Have cloudpickle serialize the code of modules by value meanwhile.

    Modules already registered, and `__main__`, whose code cloudpickle
    always sends by value, are left as they are.

    Args:
        *modules: Imported modules.

    Yields:
        Nothing; the registration lasts for the `with` block.
    """
    registered = set(cloudpickle.list_registry_pickle_by_value())
    added = []
    try:
        for module in modules:
            if module.__name__ == '__main__' or module.__name__ in registered:
                continue
            cloudpickle.register_pickle_by_value(module)
            added.append(module)
        yield
    finally:
        for module in added:
            cloudpickle.unregister_pickle_by_value(module)


def visualize(
        logdir, outdir, checkpoint=None, num_agents=1, num_episodes=1,
        env_mode='auto', seed=None):
    """Record greedy episodes of a trained policy as videos and statistics.

    Nothing is written to `outdir`, which is not even created, unless the run
    folder, its configuration and the checkpoint load.

    Args:
        logdir: Run folder written by `agents.scripts.train`.
        outdir: Directory for the videos and `episodes.json`.
        checkpoint: Checkpoint name in the run folder or path; None restores
            the latest.
        num_agents: Number of environments that run episodes in parallel.
        num_episodes: Number of episodes to record.
        env_mode: Where to step the environments: 'auto', 'inprocess',
            'processes' or 'slices' (see `utility.define_batch_env`), or a
            boolean for 'processes' or 'inprocess'. MuJoCo environments
            always step in workers: 'auto' means 'slices' for them, and
            'inprocess' becomes 'processes'; for other environments 'auto'
            means 'inprocess'.
        seed: Base seed of the environments (environment i gets seed + i),
            or None to leave them unseeded.

    Raises:
        ValueError: When `num_agents` or `num_episodes` is not a positive
            integer.
        VisualizeError: When the run folder, its configuration or the
            checkpoint cannot be used, `outdir` cannot be written, or MuJoCo
            has no off-screen rendering backend.

    Returns:
        Dict of the statistics also written to `outdir/episodes.json`:
        `logdir`, `checkpoint`, `env`, `seed`, `mean_return`, and
        `episodes`, a list of dicts with `index`, `agent`, `return`,
        `length`, `frames` (`length + 1`) and `video` (file name in
        `outdir`), in the order the episodes ended.
    """
    import tensorflow.compat.v1 as tf
    from agents.scripts import utility
    try:
        env_mode = utility.check_env_mode(env_mode)
    except utility.ConfigError as error:
        raise VisualizeError(str(error)) from error
    num_agents = _check_count('num_agents', num_agents)
    num_episodes = _check_count('num_episodes', num_episodes)
    logdir = os.path.expanduser(logdir)
    outdir = os.path.expanduser(outdir)
    _check_outdir(outdir)
    config = _load_run_config(logdir)
    checkpoint = _find_checkpoint(logdir, checkpoint)
    gl_needed = needs_gl(config.env)
    gl_backend = None
    if gl_needed is not False:
        gl_backend = select_gl_backend(required=bool(gl_needed))
    if env_mode == 'auto':
        # Recording costs more than any stepping overhead; measure nothing.
        env_mode = 'slices' if gl_needed else 'inprocess'
    if gl_needed and env_mode == 'inprocess':
        # MuJoCo's OpenGL cannot render in this process, which holds
        # TensorFlow; see RecordedEnvironment.
        logging.getLogger('agents').info(
            'Rendering MuJoCo in worker processes, as with '
            '--env_mode=processes.')
        env_mode = 'processes'
    with config.unlocked:
        config.num_agents = num_agents
        config.logdir = logdir
    graph, simulation, saver = _define_graph(
        config, outdir, gl_backend, num_agents, env_mode, seed)
    try:
        with tf.Session(graph=graph) as sess:
            try:
                checkpoint = utility.initialize_variables(
                    sess, saver, logdir, checkpoint, resume=True)
            except ValueError as error:
                raise VisualizeError(str(error)) from error
            os.makedirs(outdir, exist_ok=True)
            episodes = _run_episodes(
                sess, simulation, outdir, num_episodes)
    finally:
        simulation.batch_env.close()
        _remove_recordings(outdir)
    returns = [episode['return'] for episode in episodes]
    statistics = dict(
        logdir=os.path.abspath(logdir),
        checkpoint=os.path.abspath(checkpoint),
        env=_describe_env(config.env),
        seed=seed,
        mean_return=float(np.mean(returns)),
        episodes=episodes)
    utility.write_atomic(
        os.path.join(outdir, STATISTICS_FILE),
        json.dumps(statistics, indent=2) + '\n')
    logging.getLogger('agents').info(
        'Mean return %.3f over %d episodes; statistics in %s.',
        statistics['mean_return'], len(episodes),
        os.path.join(outdir, STATISTICS_FILE))
    return statistics


def _check_count(name, value):
    """A positive integer argument, or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or value < 1:
        raise ValueError(
            f'{name} must be a positive integer, got {value!r}.')
    return int(value)


def _load_run_config(logdir):
    """The configuration of a run folder, or a VisualizeError."""
    from agents.scripts import utility
    if not os.path.exists(logdir):
        raise VisualizeError(f'Run folder {logdir} does not exist.')
    if not os.path.isdir(logdir):
        raise VisualizeError(f'Run folder {logdir} is not a directory.')
    try:
        config = utility.load_config(logdir)
    except utility.ConfigError as error:
        raise VisualizeError(
            f'{error} Expected a run folder written by '
            'agents.scripts.train.') from error
    for key in ('env', 'algorithm'):
        if key not in config:
            raise VisualizeError(
                f"The config.yaml of {logdir} has no '{key}'.")
    if isinstance(config.env, str):
        try:
            utility.check_env_id(config.env)
        except utility.ConfigError as error:
            raise VisualizeError(str(error)) from error
    return config


def _find_checkpoint(logdir, checkpoint):
    """Path of the checkpoint to restore, or a VisualizeError.

    Returns None for the latest, so that restoring falls back to the one
    before when the latest is unreadable.
    """
    from agents.scripts import utility
    available = utility.list_checkpoints(logdir)
    if checkpoint is None:
        if not available:
            raise VisualizeError(
                f'Run folder {logdir} has no checkpoint yet; train until the '
                'first one is written.')
        return None
    path = os.path.join(logdir, os.path.expanduser(checkpoint))
    if not os.path.exists(path + '.index'):
        names = ', '.join(os.path.basename(name) for name in available)
        raise VisualizeError(
            f"No checkpoint '{checkpoint}' in {logdir}; available: "
            f"{names or 'none'}.")
    return path


def _check_outdir(outdir):
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


def _define_graph(config, outdir, gl_backend, num_agents, env_mode, seed):
    """Build the batch of recorded environments and the greedy simulation.

    Returns:
        Tuple of the graph, the simulation's AttrDict, and the saver.
    """
    import tensorflow.compat.v1 as tf
    from agents.scripts import utility
    constructor = RecordedEnvironment(config, outdir, gl_backend)
    graph = tf.Graph()
    with graph.as_default():
        try:
            with _pickle_by_value(utility):
                batch_env = utility.define_batch_env(
                    constructor, num_agents, env_mode, seed)
        except utility.ConfigError as error:
            raise VisualizeError(str(error)) from error
        except ValueError as error:
            # From a worker, the message continues with its traceback.
            if _NO_RGB_ARRAY not in str(error):
                raise
            raise VisualizeError(
                f'The environment {_describe_env(config.env)} does not '
                "render RGB arrays; a constructor in config.env must create "
                "it with render_mode='rgb_array' for videos.") from error
        try:
            simulation = utility.define_simulation_graph(
                batch_env, config.algorithm, config)
            saver = utility.define_saver(exclude=(r'.*_temporary.*',))
        except BaseException:
            batch_env.close()
            raise
    return graph, simulation, saver


def _run_episodes(sess, simulation, outdir, num_episodes):
    """Step all environments until `num_episodes` episodes ended.

    Episodes are numbered in the order they end, environments of the same
    step in the order of the batch. Episodes beyond `num_episodes` that end
    in the last step are dropped with their videos.

    Returns:
        List of the episodes' statistics.
    """
    batch_env = simulation.batch_env
    num_agents = len(batch_env)
    lengths = np.zeros(num_agents, int)
    finished = np.zeros(num_agents, int)
    width = max(3, len(str(num_episodes - 1)))
    # The switch variables keep their initial values, all false: greedy
    # actions, no summaries, and no forced reset, which the first step needs
    # not, since every environment of a new batch starts done.
    assert not any(sess.run([
        simulation.is_training, simulation.should_log,
        simulation.force_reset]))
    episodes = []
    logger = logging.getLogger('agents')
    while len(episodes) < num_episodes:
        done, score = sess.run([simulation.done, simulation.score])
        lengths += 1
        for agent in np.flatnonzero(done):
            recording = batch_env[agent].videos[finished[agent]]
            finished[agent] += 1
            length = int(lengths[agent])
            lengths[agent] = 0
            if len(episodes) == num_episodes:
                os.remove(recording)
                continue
            index = len(episodes)
            video = f'episode-{index:0{width}d}.mp4'
            os.replace(recording, os.path.join(outdir, video))
            episode = {
                'index': index, 'agent': int(agent),
                'return': float(score[agent]), 'length': length,
                'frames': length + 1, 'video': video}
            episodes.append(episode)
            logger.info(
                'Episode %d: return %.3f, length %d, video %s.', index,
                episode['return'], length, os.path.join(outdir, video))
    return episodes


def _remove_recordings(outdir):
    """Delete recordings of episodes that were never handed out."""
    if not os.path.isdir(outdir):
        return
    for name in os.listdir(outdir):
        if name.startswith('.recording-') and name.endswith('.mp4'):
            os.remove(os.path.join(outdir, name))


def _describe_env(env):
    from agents.scripts import utility
    if isinstance(env, str):
        return env
    try:
        return utility.callable_path(env)
    except utility.ConfigError:
        return repr(env)


def _describe_frame(frame):
    if isinstance(frame, np.ndarray):
        return f'an array of shape {frame.shape}'
    return repr(frame)


def main(argv):
    """Parse flags and record the videos."""
    from agents.scripts import utility
    if len(argv) > 1:
        raise app.UsageError(
            f"Unexpected arguments: {' '.join(argv[1:])}.")
    if not FLAGS.logdir or not FLAGS.outdir:
        raise app.UsageError('Pass the run folder --logdir and --outdir.')
    utility.set_up_logging()
    try:
        env_mode = utility.env_mode_from_flags(
            FLAGS.env_mode, FLAGS.env_processes)
        visualize(
            FLAGS.logdir, FLAGS.outdir, FLAGS.checkpoint, FLAGS.num_agents,
            FLAGS.num_episodes, env_mode, FLAGS.seed)
    except (VisualizeError, utility.ConfigError) as error:
        print(f'Error: {error}', file=sys.stderr)
        sys.exit(2)


if __name__ == '__main__':
    app.run(main)
