"""Command-line flags that several scripts define, each defined once.

`visualize.py` and `export.py` both read a run folder (`--logdir`) and one
of its checkpoints (`--checkpoint`) and write to `--outdir`
(`define_run_flags`); `train.py` defines `--logdir`, `--env_mode`,
`--env_processes` and `--seed` too.
"""

from absl import flags

FLAGS = flags.FLAGS

def define_flags(*definitions):
    """Define flags unless another module of the process defined them.

    absl keeps one definition of a name per process, and the scripts share
    names; a process that imports several scripts, such as the test suite,
    shares the first definition. The flags allow an override, so that a
    script imported later, which defines them unguarded (`train.py`),
    replaces them instead of failing. Running a script alone always uses
    its own definitions.

    Args:
      *definitions: Tuples `(define, name, default, help_string)` of an absl
          `DEFINE_*` function and its arguments, with an optional dict of
          further keyword arguments of `define` at the end.
    """
    for define, name, default, help_string, *options in definitions:
        if name not in FLAGS:
            define(
                name, default, help_string, allow_override=True,
                **(options[0] if options else {}))


def define_run_flags(use, outdir_help, *definitions):
    """Define the flags of a script that reads a checkpoint of a run folder.

    They are `--logdir`, the run folder; `--checkpoint`, one of its
    checkpoints; `--outdir`, the folder the script writes; and the
    script's own flags.

    Args:
      use: Verb of what the script does with the checkpoint ('restore').
      outdir_help: Help text of `--outdir`.
      *definitions: The script's other flags, as `define_flags` takes them.
    """
    define_flags(
        (flags.DEFINE_string, 'logdir', None, 'Run folder written by '
         'agents.scripts.train, holding config.yaml and checkpoints.'),
        (flags.DEFINE_string, 'outdir', None, outdir_help),
        (flags.DEFINE_string, 'checkpoint', None, f'Checkpoint to {use}, by '
         'name in the run folder (e.g. model.ckpt-100000) or by path; the '
         'latest when unset.'),
        *definitions)
