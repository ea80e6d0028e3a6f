"""Command-line flags that several scripts define, each defined once."""

from absl import flags

FLAGS = flags.FLAGS


def define_run_flags(use, outdir_help, *definitions):
    """Define `--logdir`, `--checkpoint`, `--member`, `--outdir` and a
    script's other flags, unless defined already; they allow an override, so
    that a script imported later that defines them unguarded (`train.py`)
    replaces them. `use`: what the script does with the checkpoint
    ('restore'); `definitions`: tuples `(define, name, default,
    help_string)`, optionally with a dict of keyword arguments of `define`."""
    for define, name, default, help_string, *options in (
            (flags.DEFINE_string, 'logdir', None, 'Run folder written by '
             'agents.scripts.train, holding config.yaml and checkpoints.'),
            (flags.DEFINE_string, 'outdir', None, outdir_help),
            (flags.DEFINE_string, 'checkpoint', None, f'Checkpoint to {use}, '
             'by name in the run folder (e.g. model.ckpt-100000) or by path; '
             'the latest when unset.'),
            (flags.DEFINE_string, 'member', None, 'Member of a population '
             '(train.py --seeds) to use, e.g. seed-3 or, of variants, '
             'learning_rate=1e-3/seed-3; by default the one of the best last '
             'evaluation.'),
            *definitions):
        if name not in FLAGS:
            define(
                name, default, help_string, allow_override=True,
                **(options[0] if options else {}))
