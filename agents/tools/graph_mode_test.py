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
        'GraphModeError InGraphBatchEnv ' + advice,
        'GraphModeError InGraphEnv ' + advice]


def test_tf1_behaviour_gets_one_clear_error():
    """`disable_v2_behavior()` brings back reference variables.

    Our graphs then failed later with a type error about `float32_ref`.
    """
    script = textwrap.dedent('''
        import gymnasium
        import tensorflow.compat.v1 as tf
        from agents import tools
        tf.disable_v2_behavior()
        batch = tools.BatchEnv([gymnasium.make('Pendulum-v1')], True)
        try:
            tools.InGraphBatchEnv(batch)
        except RuntimeError as error:
            print(type(error).__name__, error)
    ''')
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        timeout=300, check=True)
    assert result.stdout.strip() == (
        'GraphModeError InGraphBatchEnv needs resource variables and TF2 '
        'control flow, which tf.compat.v1.disable_v2_behavior() switched '
        'off; call tf.compat.v1.disable_eager_execution() alone instead, or '
        'tf.compat.v1.enable_resource_variables() and '
        'tf.compat.v1.enable_control_flow_v2() after it.')
