"""Tests of the PPO helpers against NumPy references."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import utility


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


def _numpy_return(reward, length, discount):
    result = np.zeros_like(reward)
    for row, row_length in enumerate(length):
        running = 0.0
        for step in reversed(range(row_length)):
            running = reward[row, step] + discount * running
            result[row, step] = running
    return result


def _numpy_gae(reward, value, length, discount, gae_lambda):
    result = np.zeros_like(reward)
    for row, row_length in enumerate(length):
        running = 0.0
        for step in reversed(range(row_length)):
            next_value = value[row, step + 1] if step + 1 < row_length else 0.0
            delta = reward[row, step] + discount * next_value - value[row, step]
            running = delta + discount * gae_lambda * running
            result[row, step] = running
    return result


@pytest.fixture(name='episodes')
def _episodes():
    random = np.random.RandomState(0)
    reward = random.normal(size=(4, 7)).astype(np.float32)
    value = random.normal(size=(4, 7)).astype(np.float32)
    length = np.array([7, 3, 1, 5], np.int32)
    return reward, value, length


def test_mask_sets_padded_steps():
    with tf.Graph().as_default():
        tensor = tf.ones((2, 4, 3))
        masked = utility.mask(tensor, tf.constant([1, 3]), value=-2)
        result = _run(masked)
    expected = np.ones((2, 4, 3), np.float32)
    expected[0, 1:] = -2
    expected[1, 3:] = -2
    np.testing.assert_array_equal(result, expected)


def test_discounted_return_matches_numpy(episodes):
    reward, _, length = episodes
    with tf.Graph().as_default():
        return_ = utility.discounted_return(
            tf.constant(reward), tf.constant(length), 0.9)
        result = _run(return_)
    np.testing.assert_allclose(
        result, _numpy_return(reward, length, 0.9), rtol=1e-5, atol=1e-6)


def test_discounted_return_ignores_padding_values(episodes):
    reward, _, length = episodes
    noisy = reward.copy()
    for row, row_length in enumerate(length):
        noisy[row, row_length:] = 1e6
    with tf.Graph().as_default():
        clean = utility.discounted_return(
            tf.constant(reward), tf.constant(length), 0.99)
        padded = utility.discounted_return(
            tf.constant(noisy), tf.constant(length), 0.99)
        clean, padded = _run((clean, padded))
    np.testing.assert_array_equal(clean, padded)


@pytest.mark.parametrize('gae_lambda', [0.0, 0.95, 1.0])
def test_lambda_advantage_matches_numpy(episodes, gae_lambda):
    reward, value, length = episodes
    with tf.Graph().as_default():
        advantage = utility.lambda_advantage(
            tf.constant(reward), tf.constant(value), tf.constant(length),
            0.9, gae_lambda)
        result = _run(advantage)
    expected = _numpy_gae(reward, value, length, 0.9, gae_lambda)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_lambda_one_equals_return_minus_value(episodes):
    reward, value, length = episodes
    expected = _numpy_return(reward, length, 0.9) - value
    for row, row_length in enumerate(length):
        expected[row, row_length:] = 0
    with tf.Graph().as_default():
        advantage = utility.lambda_advantage(
            tf.constant(reward), tf.constant(value), tf.constant(length),
            0.9, 1.0)
        result = _run(advantage)
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


def test_reinit_and_assign_nested_vars_by_index():
    with tf.Graph().as_default():
        first = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2))
        second = tf.Variable(np.arange(3, dtype=np.float32))
        variables = (first, second)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(utility.reinit_nested_vars(variables, tf.constant([1])))
            np.testing.assert_array_equal(
                sess.run(first), [[0, 1], [0, 0], [4, 5]])
            np.testing.assert_array_equal(sess.run(second), [0, 0, 2])
            sess.run(utility.assign_nested_vars(
                variables, (tf.constant([[9., 9.]]), tf.constant([7.])),
                tf.constant([2])))
            np.testing.assert_array_equal(
                sess.run(first), [[0, 1], [0, 0], [9, 9]])
            np.testing.assert_array_equal(sess.run(second), [0, 0, 7])


def test_gradient_norms_by_group():
    with tf.Graph().as_default():
        with tf.variable_scope('policy'):
            policy = tf.Variable([3.0, 0.0], name='weights')
        with tf.variable_scope('value'):
            value = tf.Variable([[4.0]], name='weights')
        grad_vars = [
            (tf.constant([3.0, 0.0]), policy),
            (tf.constant([[4.0]]), value),
            (None, tf.Variable(1.0, name='unused'))]
        norms = utility.gradient_norms(grad_vars, {
            'all': r'.*', 'policy': r'policy/.*', 'none': r'nothing/.*'})
        result = _run(norms)
    assert result == {'all': 5.0, 'policy': 3.0, 'none': 0.0}


def test_state_variables_start_at_zero_and_none_stays_none():
    assert utility.state_variables(None) is None
    with tf.Graph().as_default():
        state = (tf.ones([3, 2]), tf.ones([3]))
        variables = utility.state_variables(state)
        assert [variable.trainable for variable in variables] == [False, False]
        first, second = _run(variables)
    np.testing.assert_array_equal(first, np.zeros([3, 2]))
    np.testing.assert_array_equal(second, np.zeros([3]))


@pytest.mark.parametrize('kl, expected', [
    (0.02, 1.5),  # Above 1.3 * target: raise.
    (0.0125, 1.0),  # Just below 1.3 * target: unchanged.
    (0.01, 1.0),  # On target: unchanged.
    (0.0069, 1 / 1.5),  # Below 0.7 * target: lower.
])
def test_penalty_adaptation_direction(kl, expected):
    with tf.Graph().as_default():
        penalty = utility.adapted_penalty(
            tf.constant(1.0), tf.constant(kl), 0.01)
        with tf.Session() as sess:
            assert sess.run(penalty) == pytest.approx(expected)


def test_masked_mean_ignores_padding():
    with tf.Graph().as_default():
        tensor = tf.constant([[1., 2., 100.], [3., 100., 100.]])
        mean = utility.masked_mean(tensor, tf.constant([2, 1]))
        with tf.Session() as sess:
            assert sess.run(mean) == pytest.approx(2.0)


def test_normalized_advantage_has_zero_mean_unit_std_on_valid_steps():
    with tf.Graph().as_default():
        advantage = tf.constant([[1., 2., 3.], [4., 50., 60.]])
        length = tf.constant([3, 1])
        normalized = utility.normalize_advantage(advantage, length)
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
        plain = utility.value_loss_fn(value, target, old, length)
        clipped = utility.value_loss_fn(value, target, old, length, clip=0.5)
        with tf.Session() as sess:
            plain, clipped = sess.run((plain, clipped))
    assert plain == pytest.approx(0.5 * (0 + 9) / 2)
    assert clipped == pytest.approx(0.5 * (0.25 + 9) / 2)
