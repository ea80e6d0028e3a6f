"""Tests of op determinism for seeded runs."""

from tensorflow.python.framework import config

from agents.training import determinism


def test_a_seeded_run_turns_op_determinism_on_and_seed_zero_is_a_seed():
    # The package's conftest switches it back off after the test.
    determinism.enable_for_seed(None)
    assert not config.is_op_determinism_enabled()
    determinism.enable_for_seed(0)
    assert config.is_op_determinism_enabled()
