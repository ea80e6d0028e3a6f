"""MuJoCo's warnings once per run, not per model compiled or per worker
(`WithSeen` hands the logged messages to workers). No TensorFlow here:
worker processes import it."""

import logging
import sys

import gymnasium as gym

from agents.tools import gl_backend

# The messages this process logged already.
_SEEN = set()


def install(env_id=None):
    """Log MuJoCo's warnings once per process from now on; return whether
    they go through our handler (one installed by someone else stays).
    MuJoCo is imported only where it is already or `env_id` (a gymnasium id
    or None) is one of its environments."""
    if 'mujoco' not in sys.modules and not _uses_mujoco(env_id):
        return False
    try:
        import mujoco  # pylint: disable=import-outside-toplevel
    except ImportError:
        return False
    handler = mujoco.get_mju_user_warning()
    if handler is None:
        mujoco.set_mju_user_warning(_log_once)
        return True
    return handler is _log_once


def _uses_mujoco(env_id):
    """Whether a gymnasium id is of a MuJoCo env (not an unknown id)."""
    try:
        return isinstance(env_id, str) and gl_backend.needs_gl(env_id)
    except gym.error.Error:
        return False


class WithSeen:
    """An env constructor that first takes on its creator's logged messages."""

    def __init__(self, constructor):
        self._constructor = constructor
        self._seen = sorted(_SEEN)

    def __call__(self, *args, **kwargs):
        _SEEN.update(self._seen)
        return self._constructor(*args, **kwargs)


def _log_once(message):
    # MuJoCo calls this from C: it must not raise.
    if message in _SEEN:
        return
    _SEEN.add(message)
    logging.getLogger('agents').warning(
        'MuJoCo warning (shown once): %s', message)
