r"""Render videos of a trained policy and record its episode statistics.

Command line:

  python -m agents.scripts.visualize --logdir=~/logdir/<timestamp>-pendulum \
      --outdir=/tmp/pendulum-videos [--checkpoint=model.ckpt-100000] \
      [--num_agents=N] [--num_episodes=1] [--env_mode=auto] [--seed=0] \
      [--norender_effects]
  python -m agents.scripts.visualize --policy=/tmp/pendulum-policy \
      --outdir=/tmp/pendulum-videos [--num_episodes=1] [--seed=0]

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

`--env_mode` picks where the environments step: `inprocess`, `processes` (one
worker each, also `--env_processes`), `slices` (one worker per CPU core,
stepping a slice of the batch each), or `auto`, the default. A policy trained
on an in-graph task (`--env_mode=graph` or `auto` in training) records on
gymnasium's environment of the same dynamics, and `graph` here means `auto`.
Rendering and encoding dominate the time of a recorded step, so here `auto`
measures nothing: it means `slices` for MuJoCo tasks and for several
environments, and `inprocess` otherwise. Without `--num_agents`, the episodes
are spread over one environment per CPU core (at most one per episode), so
that their frames render and encode in parallel.

Most of a MuJoCo frame's time goes to rendering, and with a software
renderer (Mesa's llvmpipe) most of that to the shadows and reflections:
`--norender_effects` turns them off for videos several times faster.

`--policy` renders a policy exported by `agents.scripts.export` instead,
without the run folder: its `policy.json` names the environment, and one
environment runs the episodes one after the other (`visualize_policy`).

MuJoCo tasks render off-screen with `MUJOCO_GL=egl` when the variable is
unset, falling back to `osmesa`; when neither loads, the script says which
system packages to install. They always render in worker processes, as with
`--env_mode=slices` or `processes`: Mesa's OpenGL crashes in a process that
loaded TensorFlow.
"""

import functools
import json
import logging
import os
import sys

from agents.scripts import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags
import numpy as np
import tensorflow as tf2
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import config_io
from agents.scripts import env_construction
from agents.scripts import env_modes
from agents.scripts import utility
from agents.tools import gl_backend as gl_backend_lib
from agents.tools import record_episodes
from agents.tools import sliced_batch_env
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports

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
    flags.DEFINE_integer, 'num_agents', None, 'Number of environments that '
    'run episodes in parallel; by default one per episode, at most one per '
    'CPU core.', lower_bound=1)
_define_flag(
    flags.DEFINE_integer, 'num_episodes', 1, 'Number of episodes to record.',
    lower_bound=1)
_define_flag(
    flags.DEFINE_string, 'env_mode', None, 'Where to step and render the '
    'environments: auto (the default: slices for MuJoCo or several '
    'environments, else inprocess), '
    'inprocess, processes (one worker process each) or slices (one worker '
    'per CPU core, stepping a slice of the batch each).')
_define_flag(
    flags.DEFINE_boolean, 'env_processes', None, 'Shorthand for '
    '--env_mode=processes; --noenv_processes for --env_mode=inprocess.')
_define_flag(
    flags.DEFINE_boolean, 'render_effects', True, 'Whether MuJoCo renders '
    'shadows and reflections; --norender_effects renders several times '
    'faster with a software renderer.')
_define_flag(
    flags.DEFINE_integer, 'seed', None, 'Seed of the environments: '
    'environment i gets seed + i. Unseeded when unset.')

_define_flag(
    flags.DEFINE_string, 'policy', None, 'Folder of a policy exported by '
    'agents.scripts.export, to render instead of a run folder (--logdir).')

STATISTICS_FILE = 'episodes.json'
# Where agents.scripts.export describes an exported policy.
POLICY_METADATA = os.path.join('assets.extra', 'policy.json')


class VisualizeError(Exception):
    """A run folder, flag or system setup with which no video can be made."""


def visualize(
        logdir, outdir, checkpoint=None, num_agents=None, num_episodes=1,
        env_mode='auto', seed=None, render_effects=True):
    """Record greedy episodes of a trained policy as videos and statistics.

    Nothing is written to `outdir`, which is not even created, unless the run
    folder, its configuration and the checkpoint load.

    Args:
        logdir: Run folder written by `agents.scripts.train`.
        outdir: Directory for the videos and `episodes.json`.
        checkpoint: Checkpoint name in the run folder or path; None restores
            the latest.
        num_agents: Number of environments that run episodes in parallel;
            None uses one per episode, at most one per CPU core.
        num_episodes: Number of episodes to record.
        env_mode: Where to step the environments: 'auto', 'inprocess',
            'processes' or 'slices' (see `env_modes.MODES`), or a
            boolean for 'processes' or 'inprocess'. 'auto' means 'slices',
            which renders and encodes in one worker per core, for MuJoCo
            environments and for several environments, and 'inprocess'
            otherwise. MuJoCo environments always step in workers:
            'inprocess' becomes 'processes' for them. 'graph' means 'auto':
            a policy trained on an in-graph task (`--env_mode=graph`)
            records on gymnasium's environment of the same dynamics.
        seed: Base seed of the environments (environment i gets seed + i),
            or None to leave them unseeded.
        render_effects: Whether MuJoCo renders shadows and reflections,
            which take most of the time of a software renderer.

    Raises:
        ValueError: When `num_agents` or `num_episodes` is not a positive
            integer.
        VisualizeError: When the run folder, its configuration or the
            checkpoint cannot be used, `outdir` cannot be written, or MuJoCo
            has no off-screen rendering backend.

    Returns:
        Dict of the statistics also written to `outdir/episodes.json`:
        `logdir`, `checkpoint`, `env`, `seed`, `num_agents`, `env_mode`,
        `render_effects`, `mean_return`, and
        `episodes`, a list of dicts with `index`, `agent`, `return`,
        `length`, `frames` (`length + 1`) and `video` (file name in
        `outdir`), in the order the episodes ended.
    """
    try:
        env_mode = env_modes.check_env_mode(env_mode)
    except config_io.ConfigError as error:
        raise VisualizeError(str(error)) from error
    num_episodes = _check_count('num_episodes', num_episodes)
    if num_agents is None:
        # Rendering and encoding take most of the time; spread the episodes
        # over the cores.
        num_agents = min(num_episodes, sliced_batch_env.available_cpus())
    num_agents = _check_count('num_agents', num_agents)
    logdir = os.path.expanduser(logdir)
    outdir = os.path.expanduser(outdir)
    _check_outdir(outdir)
    config = _load_run_config(logdir)
    checkpoint = _find_checkpoint(logdir, checkpoint)
    gl_needed = gl_backend_lib.needs_gl(config.env)
    gl_backend = None
    if gl_needed is not False:
        try:
            gl_backend = gl_backend_lib.select_gl_backend(
                required=bool(gl_needed))
        except gl_backend_lib.GLBackendError as error:
            raise VisualizeError(str(error)) from error
    if env_mode == env_modes.GRAPH:
        # The in-graph tasks render nothing; gymnasium's environment of the
        # same dynamics records the policy trained on them.
        env_mode = 'auto'
    if env_mode == 'auto':
        # Recording costs more than any stepping overhead; measure nothing.
        env_mode = 'slices' if gl_needed or num_agents > 1 else 'inprocess'
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
        config, outdir, gl_backend, num_agents, env_mode, seed,
        render_effects)
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
        num_agents=num_agents,
        env_mode=env_mode,
        render_effects=bool(render_effects),
        mean_return=float(np.mean(returns)),
        episodes=episodes)
    config_io.write_atomic(
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
    return config


def _find_checkpoint(logdir, checkpoint):
    """Path of the checkpoint to restore, or a VisualizeError.

    Returns None for the latest, so that restoring falls back to the one
    before when the latest is unreadable.
    """
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


def _define_graph(
        config, outdir, gl_backend, num_agents, env_mode, seed,
        render_effects=True):
    """Build the batch of recorded environments and the greedy simulation.

    Returns:
        Tuple of the graph, the simulation's AttrDict, and the saver.
    """
    # The constructor reaches worker processes by reference to modules that
    # do not import TensorFlow; see `record_episodes`.
    # Workers that render in parallel share the cores: Mesa's software
    # renderer would otherwise start a thread per core in each.
    workers = num_agents if env_mode != 'inprocess' else 1
    constructor = record_episodes.RecordedEnvironment(
        env_construction.environment_constructor(config), outdir, gl_backend,
        threads=max(1, sliced_batch_env.available_cpus() // workers),
        effects=render_effects)
    graph = tf.Graph()
    with graph.as_default():
        try:
            batch_env = utility.define_batch_env(
                constructor, num_agents, env_mode, seed)
        except config_io.ConfigError as error:
            raise VisualizeError(str(error)) from error
        except ValueError as error:
            # From a worker, the message continues with its traceback.
            if record_episodes.NO_RGB_ARRAY not in str(error):
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
    if isinstance(env, str):
        return env
    try:
        return config_io.callable_path(env)
    except config_io.ConfigError:
        return repr(env)


def visualize_policy(
        policy, outdir, num_episodes=1, seed=None, render_effects=True):
    """Record greedy episodes of a policy exported by `agents.scripts.export`.

    One environment, built from the export's `policy.json` with the
    episode limit of training, runs the episodes one after the other: in
    this process, or for MuJoCo in a worker process, where it renders.
    Episode i is seeded as `visualize` seeds environment i: the environment
    resets with `seed + i`, then the episode begins at the next reset.

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
        Dict of the statistics also written to `outdir/episodes.json`, as
        `visualize` returns them, with `policy` in place of `logdir`.
    """
    num_episodes = _check_count('num_episodes', num_episodes)
    policy = os.path.abspath(os.path.expanduser(policy))
    outdir = os.path.expanduser(outdir)
    _check_outdir(outdir)
    metadata = _load_policy_metadata(policy)
    env = metadata['env']
    try:
        if metadata.get('env_constructor'):
            env = config_io.import_callable(env)
        else:
            env_construction.check_env_id(env)
    except config_io.ConfigError as error:
        raise VisualizeError(str(error)) from error
    env_config = tools.AttrDict(
        env=env, max_length=metadata.get('max_length'),
        normalize_ranges=False)
    gl_needed = gl_backend_lib.needs_gl(env)
    gl_backend = None
    if gl_needed is not False:
        try:
            gl_backend = gl_backend_lib.select_gl_backend(
                required=bool(gl_needed))
        except gl_backend_lib.GLBackendError as error:
            raise VisualizeError(str(error)) from error
    model = tf2.saved_model.load(policy)
    env_constructor = env_construction.environment_constructor(env_config)
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
        episodes = [
            _policy_episode(model, environment, outdir, index, seed,
                            max(3, len(str(num_episodes - 1))))
            for index in range(num_episodes)]
    finally:
        environment.close()
        _remove_recordings(outdir)
    statistics = dict(
        policy=policy, checkpoint=metadata.get('checkpoint'),
        env=metadata['env'], seed=seed, num_agents=1,
        env_mode='processes' if gl_needed else 'inprocess',
        render_effects=bool(render_effects),
        mean_return=float(np.mean([episode['return']
                                   for episode in episodes])),
        episodes=episodes)
    config_io.write_atomic(
        os.path.join(outdir, STATISTICS_FILE),
        json.dumps(statistics, indent=2) + '\n')
    logging.getLogger('agents').info(
        'Mean return %.3f over %d episodes; statistics in %s.',
        statistics['mean_return'], len(episodes),
        os.path.join(outdir, STATISTICS_FILE))
    return statistics


def _load_policy_metadata(policy):
    """The `policy.json` of an exported SavedModel, or a VisualizeError."""
    path = os.path.join(policy, POLICY_METADATA)
    if not os.path.isdir(policy):
        raise VisualizeError(f'--policy {policy} is not a directory.')
    if not os.path.exists(path) or not os.path.exists(
            os.path.join(policy, 'saved_model.pb')):
        raise VisualizeError(
            f'--policy {policy} holds no saved_model.pb and '
            f'{POLICY_METADATA}; expected a folder written by '
            'agents.scripts.export.')
    with open(path, encoding='utf-8') as file_:
        return json.load(file_)


def _policy_episode(model, environment, outdir, index, seed, width):
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
    video = f'episode-{index:0{width}d}.mp4'
    os.replace(environment.videos[-1], os.path.join(outdir, video))
    logging.getLogger('agents').info(
        'Episode %d: return %.3f, length %d, video %s.', index, total,
        length, os.path.join(outdir, video))
    return {'index': index, 'agent': 0, 'return': total, 'length': length,
            'frames': length + 1, 'video': video}


def main(argv):
    """Parse flags and record the videos."""
    if len(argv) > 1:
        raise app.UsageError(
            f"Unexpected arguments: {' '.join(argv[1:])}.")
    if FLAGS.policy and FLAGS.logdir:
        raise app.UsageError('Pass either --logdir or --policy, not both.')
    if not (FLAGS.logdir or FLAGS.policy) or not FLAGS.outdir:
        raise app.UsageError(
            'Pass the run folder --logdir (or an exported --policy) and '
            '--outdir.')
    utility.set_up_logging()
    try:
        if FLAGS.policy:
            visualize_policy(
                FLAGS.policy, FLAGS.outdir, FLAGS.num_episodes, FLAGS.seed,
                FLAGS.render_effects)
            return
        env_mode = env_modes.env_mode_from_flags(
            FLAGS.env_mode, FLAGS.env_processes)
        visualize(
            FLAGS.logdir, FLAGS.outdir, FLAGS.checkpoint, FLAGS.num_agents,
            FLAGS.num_episodes, env_mode, FLAGS.seed, FLAGS.render_effects)
    except (VisualizeError, config_io.ConfigError) as error:
        print(f'Error: {error}', file=sys.stderr)
        sys.exit(2)


if __name__ == '__main__':
    app.run(main)
