"""Fixtures that tests across the package share."""

import os
import sys

import cloudpickle
import pytest

# XLA's CPU backend without LLVM's optimization passes, in the tests and the
# scripts they start: the tests run a few steps of many small programs, so
# compiling is most of their time (about a sixth less CPU with this); every
# comparison of numbers is between runs under the same setting.
os.environ.setdefault('XLA_FLAGS', '--xla_backend_optimization_level=0')


@pytest.fixture(name='by_value')
def fixture_by_value(request):
    """Send the test module's functions to workers by value, not by import.

    Workers then receive what the test set on them, and need not import the
    test module and with it TensorFlow.
    """
    cloudpickle.register_pickle_by_value(request.module)
    yield
    cloudpickle.unregister_pickle_by_value(request.module)


@pytest.fixture(name='restore_mujoco_gl')
def fixture_restore_mujoco_gl(monkeypatch):
    """Restore MUJOCO_GL, or its absence, after a test that may set it."""
    original = os.environ.get('MUJOCO_GL')
    # Setting first makes monkeypatch restore the variable's absence too.
    monkeypatch.setenv('MUJOCO_GL', 'placeholder')
    if original is None:
        monkeypatch.delenv('MUJOCO_GL')
    else:
        monkeypatch.setenv('MUJOCO_GL', original)
    return monkeypatch


@pytest.fixture(autouse=True)
def fixture_op_determinism_per_test():
    """Switch TensorFlow's op determinism back off after a test that ran a
    script's `main` in process with a seed, which switches it on for the
    whole process: later tests of the same worker build unseeded random
    ops."""
    yield
    if 'tensorflow' not in sys.modules:
        return
    # pylint: disable-next=import-outside-toplevel
    from tensorflow.python.framework import config
    if config.is_op_determinism_enabled():
        config.disable_op_determinism()
