"""MuJoCo's warnings once, not once per environment built or per worker.

MuJoCo warns about every model it compiles with a deprecated attribute, to
stderr and `MUJOCO_LOG.TXT`. `install` logs each message once per process;
`WithSeen` hands the logged messages to workers, so a run shows each once.
This module must not import TensorFlow: worker processes import it.
"""

import logging
import sys

import gymnasium as gym

# The messages this process logged already.
_SEEN = set()


def install(env_id=None):
    """Have MuJoCo's warnings logged once per process from now on.

    MuJoCo is imported only where it is already or `env_id` names one of
    its environments; a handler installed by someone else stays.

    Args:
      env_id: Gymnasium id of the environment about to be built, or None.

    Returns:
      Whether this process's MuJoCo warnings go through the handler.
    """
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
    """Whether a gymnasium id's entry point is a module of MuJoCo envs."""
    if not isinstance(env_id, str):
        return False
    try:
        entry_point = gym.spec(env_id).entry_point
    except gym.error.Error:
        return False
    return isinstance(entry_point, str) and 'mujoco' in entry_point


class WithSeen:
    """An environment constructor that first takes on the messages its
    creator logged."""

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
