"""Tests of the rejax peer's settings (no JAX needed).

Run with `python -m pytest -q benchmarks/peers_rejax_test.py`; the repo's
default test paths hold `agents` only.
"""

import math

import pytest

import peers_rejax


class _Config(dict):
    """Attribute access over a dict, as our completed configs have."""

    def __getattr__(self, name):
        return self[name]


def _relu():
    """Stands for `tf.nn.relu`, whose `__name__` is 'relu'."""


_relu.__name__ = 'relu'


def _pendulum(**overrides):
    """The keys of our `pendulum` config that the mapping reads."""
    return _Config(dict(
        num_agents=8, update_every=8, max_length=200, update_epochs=20,
        batch_size=8, chunk_length=50, learning_rate=1e-3,
        learning_rate_decay='linear', max_gradient_norm=0.5, discount=0.98,
        gae_lambda=0.95, entropy_regularization=0.0, ppo_clip=None,
        reward_normalization='return', policy_layers=(128, 128),
        value_layers=(128, 128), activation=_relu), **overrides)


def test_same_work_settings_of_pendulum():
    assert peers_rejax.same_work_settings(_pendulum()) == dict(
        learning_rate_decay='linear',
        agent_kwargs=dict(activation='relu', hidden_layer_sizes=[128, 128]),
        num_envs=8, num_steps=200, num_epochs=20, num_minibatches=4,
        learning_rate=1e-3, max_grad_norm=0.5, gamma=0.98, gae_lambda=0.95,
        clip_eps=0.2, ent_coef=0.0, normalize_observations=True,
        normalize_rewards=True, reward_normalization_discount=0.98)


def test_same_work_settings_defaults_for_unset_keys():
    settings = peers_rejax.same_work_settings(_pendulum(
        max_gradient_norm=None, gae_lambda=None, ppo_clip=0.1,
        reward_normalization='reward', update_steps=3200))
    assert settings['max_grad_norm'] == math.inf
    assert settings['gae_lambda'] == 1.0
    assert settings['clip_eps'] == 0.1
    assert settings['normalize_rewards'] is False
    assert (settings['num_steps'], settings['num_minibatches']) == (400, 8)


def test_same_work_settings_rejects_what_rejax_cannot_do():
    with pytest.raises(ValueError) as error:
        peers_rejax.same_work_settings(_pendulum(num_agents=3))
    assert str(error.value) == (
        'The update of 1600 steps does not split over num_agents = 3 '
        'environments.')
    with pytest.raises(ValueError) as error:
        peers_rejax.same_work_settings(_pendulum(chunk_length=30))
    assert str(error.value) == (
        'The update of 1600 transitions does not split into mini-batches '
        'of 240.')
    with pytest.raises(ValueError) as error:
        peers_rejax.same_work_settings(_pendulum(value_layers=(64, 64)))
    assert str(error.value) == (
        'policy_layers (128, 128) and value_layers (64, 64) differ; rejax '
        'uses one size for both.')


def test_tasks_and_defaults():
    peers_rejax.check_task('Pendulum-v1')
    with pytest.raises(ValueError) as error:
        peers_rejax.check_task('HalfCheetah-v5')
    assert str(error.value) == (
        "rejax runs gymnax tasks only: Pendulum-v1; got 'HalfCheetah-v5'.")
    settings = peers_rejax.default_settings('Pendulum-v1')
    assert peers_rejax.iteration_steps(settings) == 10000
    assert settings['learning_rate_decay'] is None


def test_import_error_message_names_the_extra():
    assert peers_rejax.import_error_message('/venv/bin/python') == (
        'rejax cannot be imported by /venv/bin/python; install the '
        'bench-jax extra there, in a virtual environment of its own: pip '
        "install 'rejax==0.1.3' 'gymnax==0.0.9' 'jax==0.10.2' absl-py.")
