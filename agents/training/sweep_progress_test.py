"""Tests of the sweep's progress actor's class."""

import subprocess
import sys

from agents.training import sweep_progress


def test_take_returns_the_lines_put_since_the_last_take():
    progress = sweep_progress.Progress()
    progress.put('a')
    progress.put('b', 'c')
    assert progress.take() == ['a', 'b', 'c']
    assert not progress.take()
    progress.put('d')
    assert progress.take() == ['d']


def test_its_module_imports_no_tensorflow():
    """Ray's worker of the actor imports the module of its class."""
    code = ('import sys; import agents.training.sweep_progress; '
            'print(sorted(name for name in ("tensorflow", "ray") '
            'if name in sys.modules))')
    output = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        check=True).stdout
    assert output == '[]\n'
