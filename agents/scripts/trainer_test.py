"""Tests of the trainer's schedule; `train_test` trains end to end."""

import pytest

from agents import tools
from agents.scripts import trainer


@pytest.mark.parametrize('overrides, expected', [
    # Four episodes of 20 steps per training phase, two for evaluation.
    (dict(update_every=4), (80, 40)),
    # One update's episode would leave the second agent's unfinished.
    (dict(update_every=1), (40, 40)),
    (dict(update_every=1, eval_every=100, eval_episodes=3), (100, 60)),
])
def test_phase_steps(overrides, expected):
    config = tools.AttrDict(
        num_agents=2, max_length=20, eval_episodes=2, eval_every=None)
    with config.unlocked:
        config.update(overrides)
    assert trainer.phase_steps(config) == expected
