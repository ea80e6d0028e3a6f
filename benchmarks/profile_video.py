r"""Where the time of a recorded video frame goes (agents.scripts.visualize).

For one task, measures per frame, in processes that hold what visualize's
processes hold:

  physics     env.step with random actions (the worker)
  render      env.render of an rgb_array frame, with MuJoCo's default
              visuals and with shadows, reflections or both turned off
              (`visualize --norender_effects` turns off both), each in a
              process of its own
  encode      the ffmpeg (libx264) encoder of `tools.record_episodes` at
              several presets: its CPU time, and the file size
  policy      with --logdir, the greedy step of the trained graph without
              rendering (session run minus physics), in the main process
  visualize   with --logdir, `visualize` itself end to end, with one and
              with --workers environments in parallel

CPU times (`time.process_time`, and the encoder's through getrusage) count
the work however loaded the machine is; wall times need an idle machine.
Run from the repository root:

    python benchmarks/profile_video.py --frames=200
    python benchmarks/profile_video.py \
        --logdir=~/logdir/<timestamp>-cheetah --episodes=4
"""

import multiprocessing
import os
import resource
import sys
import tempfile
import time

from absl import app
from absl import flags
import numpy as np

FLAGS = flags.FLAGS
flags.DEFINE_string('task', 'HalfCheetah-v5', 'Gymnasium id of the task.')
flags.DEFINE_integer('frames', 200, 'Frames per measurement.')
flags.DEFINE_list(
    'presets', ['medium', 'veryfast', 'ultrafast'], 'x264 presets to time.')
flags.DEFINE_string(
    'logdir', None, 'Run folder of the task for the policy and visualize '
    'rows; they are skipped without it.')
flags.DEFINE_integer(
    'episodes', 4, 'Episodes of the visualize rows (their length is the '
    "run's max_length).")


def _measure_env(task, frames, presets, effects, queue):
    """Physics, render and encoder times in a process without TensorFlow.

    Each variant of the rendering runs in a process of its own, since the
    shadow map is made with the renderer's context at the first frame.
    """
    # pylint: disable=import-outside-toplevel
    import gymnasium as gym
    import imageio_ffmpeg
    from agents.tools import gl_backend
    gl_backend.select_gl_backend(required=False)
    rows = []
    env = gym.make(task, render_mode='rgb_array')
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(frames)]
    model = env.unwrapped.model
    if 'shadows' not in effects:
        model.vis.quality.shadowsize = 0
    if 'reflections' not in effects:
        model.mat_reflectance[:] = 0
    start = time.process_time()
    for action in actions:
        env.step(action)
    physics = (time.process_time() - start) / frames
    # The first frames compile the renderer's shaders; leave them out.
    for _ in range(10):
        env.render()
    images = []
    start = time.process_time()
    for action in actions:
        env.step(action)
        images.append(np.ascontiguousarray(env.render()))
    render = (time.process_time() - start) / frames - physics
    if not presets:
        queue.put([('physics', physics, None), (
            f"render, {' and '.join(effects) or 'no shadows or reflections'}",
            render, None)])
        env.close()
        return
    height, width = images[0].shape[:2]
    for preset in presets:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, 'video.mp4')
            writer = imageio_ffmpeg.write_frames(
                path, (width, height), fps=30, codec='libx264',
                pix_fmt_out='yuv420p', macro_block_size=16,
                ffmpeg_log_level='error', output_params=['-preset', preset])
            writer.send(None)
            for image in images:
                writer.send(image)
            writer.close()
            size = os.path.getsize(path)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = (after.ru_utime + after.ru_stime - before.ru_utime
                   - before.ru_stime)
        rows.append((f'encode ({preset})', seconds / len(images),
                     size / len(images)))
    env.close()
    queue.put(rows)


def _measure_policy(logdir, frames):
    """CPU seconds per greedy step of the run's policy, physics included."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents.training import config_io
    from agents.environments import env_construction
    from agents.scripts import utility
    config = config_io.load_config(logdir)
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(
            env_construction.EnvironmentConstructor(config), 1, 'inprocess', 0)
        simulation = utility.define_simulation_graph(
            batch_env, config.algorithm, config)
        saver = utility.define_saver(exclude=(r'.*_temporary.*',))
        with tf.Session() as sess:
            utility.initialize_variables(sess, saver, logdir)
            step = sess.make_callable([simulation.done, simulation.score])
            for _ in range(10):
                step()
            start = time.process_time()
            for _ in range(frames):
                step()
            seconds = (time.process_time() - start) / frames
        batch_env.close()
    return seconds


def _measure_visualize(logdir, episodes, num_agents):
    """Wall seconds of `visualize` and its frames, in a fresh process."""
    # pylint: disable=import-outside-toplevel
    import subprocess
    with tempfile.TemporaryDirectory() as outdir:
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, '-m', 'agents.scripts.visualize',
             f'--logdir={logdir}', f'--outdir={outdir}', '--seed=0',
             f'--num_episodes={episodes}', f'--num_agents={num_agents}'],
            check=True, capture_output=True)
        seconds = time.perf_counter() - start
        import json
        with open(os.path.join(outdir, 'episodes.json'),
                  encoding='utf-8') as file_:
            statistics = json.load(file_)
    frames = sum(episode['frames'] for episode in statistics['episodes'])
    return seconds, frames


def _in_process(*args):
    """Rows of `_measure_env` run in a fresh process."""
    context = multiprocessing.get_context('spawn')
    queue = context.Queue()
    process = context.Process(target=_measure_env, args=(*args, queue))
    process.start()
    rows = queue.get()
    process.join()
    return rows


def main(argv):
    """Print the table."""
    del argv
    rows = []
    for effects in (('shadows', 'reflections'), ('reflections',),
                    ('shadows',), ()):
        part = _in_process(FLAGS.task, FLAGS.frames, (), effects)
        rows += part if not rows else part[1:]
    rows += _in_process(
        FLAGS.task, FLAGS.frames, FLAGS.presets, ('shadows', 'reflections'))
    physics = rows[0][1]
    print(f'{FLAGS.task}, {FLAGS.frames} frames, {os.cpu_count()} CPUs')
    print('| part | CPU ms per frame | KiB per frame |')
    print('| --- | ---: | ---: |')
    for name, seconds, size in rows:
        size = '' if size is None else f'{size / 1024:.1f}'
        print(f'| {name} | {1e3 * seconds:.2f} | {size} |')
    if not FLAGS.logdir:
        return
    logdir = os.path.expanduser(FLAGS.logdir)
    policy = _measure_policy(logdir, FLAGS.frames) - physics
    print(f'| policy (greedy step, main process) | {1e3 * policy:.2f} | |')
    workers = min(FLAGS.episodes, len(os.sched_getaffinity(0)))
    for num_agents in sorted({1, workers}):
        seconds, frames = _measure_visualize(
            logdir, FLAGS.episodes, num_agents)
        print(f'| visualize, {FLAGS.episodes} episodes, --num_agents='
              f'{num_agents} | wall {1e3 * seconds / frames:.1f} '
              f'({frames / seconds:.1f} frames/s) | |')


if __name__ == '__main__':
    app.run(main)
