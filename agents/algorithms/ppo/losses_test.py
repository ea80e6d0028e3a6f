"""Tests of PPO's losses and penalty adaptation."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import losses


@pytest.mark.parametrize('kl, expected', [
    (0.02, 1.5),  # Above 1.3 * target: raise.
    (0.0125, 1.0),  # Just below 1.3 * target: unchanged.
    (0.01, 1.0),  # On target: unchanged.
    (0.0069, 1 / 1.5),  # Below 0.7 * target: lower.
])
def test_penalty_adaptation_direction(kl, expected):
    with tf.Graph().as_default():
        penalty = losses.adapted_penalty(
            tf.constant(1.0), tf.constant(kl), 0.01)
        with tf.Session() as sess:
            assert sess.run(penalty) == pytest.approx(expected)


def test_masked_mean_ignores_padding():
    with tf.Graph().as_default():
        tensor = tf.constant([[1., 2., 100.], [3., 100., 100.]])
        mean = losses.masked_mean(tensor, tf.constant([2, 1]))
        with tf.Session() as sess:
            assert sess.run(mean) == pytest.approx(2.0)


def test_normalized_advantage_has_zero_mean_unit_std_on_valid_steps():
    with tf.Graph().as_default():
        advantage = tf.constant([[1., 2., 3.], [4., 50., 60.]])
        length = tf.constant([3, 1])
        normalized = losses.normalize_advantage(advantage, length)
        with tf.Session() as sess:
            result = sess.run(normalized)
    valid = np.array([result[0, 0], result[0, 1], result[0, 2], result[1, 0]])
    assert valid.mean() == pytest.approx(0.0, abs=1e-6)
    assert valid.std() == pytest.approx(1.0, abs=1e-4)
    np.testing.assert_array_equal(result[1, 1:], [0.0, 0.0])


def test_value_loss_clipping():
    """A clipped value loss keeps the larger error of the clipped guess."""
    with tf.Graph().as_default():
        # Step one moved from 0 to the target 1: no error unclipped, but
        # its guess clipped to 0.5 errs by 0.5. Step two moved from 0 to 3
        # beyond the target 0: the unclipped error 9 is the larger. The
        # third step is padding.
        value = tf.constant([[1.0, 3.0, 9.0]])
        target = tf.constant([[1.0, 0.0, 0.0]])
        old = tf.constant([[0.0, 0.0, 0.0]])
        length = tf.constant([2])
        plain = losses.value_loss_fn(value, target, old, length)
        clipped = losses.value_loss_fn(value, target, old, length, clip=0.5)
        with tf.Session() as sess:
            plain, clipped = sess.run((plain, clipped))
    assert plain == pytest.approx(0.5 * (0 + 9) / 2)
    assert clipped == pytest.approx(0.5 * (0.25 + 9) / 2)
