"""Tests for the graph-mode check."""

import subprocess
import sys
import textwrap

import tensorflow.compat.v1 as tf

from agents.tools import graph_mode


def test_graph_mode_passes():
    """Inside a graph nothing is raised."""
    with tf.Graph().as_default():
        graph_mode.require_graph_mode('Thing')


def test_eager_scripts_get_one_clear_error():
    """A script that forgot to disable eager execution hears why.

    Runs in a fresh process, where TensorFlow starts eagerly (the test
    suite's own graph setup must not hide the case).
    """
    script = textwrap.dedent('''
        import gymnasium
        from agents import tools
        batch = tools.BatchEnv([gymnasium.make('Pendulum-v1')], True)
        for build in (lambda: tools.InGraphBatchEnv(batch),
                      lambda: tools.InGraphEnv(batch[0])):
            try:
                build()
            except RuntimeError as error:
                print(type(error).__name__, error)
    ''')
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        timeout=300, check=True)
    lines = result.stdout.strip().splitlines()
    advice = (
        'builds TensorFlow graph ops and needs graph mode, but TensorFlow '
        'is executing eagerly; call tf.compat.v1.disable_eager_execution() '
        'at the start of the script, or build inside `with '
        'tf.Graph().as_default():`.')
    assert lines == [
        'EagerModeError InGraphBatchEnv ' + advice,
        'EagerModeError InGraphEnv ' + advice]
