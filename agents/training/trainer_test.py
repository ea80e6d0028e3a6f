"""Tests of the trainer's process-wide settings."""

from tensorflow.python.framework import config

from agents.training import trainer


def test_a_seeded_run_turns_op_determinism_on_and_seed_zero_is_a_seed():
    # The package's conftest switches it back off after the test.
    trainer.enable_determinism({})
    trainer.enable_determinism(dict(seed=None))
    assert not config.is_op_determinism_enabled()
    trainer.enable_determinism(dict(seed=0))
    assert config.is_op_determinism_enabled()
