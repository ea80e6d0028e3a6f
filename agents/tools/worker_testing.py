"""Helpers for tests of batches whose environments live in workers.

This module must not import TensorFlow: worker processes import it.
"""

from agents.tools import external_process
from agents.tools import mock_environment


def child_pids():
    """Process ids of this process's children, once the fork server runs.

    Returns:
      Set of the process ids of every descendant of this process.
    """
    import psutil  # pylint: disable=import-outside-toplevel
    # The first worker starts the fork server, which then stays.
    external_process.ExternalProcess(
        mock_environment.MockEnvironment, main_module=False).close()
    return {child.pid for child in psutil.Process().children(recursive=True)}


def mock_constructor(seed):
    """A constructor of batches: a `MockEnvironment` of 3-step episodes.

    Args:
      seed: Ignored seed of the environment.

    Returns:
      `MockEnvironment`.
    """
    del seed
    return mock_environment.MockEnvironment(durations=(3,))
