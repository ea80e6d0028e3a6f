"""Tests of warnings without colour codes."""

import subprocess
import sys

_WARN = """
import gymnasium as gym
from agents.tools import plain_warnings
plain_warnings.install()
plain_warnings.install()
gym.logger.warn('The observation is out of bounds.')
"""


def test_gymnasiums_warnings_print_without_colour_codes():
    """Once `[33mWARN: ...[0m` among the log's plain lines."""
    result = subprocess.run(
        [sys.executable, '-W', 'always', '-c', _WARN], capture_output=True,
        text=True, check=True)
    assert result.stderr.splitlines() == [
        '<string>:6: UserWarning: WARN: The observation is out of bounds.']
