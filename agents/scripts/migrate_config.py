r"""Rewrite 2017 run folders' config.yaml (PyYAML's `!!python/` tags) with
`!callable` import paths, keeping the original as `config.yaml.2017`:

  python -m agents.scripts.migrate_config RUN [RUN ...]

A current file is left as it is; exit code 2 and one line on stderr when a
folder cannot be migrated."""

import os

from agents.training import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app

from agents.tools import atomic_file
from agents.training import config_io
from agents.training import stopping

BACKUP_SUFFIX = '.2017'


def migrate(run_dir):
    """Rewrite a run folder's config.yaml in today's format; return whether
    it was rewritten (False when it was current). A ConfigError where the
    file cannot be read or a backup is in the way; nothing is written then."""
    path, text = config_io.read_config_text(run_dir)
    # The 2017 package wrote its config as a tagged AttrDict.
    if not text.lstrip().startswith('!!python/object/new:'):
        return False
    backup = path + BACKUP_SUFFIX
    if os.path.exists(backup):
        raise config_io.ConfigError(
            f'{backup} exists already; move it away to migrate {path} '
            'again.')
    # Read (and so check) everything before writing anything.
    config = config_io.load_config(run_dir)
    try:
        atomic_file.write_atomic(backup, text)
    except OSError as error:
        raise config_io.ConfigError(
            f'Cannot write {backup}: {error.strerror or error}.') from error
    config_io.save_config(config, run_dir)
    return True


def main(argv):
    """Migrate the run folders named on the command line."""
    if len(argv) < 2:
        raise app.UsageError('Name one or more run folders to migrate.')
    for run_dir in argv[1:]:
        try:
            changed = migrate(run_dir)
        except config_io.ConfigError as error:
            stopping.exit_with(f'Error: {error}', 2)
        state = 'migrated' if changed else 'already current'
        print(f'{run_dir}: {state}')


if __name__ == '__main__':
    app.run(main)
