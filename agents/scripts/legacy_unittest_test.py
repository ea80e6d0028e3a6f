"""The 2017 README's test command runs the `unittest` test cases.

A file of its own, apart from `legacy_script_test`: pytest-xdist's
`--dist loadfile` gives each file to one worker, and the two slow tests of
the 2017 package's ways can then run on both.
"""

import re
import subprocess
import sys

from agents.scripts.legacy_script_test import _ROOT


def test_2017_unittest_command_passes():
    """The 2017 README's test command: unittest runs what it can."""
    result = subprocess.run(
        [sys.executable, '-m', 'unittest', 'discover', '-p', '*_test.py'],
        cwd=_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r'^OK( \(skipped=\d+\))?$', result.stderr, re.MULTILINE)
