"""Tests of Acrobot-v1 against gymnasium's environment."""

import math
import unittest

from agents.environments import acrobot
from agents.testing import task_contract


class AcrobotTest(task_contract.TaskContractMixin, unittest.TestCase):
    """The task against gymnasium's Acrobot-v1."""

    task_class = acrobot.Acrobot
    reset_low = (-0.1,) * 4
    reset_high = (0.1,) * 4
    # Every angle, and velocities up to their bounds.
    coverage_low = (-math.pi, -math.pi, -4 * math.pi, -9 * math.pi)
    coverage_high = (math.pi, math.pi, 4 * math.pi, 9 * math.pi)
    # The integration amplifies the last-bit differences of XLA's sines and
    # cosines, to at most 3.3e-5 of a value at fast speeds.
    compiled_rtol = 1e-4
    compiled_atol = 1e-5


if __name__ == '__main__':
    unittest.main()
