"""Videos of a policy exported by `agents.scripts.export`, without its run
(`python -m agents.scripts.visualize --policy=DIR`)."""

import functools
import json
import os

import numpy as np
import tensorflow as tf2

from agents import tools
from agents.training import config_io
from agents.environments import env_construction
from agents.training import episode_videos
from agents.training import policy_export
from agents.tools import record_episodes
from agents.tools import sliced_batch_env

# Where agents.scripts.export describes an exported policy.
POLICY_METADATA = os.path.join('assets.extra', 'policy.json')


def visualize_policy(
        policy, outdir, num_episodes=1, seed=None, render_effects=True):
    """Record greedy episodes of a policy exported by `agents.scripts.export`.

    One environment (of `policy.json`, in a worker process for MuJoCo)
    runs the episodes in turn; episode i is seeded as `visualize` seeds
    environment i (a reset with `seed + i`, then the episode's reset).

    Args:
      policy: Folder of the exported SavedModel.
      outdir: Directory for the videos and `episodes.json`.
      num_episodes: Number of episodes to record.
      seed: Base seed of the episodes, or None to leave them unseeded.
      render_effects: Whether MuJoCo renders shadows and reflections.

    Raises:
      ValueError: When `num_episodes` is not a positive integer.
      VisualizeError: When the folder holds no exported SavedModel, the
          environment cannot be built, or MuJoCo cannot render.

    Returns:
      Dict of the statistics also written to `outdir/episodes.json`.
    """
    num_episodes = episode_videos.check_count('num_episodes', num_episodes)
    policy = os.path.abspath(os.path.expanduser(policy))
    outdir = os.path.expanduser(outdir)
    episode_videos.check_outdir(outdir)
    metadata = _load_policy_metadata(policy)
    env = metadata['env']
    try:
        if metadata.get('env_constructor'):
            env = config_io.import_callable(env)
        else:
            env_construction.check_env_id(env)
    except config_io.ConfigError as error:
        raise episode_videos.VisualizeError(str(error)) from error
    env_config = tools.AttrDict(
        env=env, max_length=metadata.get('max_length'),
        normalize_ranges=False)
    gl_needed, gl_backend = episode_videos.select_gl_backend(env)
    model = tf2.saved_model.load(policy)
    env_constructor = env_construction.EnvironmentConstructor(env_config)
    constructor = functools.partial(record_episodes.RecordedEnvironment(
        env_constructor, outdir, gl_backend,
        threads=sliced_batch_env.available_cpus(), effects=render_effects),
        None)
    if gl_needed:
        # MuJoCo's OpenGL cannot render in a process holding TensorFlow.
        environment = tools.wrappers.ExternalProcess(
            constructor, main_module=False)
    else:
        environment = constructor()
    try:
        os.makedirs(outdir, exist_ok=True)
        progress = episode_videos.Progress(num_episodes)
        episodes = [
            _policy_episode(model, environment, outdir, index, seed,
                            num_episodes, progress)
            for index in range(num_episodes)]
    finally:
        environment.close()
        episode_videos.remove_recordings(outdir)
    return episode_videos.write_statistics(outdir, dict(
        policy=policy, checkpoint=metadata.get('checkpoint'),
        env=metadata['env'], seed=seed, num_agents=1,
        env_mode='processes' if gl_needed else 'inprocess',
        render_effects=bool(render_effects)), episodes)


def _load_policy_metadata(policy):
    """The `policy.json` of an exported SavedModel, or a VisualizeError."""
    path = os.path.join(policy, POLICY_METADATA)
    if not os.path.isdir(policy):
        raise episode_videos.VisualizeError(
            f'--policy {policy} is not a directory.')
    if os.path.exists(os.path.join(policy, policy_export.ONNX_FILE)):
        raise episode_videos.VisualizeError(
            f'--policy {policy} holds an ONNX export '
            f'({policy_export.ONNX_FILE}), which visualize does not run; '
            'expected the SavedModel folder of agents.scripts.export '
            '(its default --format=saved_model).')
    if not os.path.exists(path) or not os.path.exists(
            os.path.join(policy, 'saved_model.pb')):
        raise episode_videos.VisualizeError(
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
    state = model.initial_state(1) if hasattr(model, 'initial_state') \
        else None
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
    return episode_videos.keep_episode(
        environment.videos[-1], outdir, index, num_episodes, 0, total,
        length)
