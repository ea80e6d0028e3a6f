"""Environment double that misbehaves on request, for whole training runs
in a subprocess. No TensorFlow: worker processes import this module."""

import os
import threading
import time

import gymnasium as gym

# Name of the environment variable that holds the path of the fault file.
FAULT_FILE_VARIABLE = 'AGENTS_FAULT_FILE'
# Seconds that a step of the 'slow' fault takes.
SLOW_STEP_SECONDS = 0.5


class FaultyEnvironment(gym.Wrapper):
    """Pendulum-v1 that hangs or slows down once a file says so.

    Every step reads the file named by `AGENTS_FAULT_FILE`, when it exists:
    'hang' blocks the step forever (as a simulator stuck in C code), 'slow'
    makes every step take `SLOW_STEP_SECONDS`. A faulty step first creates
    the file's path plus '.reached', so that a test knows it is under way.
    """

    def __init__(self):
        super().__init__(gym.make('Pendulum-v1'))
        self._fault_file = os.environ.get(FAULT_FILE_VARIABLE)

    def step(self, action):
        """Step, hanging or sleeping first where the fault file says."""
        fault = self._fault()
        if fault:
            with open(self._fault_file + '.reached', 'a', encoding='utf-8'):
                pass
        if fault == 'hang':
            threading.Event().wait()
        if fault == 'slow':
            time.sleep(SLOW_STEP_SECONDS)
        return self.env.step(action)

    def _fault(self):
        """The fault that the file names, or None."""
        if not self._fault_file:
            return None
        try:
            with open(self._fault_file, encoding='utf-8') as file_:
                return file_.read().strip()
        except FileNotFoundError:
            return None
