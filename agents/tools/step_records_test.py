"""Tests of packing a batch step's values into float32 rows and back."""

import collections

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.tools import step_records

_Step = collections.namedtuple('_Step', 'observ, action, params, done')


def _step():
    return _Step(
        observ=tf.constant([[[1.5, -2.0], [3.0, 4.25]],
                            [[0.0, 7.0], [-1.0, 2.5]]], tf.float64),
        action=tf.constant([2, 0], tf.int32),
        params=(tf.constant([[0.5, 1.0, -1.0], [2.0, 0.25, 3.0]]),),
        done=tf.constant([True, False]))


def test_rows_round_trip_every_dtype_and_shape():
    with tf.Graph().as_default():
        step = _step()
        specs = step_records.specs(step)
        rows = step_records.pack(step)
        assert rows.shape.as_list() == [2, 4 + 1 + 3 + 1]
        assert step_records.width(specs) == 9
        unpacked = step_records.unpack(rows, specs)
        with tf.Session() as sess:
            got, expected, packed = sess.run((unpacked, step, rows))
    np.testing.assert_array_equal(
        packed[1], [0.0, 7.0, -1.0, 2.5, 0.0, 2.0, 0.25, 3.0, 0.0])
    assert isinstance(got, _Step)
    for name in _Step._fields:
        value, expected_value = getattr(got, name), getattr(expected, name)
        value, expected_value = np.asarray(value), np.asarray(expected_value)
        assert value.dtype == expected_value.dtype, name
        np.testing.assert_array_equal(value, expected_value, err_msg=name)


def test_rows_of_another_width_fail_in_one_line():
    with tf.Graph().as_default():
        specs = step_records.specs(_step())
        with pytest.raises(ValueError) as info:
            step_records.unpack(tf.zeros([2, 8]), specs)
    assert str(info.value) == (
        'rows of width 8 cannot hold values of 9 columns.')
