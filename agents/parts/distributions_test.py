"""Tests for the diagonal Gaussian and categorical distributions."""

import math

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.parts import distributions


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


def _gaussian_log_prob(x, mean, logstd):
    std = np.exp(logstd)
    density = (
        np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi)))
    return np.log(density).sum(-1)


def _gaussian_kl(mean1, logstd1, mean2, logstd2):
    var1, var2 = np.exp(2 * logstd1), np.exp(2 * logstd2)
    kl = (
        np.log(np.sqrt(var2) / np.sqrt(var1)) +
        (var1 + (mean1 - mean2) ** 2) / (2 * var2) - 0.5)
    return kl.sum(-1)


def _softmax(logits):
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


RNG = np.random.RandomState(0)
MEAN1 = RNG.normal(size=(2, 3, 4)).astype(np.float64)
LOGSTD1 = RNG.uniform(-1, 1, size=(2, 3, 4)).astype(np.float64)
MEAN2 = RNG.normal(size=(2, 3, 4)).astype(np.float64)
LOGSTD2 = RNG.uniform(-1, 1, size=(4,)).astype(np.float64)
LOGITS1 = RNG.normal(size=(2, 3, 5)).astype(np.float64)
LOGITS2 = RNG.normal(size=(2, 3, 5)).astype(np.float64)


def test_gaussian_closed_forms():
    """Log density, entropy, KL and mode match NumPy."""
    with tf.Graph().as_default():
        first = distributions.DiagonalGaussian(MEAN1, LOGSTD1)
        second = distributions.DiagonalGaussian(MEAN2, LOGSTD2)
        x = RNG.normal(size=(2, 3, 4))
        log_prob, entropy, kl, mode, logstd = _run((
            first.log_prob(x), first.entropy(), first.kl(second),
            first.mode(), second.logstd))
    np.testing.assert_allclose(
        log_prob, _gaussian_log_prob(x, MEAN1, LOGSTD1), rtol=1e-10)
    expected_entropy = (0.5 * np.log(2 * np.pi * np.e) + LOGSTD1).sum(-1)
    np.testing.assert_allclose(entropy, expected_entropy, rtol=1e-10)
    np.testing.assert_allclose(
        kl, _gaussian_kl(MEAN1, LOGSTD1, MEAN2, LOGSTD2), rtol=1e-10)
    np.testing.assert_array_equal(mode, MEAN1)
    np.testing.assert_array_equal(logstd, np.broadcast_to(LOGSTD2, (2, 3, 4)))
    assert log_prob.shape == entropy.shape == kl.shape == (2, 3)


def test_gaussian_kl_of_itself_is_zero():
    """The divergence of a distribution from itself is zero."""
    with tf.Graph().as_default():
        dist = distributions.DiagonalGaussian(MEAN1, LOGSTD1)
        kl = _run(dist.kl(dist))
    np.testing.assert_allclose(kl, np.zeros((2, 3)), atol=1e-12)


def test_gaussian_sample_statistics():
    """Samples have the mean and standard deviation asked for."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        mean = np.array([1.0, -2.0], np.float32)
        logstd = np.log(np.array([0.5, 2.0], np.float32))
        dist = distributions.DiagonalGaussian(
            tf.tile(mean[None], [20000, 1]), logstd)
        sample = _run(dist.sample())
    assert sample.shape == (20000, 2)
    assert sample.dtype == np.float32
    np.testing.assert_allclose(sample.mean(0), mean, atol=0.05)
    np.testing.assert_allclose(sample.std(0), [0.5, 2.0], rtol=0.03)


def test_gaussian_parameters_rebuild():
    """The parameters property rebuilds an equal distribution."""
    with tf.Graph().as_default():
        dist = distributions.DiagonalGaussian(MEAN1, LOGSTD2)
        copy = type(dist)(**dist.parameters)
        log_probs = _run((dist.log_prob(MEAN2), copy.log_prob(MEAN2)))
    np.testing.assert_array_equal(log_probs[0], log_probs[1])


def test_gaussian_rejects_scalar_mean_and_other_types():
    """Scalar means and KL to a categorical are rejected."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='event dimension'):
            distributions.DiagonalGaussian(1.0, 0.0)
        dist = distributions.DiagonalGaussian([1.0], [0.0])
        with pytest.raises(TypeError, match='Categorical'):
            dist.kl(distributions.Categorical([[0.0, 1.0]]))


def test_categorical_closed_forms():
    """Log probability, entropy, KL, mode and probs match NumPy."""
    with tf.Graph().as_default():
        first = distributions.Categorical(LOGITS1)
        second = distributions.Categorical(LOGITS2)
        x = RNG.randint(0, 5, size=(2, 3))
        log_prob, entropy, kl, mode, probs = _run((
            first.log_prob(x), first.entropy(), first.kl(second),
            first.mode(), first.probs))
    p1, p2 = _softmax(LOGITS1), _softmax(LOGITS2)
    expected_log_prob = np.log(
        np.take_along_axis(p1, x[..., None], -1))[..., 0]
    np.testing.assert_allclose(log_prob, expected_log_prob, rtol=1e-10)
    np.testing.assert_allclose(
        entropy, -(p1 * np.log(p1)).sum(-1), rtol=1e-10)
    np.testing.assert_allclose(
        kl, (p1 * np.log(p1 / p2)).sum(-1), rtol=1e-10)
    np.testing.assert_array_equal(mode, LOGITS1.argmax(-1))
    assert mode.dtype == np.int32
    np.testing.assert_allclose(probs, p1, rtol=1e-10)


def test_categorical_sample_frequencies():
    """Sample frequencies match the probabilities."""
    with tf.Graph().as_default():
        tf.set_random_seed(2)
        probs = np.array([0.1, 0.6, 0.3])
        logits = np.tile(np.log(probs)[None, None], [2, 10000, 1])
        dist = distributions.Categorical(logits.astype(np.float32))
        sample = _run(dist.sample())
    assert sample.shape == (2, 10000)
    assert sample.dtype == np.int32
    frequencies = np.bincount(sample.ravel(), minlength=3) / sample.size
    np.testing.assert_allclose(frequencies, probs, atol=0.015)


def test_categorical_rejects_scalar_logits_and_other_types():
    """Scalar logits and KL to a Gaussian are rejected."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='class dimension'):
            distributions.Categorical(1.0)
        dist = distributions.Categorical([[0.0, 1.0]])
        with pytest.raises(TypeError, match='DiagonalGaussian'):
            dist.kl(distributions.DiagonalGaussian([1.0], [0.0]))


def _masked_kl_gradients(make_pair, mask):
    """Gradients of a masked KL sum with respect to all parameters."""
    first, second, variables = make_pair()
    kl = first.kl(second)
    loss = tf.reduce_sum(kl * mask)
    gradients = tf.gradients(loss, variables)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run((kl, gradients))


MASK = np.array([[1, 1, 0, 0], [1, 0, 0, 0]], np.float32)


def test_gaussian_kl_gradients_on_padded_steps():
    """Padded steps keep finite gradients that the mask zeros."""
    # Real steps carry moderate parameters. Padded steps carry zeros (the
    # padding value of the old policy) against extreme parameters of the new
    # policy, as a network may produce for padded observations.
    mean = np.array([[[0.3], [-0.2], [40.0], [0.0]],
                     [[0.1], [0.0], [-40.0], [0.0]]], np.float32)
    logstd = np.array([[[-0.5], [0.2], [-20.0], [0.0]],
                       [[0.4], [0.0], [20.0], [-30.0]]], np.float32)
    other_mean = np.array([[[0.1], [0.2], [0.0], [0.0]],
                           [[-0.3], [0.0], [0.0], [0.0]]], np.float32)
    other_logstd = np.array([[[0.1], [-0.3], [0.0], [0.0]],
                             [[0.0], [0.0], [0.0], [0.0]]], np.float32)

    def make_pair():
        variables = [
            tf.get_variable('mean', initializer=mean),
            tf.get_variable('logstd', initializer=logstd),
            tf.get_variable('other_mean', initializer=other_mean),
            tf.get_variable('other_logstd', initializer=other_logstd)]
        first = distributions.DiagonalGaussian(variables[0], variables[1])
        second = distributions.DiagonalGaussian(variables[2], variables[3])
        return first, second, variables

    with tf.Graph().as_default():
        kl, gradients = _masked_kl_gradients(make_pair, MASK)
    np.testing.assert_allclose(
        kl, _gaussian_kl(mean, logstd, other_mean, other_logstd), rtol=1e-5)
    for gradient in gradients:
        assert np.all(np.isfinite(gradient))
        np.testing.assert_array_equal(gradient[MASK == 0], 0)
    assert np.all(gradients[0][MASK == 1] != 0)


def test_categorical_kl_gradients_on_padded_steps():
    """Extreme padded logits keep finite, masked gradients."""
    logits = np.zeros((2, 4, 3), np.float32)
    logits[0, 0] = [0.5, -0.2, 0.1]
    logits[0, 1] = [1.0, 2.0, -1.0]
    logits[1, 0] = [0.3, 0.3, -0.4]
    logits[0, 2] = [1e9, -1e9, 0.0]
    logits[1, 3] = [-1e9, 5.0, 1e4]
    other_logits = np.zeros((2, 4, 3), np.float32)
    other_logits[0, 0] = [0.1, 0.1, 0.2]
    other_logits[0, 1] = [-0.5, 0.0, 0.5]
    other_logits[1, 0] = [2.0, -1.0, 0.0]
    other_logits[1, 2] = [-1e9, 0.0, 1e9]

    def make_pair():
        variables = [
            tf.get_variable('logits', initializer=logits),
            tf.get_variable('other_logits', initializer=other_logits)]
        first = distributions.Categorical(variables[0])
        second = distributions.Categorical(variables[1])
        return first, second, variables

    with tf.Graph().as_default():
        kl, gradients = _masked_kl_gradients(make_pair, MASK)
    p1, p2 = _softmax(logits[MASK == 1]), _softmax(other_logits[MASK == 1])
    np.testing.assert_allclose(
        kl[MASK == 1], (p1 * np.log(p1 / p2)).sum(-1), rtol=1e-5)
    for gradient in gradients:
        assert np.all(np.isfinite(gradient))
        np.testing.assert_array_equal(gradient[MASK == 0], 0)
    assert np.all(gradients[0][MASK == 1] != 0)


def test_log_prob_is_consistent_with_constant_terms():
    """The normalizing constant is that of a unit normal."""
    # A standard normal in one dimension has log density -log(2 pi) / 2 at 0.
    with tf.Graph().as_default():
        dist = distributions.DiagonalGaussian([[0.0]], [[0.0]])
        value = _run(dist.log_prob([[0.0]]))
    np.testing.assert_allclose(value, [-0.5 * math.log(2 * math.pi)])


def test_samples_from_drawn_noise_equal_keyed_samples():
    """The noise that `noise` draws for a key, drawn in one compiled call
    for many keys, gives the samples of those keys."""
    with tf.Graph().as_default():
        keys = tf.constant([[3, 0], [3, 2], [9, 4]], tf.int64)
        gaussian = distributions.DiagonalGaussian(
            tf.constant([[[0.5, -1.0]], [[2.0, 0.0]]]),
            tf.constant([[[-1.0, 0.5]], [[0.0, -2.0]]]))
        categorical = distributions.Categorical(
            tf.constant([[[0.1, 2.0, -1.0]], [[1.0, 1.0, 1.0]]]))

        def _draw(keys):
            return (
                tf.map_fn(lambda key: gaussian.noise(key, [2, 1, 2]), keys,
                          fn_output_signature=tf.float32),
                tf.map_fn(lambda key: categorical.noise(key, [2, 3]), keys,
                          fn_output_signature=tf.float32))

        gaussian_noise, categorical_noise = tf.function(
            _draw, jit_compile=True, autograph=False)(tf.identity(keys))
        keyed, drawn = [], []
        for index in range(3):
            keyed.append((gaussian.sample(key=keys[index]),
                          categorical.sample(key=keys[index])))
            drawn.append((gaussian.sample(noise=gaussian_noise[index]),
                          categorical.sample(noise=categorical_noise[index])))
        with tf.Session() as sess:
            keyed, drawn = sess.run((keyed, drawn))
    for (gaussian_keyed, categorical_keyed), (gaussian_drawn,
                                               categorical_drawn) in zip(
                                                   keyed, drawn):
        np.testing.assert_array_equal(gaussian_drawn, gaussian_keyed)
        np.testing.assert_array_equal(categorical_drawn, categorical_keyed)
    # Different keys, different samples.
    assert not np.array_equal(keyed[0][0], keyed[1][0])
