"""Tests of Pendulum-v1 against gymnasium's environment."""

import math
import unittest

from agents.environments import pendulum
from agents.testing import task_contract


class PendulumTest(task_contract.TaskContractMixin, unittest.TestCase):
    """The task against gymnasium's Pendulum-v1."""

    task_class = pendulum.Pendulum
    reset_low = (-math.pi, -1.0)
    reset_high = (math.pi, 1.0)
    # Angles beyond one turn, and velocities at and beyond the clipping.
    coverage_low = (-10.0, -9.0)
    coverage_high = (10.0, 9.0)
    terminates = False


if __name__ == '__main__':
    unittest.main()
