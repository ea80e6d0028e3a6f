"""Tests of MountainCar-v0 and MountainCarContinuous-v0 against gymnasium's
environments."""

import unittest

import numpy as np

from agents.environments import mountain_car
from agents.testing import task_contract


class MountainCarTest(task_contract.TaskContractMixin, unittest.TestCase):
    """The task against gymnasium's MountainCar-v0."""

    task_class = mountain_car.MountainCar
    reset_low = (-0.6, 0.0)
    reset_high = (-0.4, 0.0)
    coverage_low = (-1.3, -0.08)
    coverage_high = (0.6, 0.08)

    def coverage_states(self, rng, count):
        # Clipped to the bounds, so that some cars stand at the left wall.
        states = super().coverage_states(rng, count)
        return np.clip(states, [-1.2, -0.07], [0.6, 0.07]).astype(np.float32)


class ContinuousMountainCarTest(
        task_contract.TaskContractMixin, unittest.TestCase):
    """The task against gymnasium's MountainCarContinuous-v0."""

    task_class = mountain_car.ContinuousMountainCar
    reset_low = (-0.6, 0.0)
    reset_high = (-0.4, 0.0)
    coverage_low = (-1.3, -0.08)
    coverage_high = (0.6, 0.08)

    def set_gymnasium_state(self, state):
        # Gymnasium keeps this task's state in float32 after every step.
        self.env.state = np.asarray(state, np.float32)

    def coverage_states(self, rng, count):
        # Clipped to the bounds, so that some cars stand at the left wall.
        states = super().coverage_states(rng, count)
        return np.clip(states, [-1.2, -0.07], [0.6, 0.07]).astype(np.float32)


if __name__ == '__main__':
    unittest.main()
