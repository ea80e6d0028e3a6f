"""MuJoCo's warnings once, not once per environment built or per worker.

MuJoCo's XML compiler warns about every model it compiles that uses a
deprecated attribute (gymnasium's HalfCheetah and Walker2d models set
`settotalmass`); its default handler prints the warning to stderr and
appends it to `MUJOCO_LOG.TXT` in the working directory. A batch builds
many environments in one or several processes, so a training log would
repeat the same warning for every one of them. `install` gives MuJoCo a
handler that logs each distinct message once per process instead, and
`WithSeen` hands the messages a process logged to the workers it starts,
which leave them out: the trainer builds the environment once before its
workers do, so a run shows each warning once.

This module must not import TensorFlow: worker processes import it.
"""

import logging
import sys

import gymnasium as gym

# The messages this process logged already.
_SEEN = set()


def install(env_id=None):
    """Have MuJoCo's warnings logged once per process from now on.

    Messages that a `WithSeen` constructor brought from the parent process
    count as logged.

    Imports MuJoCo only when it is imported already or `env_id` names a
    MuJoCo environment, so that other environments do not pay for the
    import. A warning handler installed by someone else stays.

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
    """A constructor that first takes on the messages its creator logged.

    Args:
      constructor: The environment constructor to call.
    """

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
