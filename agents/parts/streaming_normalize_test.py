"""Tests for the running mean and standard deviation normalizer."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.parts import streaming_normalize


def _define(shape, **kwargs):
    """Normalizer for values of the shape and an update placeholder."""
    normalize = streaming_normalize.StreamingNormalize(
        tf.zeros(shape), **kwargs)
    value = tf.placeholder(tf.float32, None)
    return normalize, value, normalize.update(value)


def _statistics_after(shape, batches):
    """Count, mean and std of a new normalizer updated with the batches."""
    with tf.Graph().as_default():
        normalize, value, update = _define(shape)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for batch in batches:
                sess.run(update, {value: batch})
            return sess.run((normalize.count, normalize.mean, normalize.std))


def _parse_summary(serialized):
    """Map from tag to scalar value or histogram of a summary string."""
    summary = tf.Summary()
    summary.ParseFromString(serialized)
    return {
        entry.tag: entry.simple_value if entry.HasField('simple_value')
        else entry.histo
        for entry in summary.value}


def test_statistics_match_numpy_over_batches():
    """Mean and sample std over batches of different sizes."""
    rng = np.random.RandomState(0)
    batches = [
        rng.normal(3.0, 2.0, (size, 3)).astype(np.float32)
        for size in (1, 4, 7, 2)]
    with tf.Graph().as_default():
        normalize, value, update = _define([3])
        statistics = (normalize.count, normalize.mean, normalize.std)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for index, batch in enumerate(batches):
                sess.run(update, {value: batch})
                seen = np.concatenate(batches[:index + 1], 0)
                count, mean, std = sess.run(statistics)
                assert count == len(seen)
                np.testing.assert_allclose(mean, seen.mean(0), rtol=1e-5)
                if len(seen) > 1:
                    np.testing.assert_allclose(
                        std, seen.std(0, ddof=1), rtol=1e-5)
                else:
                    np.testing.assert_array_equal(std, np.ones(3))


def test_leading_dimensions_are_batch_dimensions():
    """Values of shape [batch, time, 2] count as batch * time values."""
    rng = np.random.RandomState(1)
    batches = [rng.uniform(-5, 5, (2, 3, 2)) for _ in range(3)]
    count, mean, std = _statistics_after([2], batches)
    seen = np.concatenate(batches, 0).reshape(-1, 2)
    assert count == 18
    np.testing.assert_allclose(mean, seen.mean(0), rtol=1e-5)
    np.testing.assert_allclose(std, seen.std(0, ddof=1), rtol=1e-5)


def test_scalar_template_and_single_values():
    """A scalar template accepts single values and vectors of them."""
    count, mean, std = _statistics_after([], [2.0, [4.0, 9.0]])
    assert count == 3
    np.testing.assert_allclose(mean, 5.0)
    np.testing.assert_allclose(std, np.std([2.0, 4.0, 9.0], ddof=1))


def test_large_offset_keeps_precision():
    """Statistics of values far from zero over many batches stay exact."""
    rng = np.random.RandomState(2)
    batches = [1e4 + rng.normal(0, 1, (50, 1)) for _ in range(20)]
    _, _, std = _statistics_after([1], batches)
    np.testing.assert_allclose(
        std, np.concatenate(batches).std(0, ddof=1), rtol=1e-3)


def test_transform_centers_scales_and_clips():
    """Transform matches (value - mean) / std, clipped."""
    seen = np.array([[0.0, 10.0], [2.0, 30.0], [4.0, 20.0]], np.float32)
    query = np.array([[1.0, 20.0], [100.0, -100.0]], np.float32)
    with tf.Graph().as_default():
        normalize, value, update = _define([2], clip=5)
        only_scale, scale_value, scale_update = _define(
            [2], center=False, clip=None, name='only_scale')
        transformed = (
            normalize.transform(query), only_scale.transform(query))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run((update, scale_update), {value: seen, scale_value: seen})
            centered, scaled = sess.run(transformed)
    std = np.sqrt(seen.var(0, ddof=1) + 1e-8)
    expected = np.clip((query - seen.mean(0)) / std, -5, 5)
    np.testing.assert_allclose(centered, expected, rtol=1e-5)
    assert centered[1, 0] == 5.0 and centered[1, 1] == -5.0
    np.testing.assert_allclose(scaled, query / std, rtol=1e-5)


def test_transform_uses_unit_std_until_two_values():
    """Before two values only the mean applies; before one, nothing."""
    query = np.array([[3.0, -20.0]], np.float32)
    with tf.Graph().as_default():
        normalize, value, update = _define([2])
        transformed = normalize.transform(query)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            initial = sess.run(transformed)
            sess.run(update, {value: [1.0, 2.0]})
            after_one = sess.run(transformed)
    np.testing.assert_array_equal(initial, [[3.0, -10.0]])
    np.testing.assert_array_equal(after_one, [[2.0, -10.0]])


def test_empty_batch_changes_nothing():
    """An update with no values leaves the statistics as they were."""
    with tf.Graph().as_default():
        normalize, value, update = _define([2])
        statistics = (normalize.count, normalize.mean, normalize.std)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update, {value: [[1.0, 2.0], [3.0, 6.0]]})
            before = sess.run(statistics)
            sess.run(update, {value: np.zeros((0, 2))})
            after = sess.run(statistics)
    for old, new in zip(before, after):
        np.testing.assert_array_equal(old, new)


def test_reset_forgets_values():
    """After reset the statistics start over."""
    with tf.Graph().as_default():
        normalize, value, update = _define([])
        reset = normalize.reset()
        statistics = (normalize.count, normalize.mean, normalize.std)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(update, {value: [5.0, 7.0, 9.0]})
            sess.run(reset)
            assert sess.run(statistics) == (0, 0.0, 1.0)
            sess.run(update, {value: [1.0, 3.0]})
            count, mean, std = sess.run(statistics)
    assert count == 2
    np.testing.assert_allclose(mean, 2.0)
    np.testing.assert_allclose(std, np.sqrt(2.0))


def test_summaries():
    """Update summarizes the batch; summary the mean and std once known."""
    with tf.Graph().as_default():
        scalar, value, update = _define([], name='reward')
        vector, vector_value, vector_update = _define([2], name='observ')
        summaries = (scalar.summary(), vector.summary())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            empty = [_parse_summary(s) for s in sess.run(summaries)]
            update_summary = _parse_summary(sess.run(update, {value: [4.0]}))
            after_one = _parse_summary(sess.run(summaries[0]))
            sess.run(update, {value: [6.0]})
            sess.run(vector_update, {vector_value: [[1.0, 2.0], [3.0, 2.0]]})
            scalar_summary, vector_summary = [
                _parse_summary(s) for s in sess.run(summaries)]
    assert empty == [{}, {}]
    assert update_summary == {'reward/update/value': 4.0}
    assert after_one == {'reward/summary/mean': 4.0}
    assert scalar_summary['reward/summary/mean'] == 5.0
    np.testing.assert_allclose(
        scalar_summary['reward/summary/stddev'], np.sqrt(2.0), rtol=1e-6)
    assert sorted(vector_summary) == [
        'observ/summary/mean', 'observ/summary/stddev']
    histogram = vector_summary['observ/summary/mean']
    assert (histogram.num, histogram.min, histogram.max) == (2, 2.0, 2.0)


def test_variables_are_checkpointed_statistics():
    """Statistics are non-trainable global variables in the named scope."""
    with tf.Graph().as_default():
        _define([3], name='normalize_observ')
        assert not tf.trainable_variables()
        names = sorted(variable.name for variable in tf.global_variables())
    assert names == [
        'normalize_observ/count:0', 'normalize_observ/mean:0',
        'normalize_observ/var_sum:0']


def test_invalid_arguments():
    """Unknown template shapes and negative clips are rejected."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='fully defined'):
            streaming_normalize.StreamingNormalize(
                tf.placeholder(tf.float32, [None]))
        with pytest.raises(ValueError, match='clip must be positive'):
            streaming_normalize.StreamingNormalize(tf.zeros([2]), clip=-1)
