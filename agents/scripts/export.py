r"""Export the policy of a training run as a TensorFlow 2 SavedModel:

  python -m agents.scripts.export --logdir=~/logdir/<timestamp>-pendulum \
      --outdir=/tmp/pendulum-policy

It maps raw observations to the environment's actions and loads with
TensorFlow alone: `tf.saved_model.load(DIR).action(observ)` (docs/export.md).
"""

import logging
import os

from agents.training import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags
from absl import logging as absl_logging

from agents.training import policy_export
from agents.training import shared_flags
from agents.training import stopping
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports

FLAGS = flags.FLAGS


shared_flags.define_run_flags(
    'export',
    'Folder to write the model to; it must be missing or empty unless '
    '--overwrite.',
    (flags.DEFINE_boolean, 'stochastic', False, 'Sample actions from the '
     'policy (with an optional seed input) instead of taking its mode.'),
    (flags.DEFINE_boolean, 'overwrite', False,
     'Replace a non-empty --outdir.'))
flags.DEFINE_enum(
    'format', 'saved_model', list(policy_export.FORMATS), 'saved_model, or '
    "onnx (model.onnx through tf2onnx; pip install -e '.[export]').")


def main(argv):
    """Parse flags and export the policy."""
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {' '.join(argv[1:])}.")
    if not FLAGS.logdir or not FLAGS.outdir:
        raise app.UsageError('Pass the run folder --logdir and --outdir.')
    # TensorFlow's notes on saving concern no user of the script.
    absl_logging.set_verbosity(absl_logging.WARNING)
    logging.getLogger('tensorflow').setLevel(logging.WARNING)
    try:
        metadata = policy_export.export_run(
            FLAGS.logdir, FLAGS.outdir, FLAGS.checkpoint, FLAGS.stochastic,
            FLAGS.format, FLAGS.overwrite, FLAGS.member)
    except policy_export.ExportError as error:
        stopping.exit_with(f'Error: {error}', 2)
    print(
        f"Exported {metadata['format']} of {metadata['checkpoint']} "
        f"({metadata['weights']} weights) to "
        f"{os.path.abspath(os.path.expanduser(FLAGS.outdir))} in "
        f"{metadata['seconds']:.1f} s.")


if __name__ == '__main__':
    app.run(main)
