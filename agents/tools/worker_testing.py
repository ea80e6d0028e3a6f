"""Helpers for tests of batches whose environments live in workers.

This module must not import TensorFlow: worker processes import it.
"""

import numpy as np

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


def step_trace(batch_env, steps, info_keys=('terminated', 'truncated')):
    """Step with zero actions, resetting finished envs; record everything.

    Args:
      batch_env: Batch whose actions are float vectors of three values.
      steps: Number of batch steps.
      info_keys: Keys of the info dict whose flags each step records.

    Returns:
      List of one tuple per step: the first observation component, rewards,
      done flags and the flags of `info_keys`, as lists.
    """
    trace = []
    batch_env.reset()
    for _ in range(steps):
        observ, reward, done, info = batch_env.step(
            np.zeros((len(batch_env), 3), np.float32))
        trace.append((observ[:, 0].tolist(), reward.tolist(), done.tolist(),
                      *(info[key].tolist() for key in info_keys)))
        if done.any():
            batch_env.reset(np.flatnonzero(done))
    return trace
