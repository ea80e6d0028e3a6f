"""A persistent cache of XLA's compiled code for the scripts.

On in-graph tasks, training and evaluation compile their loops with XLA at
the start of every run, seconds that count in the time to a target. With a
persistent cache, TensorFlow writes each compiled program to a folder and
later runs of the same graph (the seeds of a sweep, a resumed run, the next
benchmark) load it instead of compiling again: measured on the `pendulum`
config, the first training phase of a second run took 2 s instead of 4 s.

The cache is used where asked for, by the environment variable
`BATCH_PPO_XLA_CACHE` (a folder, or `1` for `default_directory()`):
TensorFlow 2.21 prints three error lines at every load of a cached program
(it first tries to parse the entry as text, and its check of the compiling
machine's features reports tuning flags such as `+prefer-no-scatter` as
missing on the same machine). The programs load and run all the same, but
a run should not greet its user with errors it cannot act on.

TensorFlow reads the folder from `TF_XLA_FLAGS` once, when it loads, so the
scripts call `use_requested_cache` when run as programs, before they import
TensorFlow; library code never sets it.
"""

import os
import sys

# The flag of TensorFlow's XLA that names the folder of the cache.
FLAG = '--tf_xla_persistent_cache_directory'
# The environment variable that asks the scripts for the cache.
VARIABLE = 'BATCH_PPO_XLA_CACHE'


def use_requested_cache():
    """Use the cache that `BATCH_PPO_XLA_CACHE` asks for, if it does.

    Returns:
        The folder of the cache in use, or None.
    """
    requested = os.environ.get(VARIABLE, '').strip()
    if requested in ('', '0'):
        return None
    return use_persistent_cache(None if requested == '1' else requested)


def default_directory():
    """The cache folder: `$XDG_CACHE_HOME/batch-ppo/xla`, or below
    `~/.cache` without that variable."""
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'batch-ppo', 'xla')


def use_persistent_cache(directory=None):
    """Add the cache folder to `TF_XLA_FLAGS`, unless it cannot take effect.

    Does nothing when TensorFlow is loaded already (it has read the flags),
    when `TF_XLA_FLAGS` names a cache folder of the user's, or when the
    folder cannot be created.

    Args:
        directory: The folder; None uses `default_directory()`.

    Returns:
        The folder of the cache in use, or None where this set none.
    """
    flags = os.environ.get('TF_XLA_FLAGS', '')
    if 'tensorflow' in sys.modules or FLAG in flags:
        return None
    directory = directory or default_directory()
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    os.environ['TF_XLA_FLAGS'] = f'{flags} {FLAG}={directory}'.strip()
    return directory
