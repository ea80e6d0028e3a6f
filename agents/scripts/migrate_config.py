r"""Rewrite a 2017 run folder's config.yaml in today's format.

Command line:

  python -m agents.scripts.migrate_config RUN [RUN ...]

`config_io.load_config` reads the 2017 files (PyYAML's `!!python/` tags)
safely; this script rewrites them with `!callable` import paths, keeping the
original as `config.yaml.2017`. A current file is left as it is. Exit code 2
and one line on stderr when a folder cannot be migrated.
"""

import os

from agents.training import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app

from agents.training import config_io
from agents.training import stopping
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports

BACKUP_SUFFIX = '.2017'


def migrate(run_dir):
    """Rewrite the config.yaml of a run folder in today's format.

    Args:
      run_dir: Run folder holding a config.yaml.

    Raises:
      config_io.ConfigError: When the file is missing or unreadable, names
          a callable that does not import, or a backup from an earlier
          migration is in the way; nothing is written then.

    Returns:
      Whether the file was rewritten (False when it was already current).
    """
    path = os.path.join(run_dir, 'config.yaml')
    try:
        with open(path, encoding='utf-8') as file_:
            text = file_.read()
    except FileNotFoundError:
        raise config_io.ConfigError(
            f'No config.yaml in run folder {run_dir}.') from None
    except (OSError, UnicodeDecodeError) as error:
        raise config_io.ConfigError(f'Cannot read {path}: {error}.') from error
    if not config_io.is_legacy_config(text):
        return False
    backup = path + BACKUP_SUFFIX
    if os.path.exists(backup):
        raise config_io.ConfigError(
            f'{backup} exists already; move it away to migrate {path} '
            'again.')
    # Read (and so check) everything before writing anything.
    config = config_io.load_config(run_dir)
    try:
        config_io.write_atomic(backup, text)
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
