r"""Render a video of each greedy episode of a trained policy, and
`episodes.json` (README "Videos"):

  python -m agents.scripts.visualize --logdir=~/logdir/<timestamp>-pendulum \
      --outdir=/tmp/pendulum-videos
  python -m agents.scripts.visualize --policy=/tmp/pendulum-policy \
      --outdir=/tmp/pendulum-videos

MuJoCo renders off-screen (`MUJOCO_GL=egl`, else `osmesa`) in worker
processes, since Mesa crashes beside TensorFlow.
"""

from agents.training import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags

from agents.environments import env_modes
from agents.training import config_io
from agents.training import console
from agents.training import episode_videos
from agents.training import shared_flags
from agents.training import stopping
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports

FLAGS = flags.FLAGS


shared_flags.define_run_flags(
    'restore',
    'Directory to write the videos and episodes.json to; created when '
    'missing.',
    (flags.DEFINE_integer, 'num_agents', None, 'Number of environments that '
     'run episodes in parallel; by default one per episode, at most one per '
     'CPU core.', dict(lower_bound=1)),
    (flags.DEFINE_integer, 'num_episodes', 1, 'Number of episodes to record.',
     dict(lower_bound=1)),
    (flags.DEFINE_string, 'env_mode', None, 'Where to step and render the '
     'environments: auto (the default: slices for MuJoCo or several '
     'environments, else inprocess), inprocess, processes (one worker '
     'process each) or slices (one worker per CPU core, stepping a slice of '
     'the batch each).'),
    (flags.DEFINE_boolean, 'env_processes', None, 'Shorthand for '
     '--env_mode=processes; --noenv_processes for --env_mode=inprocess.'),
    (flags.DEFINE_boolean, 'render_effects', True, 'Whether MuJoCo renders '
     'shadows and reflections; --norender_effects renders several times '
     'faster with a software renderer.'),
    (flags.DEFINE_integer, 'seed', None, 'Seed of the environments: '
     'environment i gets seed + i. Unseeded when unset.'),
    (flags.DEFINE_string, 'policy', None, 'SavedModel folder that '
     'agents.scripts.export wrote (its default --format=saved_model; not an '
     'ONNX export), to render instead of a run folder (--logdir).'))

# The names that Python code has imported from this module.
VisualizeError = episode_videos.VisualizeError
visualize = episode_videos.visualize
visualize_policy = episode_videos.visualize_policy


def main(argv):
    """Parse flags and record the videos."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}.")
    if FLAGS.policy and (FLAGS.logdir or FLAGS.member):
        raise app.UsageError(
            'Pass either --logdir (with --member for a population) or '
            '--policy, not both.')
    if not (FLAGS.logdir or FLAGS.policy) or not FLAGS.outdir:
        raise app.UsageError(
            'Pass the run folder --logdir (or an exported --policy) and '
            '--outdir.')
    console.set_up_logging()
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
            FLAGS.num_episodes, env_mode, FLAGS.seed, FLAGS.render_effects,
            FLAGS.member)
    except (VisualizeError, config_io.ConfigError) as error:
        stopping.exit_with(f'Error: {error}', 2)


if __name__ == '__main__':
    app.run(main)
