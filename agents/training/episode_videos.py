"""Videos and statistics of a policy's episodes, of its run folder or its
export (`agents.scripts.visualize`). Frames are rendered and encoded in the
process that steps the environment: they never cross a pipe."""

import functools
import json
import logging
import os
import time

import numpy as np
import tensorflow as tf

from agents import tools
from agents.environments import env_construction
from agents.environments import env_modes
from agents.tools import atomic_file
from agents.tools import episode_wrappers
from agents.tools import gl_backend as gl_backend_lib
from agents.tools import record_episodes
from agents.tools import sliced_batch_env
from agents.training import checkpoints
from agents.training import config_io
from agents.training import member_checkpoint
from agents.training import policy_export
from agents.training import policy_module
from agents.training import simulation as simulation_lib

STATISTICS_FILE = 'episodes.json'
# Where agents.scripts.export describes an exported policy.
POLICY_METADATA = os.path.join(
    policy_export.METADATA_FOLDER, policy_export.METADATA_FILE)
# Seconds between the progress lines of a recording; a MuJoCo episode
# takes minutes on a CPU.
PROGRESS_SECONDS = 10.0


class VisualizeError(Exception):
    """A run folder, flag or system setup with which no video can be made."""


def visualize(
        logdir, outdir, checkpoint=None, num_agents=None, num_episodes=1,
        env_mode='auto', seed=None, render_effects=True, member=None):
    """Record greedy episodes of a run folder's policy as videos and the
    statistics of `outdir/episodes.json` (returned; episodes in the order
    they ended). Nothing is written unless the run and its checkpoint load:
    a VisualizeError where the run, `outdir` or MuJoCo's rendering fails, a
    ValueError where a count is not a positive integer.

    Args:
      checkpoint: Name in the run folder or path; None: the latest.
      num_agents: Environments that run episodes in parallel; None: one per
          episode, at most one per CPU core.
      env_mode: 'auto', 'inprocess', 'processes' or 'slices', or a boolean.
      seed: Base seed: environment i gets seed + i; None: unseeded.
      render_effects: Whether MuJoCo renders shadows and reflections.
      member: The member of a population's run folder, 'seed-S' or
          'VARIANT/seed-S'; None: the one of the best last evaluation.
    """
    try:
        env_mode = env_modes.check_env_mode(env_mode)
    except config_io.ConfigError as error:
        raise VisualizeError(str(error)) from error
    num_episodes = episode_wrappers.checked_integer(
        num_episodes, 'num_episodes', 'positive')
    if num_agents is None:
        # Rendering and encoding take most of the time; spread the episodes
        # over the cores.
        num_agents = min(num_episodes, sliced_batch_env.available_cpus())
    num_agents = episode_wrappers.checked_integer(
        num_agents, 'num_agents', 'positive')
    logdir, outdir = os.path.expanduser(logdir), os.path.expanduser(outdir)
    check_outdir(outdir)
    config, path = policy_module.load_run(logdir, checkpoint, VisualizeError)
    index, member = member_checkpoint.find_member(path, member, VisualizeError)
    restore = None if index is None else (
        lambda sess, saver, prefix: member_checkpoint.restore_member(
            sess, saver.required + saver.optional, prefix, index))
    gl_needed, gl_backend = _select_gl_backend(config.env)
    env_mode = _recording_mode(env_mode, gl_needed, num_agents)
    with config.unlocked:
        config.num_agents = num_agents
        config.logdir = logdir
    graph, simulation, saver = _define_graph(
        config, _recorded(config, outdir, gl_backend, render_effects,
                          num_agents if env_mode != 'inprocess' else 1),
        env_mode, seed)
    try:
        with tf.compat.v1.Session(graph=graph) as sess:
            try:
                # Without --checkpoint, an unreadable latest checkpoint
                # falls back to the one before.
                path = checkpoints.initialize_variables(
                    sess, saver, logdir, checkpoint and path, resume=True,
                    restore=restore)
            except ValueError as error:
                raise VisualizeError(str(error)) from error
            os.makedirs(outdir, exist_ok=True)
            episodes = _run_episodes(sess, simulation, outdir, num_episodes)
    finally:
        simulation.batch_env.close()
        remove_recordings(outdir)
    return write_statistics(outdir, dict(
        logdir=os.path.abspath(logdir), checkpoint=os.path.abspath(path),
        env=policy_module.describe(config.env), member=member, seed=seed,
        num_agents=num_agents, env_mode=env_mode,
        render_effects=bool(render_effects)), episodes)


def visualize_policy(
        policy, outdir, num_episodes=1, seed=None, render_effects=True):
    """Record greedy episodes of the SavedModel folder `policy` that
    `agents.scripts.export` wrote, as `visualize` does (returned: the
    statistics), in turn in one environment, episode i seeded as `visualize`
    seeds environment i; a ValueError or VisualizeError as `visualize`'s."""
    num_episodes = episode_wrappers.checked_integer(
        num_episodes, 'num_episodes', 'positive')
    policy = os.path.abspath(os.path.expanduser(policy))
    outdir = os.path.expanduser(outdir)
    check_outdir(outdir)
    metadata = _load_policy_metadata(policy)
    env = metadata['env']
    try:
        if metadata.get('env_constructor'):
            env = config_io.import_callable(env)
        else:
            env_construction.check_env_id(env)
    except config_io.ConfigError as error:
        raise VisualizeError(str(error)) from error
    gl_needed, gl_backend = _select_gl_backend(env)
    model = tf.saved_model.load(policy)
    # The model maps raw observations: no RangeNormalize.
    env_config = tools.AttrDict(
        env=env, max_length=metadata.get('max_length'),
        normalize_ranges=False)
    constructor = functools.partial(
        _recorded(env_config, outdir, gl_backend, render_effects), None)
    # MuJoCo's OpenGL cannot render in a process holding TensorFlow.
    environment = tools.wrappers.ExternalProcess(
        constructor, main_module=False) if gl_needed else constructor()
    try:
        os.makedirs(outdir, exist_ok=True)
        progress = Progress(num_episodes)
        episodes = [
            _policy_episode(model, environment, outdir, index, seed,
                            num_episodes, progress)
            for index in range(num_episodes)]
    finally:
        environment.close()
        remove_recordings(outdir)
    return write_statistics(outdir, dict(
        policy=policy, checkpoint=metadata.get('checkpoint'),
        env=metadata['env'], seed=seed, num_agents=1,
        env_mode='processes' if gl_needed else 'inprocess',
        render_effects=bool(render_effects)), episodes)


def check_outdir(outdir):
    """A VisualizeError unless `outdir` is or can become a writable folder."""
    if os.path.exists(outdir) and not os.path.isdir(outdir):
        raise VisualizeError(f'--outdir {outdir} is not a directory.')
    if os.path.exists(outdir) and not os.access(outdir, os.W_OK | os.X_OK):
        raise VisualizeError(f'--outdir {outdir} is not writable.')
    parent = os.path.abspath(outdir)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise VisualizeError(
            f'Cannot create --outdir {outdir}: {parent} is not a writable '
            'directory.')


class Progress:
    """Logs a line every `PROGRESS_SECONDS` while `num_episodes` record."""

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
    """Move the video `recording` into `outdir` as the episode `index` (of
    `num_episodes`, in the order they ended), log it, and return the dict of
    `index`, `agent` (its environment), `return`, `length`, `frames` and
    `video`."""
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
    """Write and log `episodes.json`: `description`'s keys, `mean_return`
    and `episodes` (`keep_episode`'s dicts); return its dict."""
    statistics = dict(
        description,
        mean_return=float(np.mean([episode['return'] for episode in episodes])),
        episodes=episodes)
    path = os.path.join(outdir, STATISTICS_FILE)
    atomic_file.write_atomic(path, json.dumps(statistics, indent=2) + '\n')
    logging.getLogger('agents').info(
        'Mean return %.3f over %d episodes; statistics in %s.',
        statistics['mean_return'], len(episodes), path)
    return statistics


def _select_gl_backend(env):
    """`needs_gl(env)` and the OpenGL backend (None: none) that loads."""
    gl_needed = gl_backend_lib.needs_gl(env)
    gl_backend = None
    if gl_needed is not False:
        try:
            gl_backend = gl_backend_lib.select_gl_backend(
                required=bool(gl_needed))
        except gl_backend_lib.GLBackendError as error:
            raise VisualizeError(str(error)) from error
    return gl_needed, gl_backend


def _recorded(config, outdir, gl_backend, render_effects, workers=1):
    """Constructor of recorded environments that render in `workers`."""
    # Workers share the cores: Mesa would start a thread per core in each.
    return record_episodes.RecordedEnvironment(
        env_construction.EnvironmentConstructor(config), outdir, gl_backend,
        threads=max(1, sliced_batch_env.available_cpus() // workers),
        effects=render_effects)


def _recording_mode(env_mode, gl_needed, num_agents):
    """The env mode to record in; MuJoCo always steps in workers."""
    # In-graph tasks render nothing: their runs record on gymnasium.
    if env_mode == 'auto' or env_modes.in_graph_mode(env_mode):
        env_mode = 'slices' if gl_needed or num_agents > 1 else 'inprocess'
    if gl_needed and env_mode == 'inprocess':
        logging.getLogger('agents').info(
            'Rendering MuJoCo in worker processes, as with '
            '--env_mode=processes.')
        env_mode = 'processes'
    return env_mode


def _define_graph(config, constructor, env_mode, seed):
    """The graph, greedy simulation and saver over recorded environments."""
    graph = tf.Graph()
    with graph.as_default():
        try:
            with tf.compat.v1.variable_scope('environments'):
                batch_env = tools.InGraphBatchEnv(env_modes.create_batch_env(
                    constructor, config.num_agents, env_mode, seed))
        except config_io.ConfigError as error:
            raise VisualizeError(str(error)) from error
        except record_episodes.RenderModeError as error:
            raise VisualizeError(
                'The environment '
                f'{policy_module.describe(config.env)} does not '
                "render RGB arrays; a constructor in config.env must create "
                "it with render_mode='rgb_array' for videos.") from error
        try:
            simulation = simulation_lib.define_simulation_graph(
                batch_env, config.algorithm, config)
            saver = checkpoints.define_saver(exclude=(r'.*_temporary.*',))
        except BaseException:
            batch_env.close()
            raise
    return graph, simulation, saver


def _run_episodes(sess, simulation, outdir, num_episodes):
    """The first `num_episodes` episodes to end; the surplus leave no video."""
    batch_env = simulation.batch_env
    num_agents = len(batch_env)
    lengths = np.zeros(num_agents, int)
    finished = np.zeros(num_agents, int)
    # The switch variables keep their initial values, all false: greedy
    # actions, no summaries, and no forced reset, which the first step needs
    # not, since every environment of a new batch starts done.
    episodes = []
    progress = Progress(num_episodes)
    while len(episodes) < num_episodes:
        done, score = sess.run([simulation.done, simulation.score])
        lengths += 1
        progress.step(len(episodes), num_agents)
        for agent in np.flatnonzero(done):
            recording = batch_env[agent].videos[finished[agent]]
            finished[agent] += 1
            length = int(lengths[agent])
            lengths[agent] = 0
            if len(episodes) == num_episodes:
                os.remove(recording)
                continue
            episodes.append(keep_episode(
                recording, outdir, len(episodes), num_episodes, agent,
                score[agent], length))
    return episodes


def _load_policy_metadata(policy):
    """The `policy.json` of an exported SavedModel, or a VisualizeError."""
    if not os.path.isdir(policy):
        raise VisualizeError(f'--policy {policy} is not a directory.')
    if os.path.exists(os.path.join(policy, policy_export.ONNX_FILE)):
        raise VisualizeError(
            f'--policy {policy} holds an ONNX export '
            f'({policy_export.ONNX_FILE}), which visualize does not run; '
            'expected the SavedModel folder of agents.scripts.export '
            '(its default --format=saved_model).')
    path = os.path.join(policy, POLICY_METADATA)
    if not os.path.exists(path) or not os.path.exists(
            os.path.join(policy, 'saved_model.pb')):
        raise VisualizeError(
            f'--policy {policy} holds no saved_model.pb and '
            f'{POLICY_METADATA}; expected a folder written by '
            'agents.scripts.export.')
    with open(path, encoding='utf-8') as file_:
        return json.load(file_)


def _policy_episode(
        model, environment, outdir, index, seed, num_episodes, progress):
    """Run and record one episode of an exported policy."""
    if seed is not None:
        environment.reset(seed=int(seed) + index)
    observ, _ = environment.reset()
    state = model.initial_state(1) if hasattr(model, 'initial_state') else None
    total, length, done = 0.0, 0, False
    while not done:
        observ = np.asarray(observ, np.float32)[None]
        if state is None:
            action = model.action(observ)
        else:
            action, state = model.action(observ, state)
        observ, reward, terminated, truncated, _ = environment.step(
            action.numpy()[0])
        total += float(reward)
        length += 1
        done = terminated or truncated
        progress.step(index)
    return keep_episode(
        environment.videos[-1], outdir, index, num_episodes, 0, total,
        length)
