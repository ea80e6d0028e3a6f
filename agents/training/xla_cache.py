"""XLA's persistent cache, set before TensorFlow is imported."""

import os
import sys

# The flag of TensorFlow's XLA that names the folder of the cache.
FLAG = '--tf_xla_persistent_cache_directory'
VARIABLE = 'BATCH_PPO_XLA_CACHE'


def use_requested_cache():
    """Use the cache that `BATCH_PPO_XLA_CACHE` asks for; its folder or None."""
    requested = os.environ.get(VARIABLE, '').strip()
    if requested in ('', '0'):
        return None
    return use_persistent_cache(None if requested == '1' else requested)


def default_directory():
    """The cache folder: `$XDG_CACHE_HOME/batch-ppo/xla` (or `~/.cache`)."""
    base = os.environ.get('XDG_CACHE_HOME') or os.path.join(
        os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'batch-ppo', 'xla')


def use_persistent_cache(directory=None):
    """Add the cache folder to `TF_XLA_FLAGS`; the folder, or None."""
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
