"""Tests of CartPole-v1 against gymnasium's environment."""

import unittest

from agents.environments import cartpole
from agents.testing import task_contract


class CartPoleTest(task_contract.TaskContractMixin, unittest.TestCase):
    """The task against gymnasium's CartPole-v1."""

    task_class = cartpole.CartPole
    reset_low = (-0.05,) * 4
    reset_high = (0.05,) * 4
    # Around the termination thresholds of 2.4 and 12 degrees.
    coverage_low = (-2.6, -3.0, -0.25, -3.0)
    coverage_high = (2.6, 3.0, 0.25, 3.0)

    def set_gymnasium_state(self, state):
        super().set_gymnasium_state(state)
        # Gymnasium rewards steps after a termination with zero.
        self.env.steps_beyond_terminated = None


if __name__ == '__main__':
    unittest.main()
