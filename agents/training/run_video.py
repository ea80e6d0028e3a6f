"""Videos and episode statistics of the greedy policy of a run folder.

`agents.scripts.visualize` is the command; README "Videos" says what it
writes. Frames are rendered and encoded in the process that steps the
environment, so with worker processes they never cross a pipe.
"""

import logging
import os

import numpy as np
import tensorflow.compat.v1 as tf

from agents import tools
from agents.environments import env_construction
from agents.environments import env_modes
from agents.tools import record_episodes
from agents.tools import sliced_batch_env
from agents.training import checkpoints
from agents.training import config_io
from agents.training import config_spec
from agents.training import episode_videos
from agents.training import policy_module
from agents.training import simulation as simulation_lib

VisualizeError = episode_videos.VisualizeError


def visualize(
        logdir, outdir, checkpoint=None, num_agents=None, num_episodes=1,
        env_mode='auto', seed=None, render_effects=True):
    """Record greedy episodes of a trained policy as videos and statistics.

    Nothing is written to `outdir` unless the run and its checkpoint load.

    Args:
      logdir: Run folder written by `agents.scripts.train`.
      outdir: Directory for the videos and `episodes.json`.
      checkpoint: Checkpoint name in the run folder or path; None restores
          the latest.
      num_agents: Number of environments that run episodes in parallel;
          None uses one per episode, at most one per CPU core.
      num_episodes: Number of episodes to record.
      env_mode: 'auto', 'inprocess', 'processes' or 'slices', or a boolean
          for 'processes' or 'inprocess' (see `_recording_mode`).
      seed: Base seed of the environments (environment i gets seed + i),
          or None to leave them unseeded.
      render_effects: Whether MuJoCo renders shadows and reflections.

    Raises:
      ValueError: When `num_agents` or `num_episodes` is not a positive
          integer.
      VisualizeError: When the run folder, its configuration, the
          checkpoint or `outdir` cannot be used, or MuJoCo cannot render.

    Returns:
      Dict of the statistics also written to `outdir/episodes.json`
      (`episode_videos.write_statistics`), episodes in the order they ended.
    """
    try:
        env_mode = env_modes.check_env_mode(env_mode)
    except config_io.ConfigError as error:
        raise VisualizeError(str(error)) from error
    num_episodes = episode_videos.check_count('num_episodes', num_episodes)
    if num_agents is None:
        # Rendering and encoding take most of the time; spread the episodes
        # over the cores.
        num_agents = min(num_episodes, sliced_batch_env.available_cpus())
    num_agents = episode_videos.check_count('num_agents', num_agents)
    logdir = os.path.expanduser(logdir)
    outdir = os.path.expanduser(outdir)
    episode_videos.check_outdir(outdir)
    config = _load_run_config(logdir)
    checkpoint = _find_checkpoint(logdir, checkpoint)
    gl_needed, gl_backend = episode_videos.select_gl_backend(config.env)
    env_mode = _recording_mode(env_mode, gl_needed, num_agents)
    with config.unlocked:
        config.num_agents = num_agents
        config.logdir = logdir
    graph, simulation, saver = _define_graph(
        config, outdir, gl_backend, num_agents, env_mode, seed,
        render_effects)
    try:
        with tf.Session(graph=graph) as sess:
            try:
                checkpoint = checkpoints.initialize_variables(
                    sess, saver, logdir, checkpoint, resume=True)
            except ValueError as error:
                raise VisualizeError(str(error)) from error
            os.makedirs(outdir, exist_ok=True)
            episodes = _run_episodes(
                sess, simulation, outdir, num_episodes)
    finally:
        simulation.batch_env.close()
        episode_videos.remove_recordings(outdir)
    return episode_videos.write_statistics(outdir, dict(
        logdir=os.path.abspath(logdir),
        checkpoint=os.path.abspath(checkpoint),
        env=policy_module.describe_env(config.env),
        seed=seed,
        num_agents=num_agents,
        env_mode=env_mode,
        render_effects=bool(render_effects)), episodes)


def _recording_mode(env_mode, gl_needed, num_agents):
    """The env mode to record in.

    'auto' measures nothing, since recording costs more than any stepping
    overhead: 'slices' for MuJoCo and for several environments, else
    'inprocess'. 'graph' means 'auto': the in-graph tasks render nothing, so
    gymnasium's environment of the same dynamics records their policy.
    MuJoCo always steps in workers: 'inprocess' becomes 'processes'.
    """
    if env_modes.in_graph_mode(env_mode):
        env_mode = 'auto'
    if env_mode == 'auto':
        env_mode = 'slices' if gl_needed or num_agents > 1 else 'inprocess'
    if gl_needed and env_mode == 'inprocess':
        # MuJoCo's OpenGL cannot render in this process, which holds
        # TensorFlow; see RecordedEnvironment.
        logging.getLogger('agents').info(
            'Rendering MuJoCo in worker processes, as with '
            '--env_mode=processes.')
        env_mode = 'processes'
    return env_mode


def _load_run_config(logdir):
    """The configuration of a run folder, or a VisualizeError."""
    if not os.path.exists(logdir):
        raise VisualizeError(f'Run folder {logdir} does not exist.')
    if not os.path.isdir(logdir):
        raise VisualizeError(f'Run folder {logdir} is not a directory.')
    try:
        config = config_io.load_config(logdir)
    except config_io.ConfigError as error:
        raise VisualizeError(
            f'{error} Expected a run folder written by '
            'agents.scripts.train.') from error
    for key in ('env', 'algorithm'):
        if key not in config:
            raise VisualizeError(
                f"The config.yaml of {logdir} has no '{key}'.")
    if isinstance(config.env, str):
        try:
            env_construction.check_env_id(config.env)
        except config_io.ConfigError as error:
            raise VisualizeError(str(error)) from error
    # An older run's config.yaml takes today's defaults for the keys it
    # lacks, as in training.
    return config_spec.with_defaults(config)


def _find_checkpoint(logdir, checkpoint):
    """Path of the checkpoint to restore, or a VisualizeError; None for the
    latest, so that restoring falls back to the one before if need be."""
    available = checkpoints.list_checkpoints(logdir)
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


def _define_graph(
        config, outdir, gl_backend, num_agents, env_mode, seed,
        render_effects=True):
    """The graph, greedy simulation and saver over recorded environments."""
    # The constructor reaches worker processes by reference to modules that
    # do not import TensorFlow; see `record_episodes`.
    # Workers that render in parallel share the cores: Mesa's software
    # renderer would otherwise start a thread per core in each.
    workers = num_agents if env_mode != 'inprocess' else 1
    constructor = record_episodes.RecordedEnvironment(
        env_construction.EnvironmentConstructor(config), outdir, gl_backend,
        threads=max(1, sliced_batch_env.available_cpus() // workers),
        effects=render_effects)
    graph = tf.Graph()
    with graph.as_default():
        try:
            with tf.variable_scope('environments'):
                batch_env = tools.InGraphBatchEnv(env_modes.create_batch_env(
                    constructor, num_agents, env_mode, seed))
        except config_io.ConfigError as error:
            raise VisualizeError(str(error)) from error
        except record_episodes.RenderModeError as error:
            raise VisualizeError(
                'The environment '
                f'{policy_module.describe_env(config.env)} does not '
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
    """Step all environments until `num_episodes` episodes ended; return
    their statistics in the order they ended (by index within a step).

    Episodes beyond `num_episodes` that end in the last step are dropped
    with their videos.
    """
    batch_env = simulation.batch_env
    num_agents = len(batch_env)
    lengths = np.zeros(num_agents, int)
    finished = np.zeros(num_agents, int)
    # The switch variables keep their initial values, all false: greedy
    # actions, no summaries, and no forced reset, which the first step needs
    # not, since every environment of a new batch starts done.
    assert not any(sess.run([
        simulation.is_training, simulation.should_log,
        simulation.force_reset]))
    episodes = []
    progress = episode_videos.Progress(num_episodes)
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
            episodes.append(episode_videos.keep_episode(
                recording, outdir, len(episodes), num_episodes, agent,
                score[agent], length))
    return episodes
