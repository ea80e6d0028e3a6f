"""Tests of the frames and the channel of worker messages."""

import multiprocessing

import numpy as np
import pytest

from agents.tools import worker_messages
from agents.tools.worker_messages import Message


def _round_trip(values, arrays, scalars):
    data = worker_messages.frame(Message.STEP_RESULT, values, arrays, scalars)
    assert data[0] == Message.STEP_RESULT
    message, decoded = worker_messages.unframe(data)
    assert message == Message.STEP_RESULT
    return decoded


def test_step_result_keeps_values_and_types():
    """Arrays come back writable and equal, scalars of their own types."""
    observ = np.arange(6, dtype=np.float32).reshape(2, 3)
    for reward, flag in ((1.5, True), (np.float64(-2.0), np.bool_(False)),
                         (np.float32(0.25), False), (3, np.bool_(True)),
                         (np.int64(-7), True), (np.int32(2), False)):
        decoded = _round_trip((observ, reward, flag, False, {}), 1, 3)
        np.testing.assert_array_equal(decoded[0], observ)
        assert decoded[0].dtype == np.float32 and decoded[0].flags.writeable
        assert decoded[1:] == [reward, flag, False, {}]
        assert [type(value) for value in decoded[1:4]] == [
            type(reward), type(flag), bool]


def test_other_values_are_pickled_unless_empty_dicts():
    """Empty dicts are left out of the frame; other values are pickled."""
    observ = np.zeros(3, np.int64)
    empty = worker_messages.frame(Message.STEP, (observ, {}, {}), 1, 0)
    full = worker_messages.frame(
        Message.STEP, (observ, {'a': np.float64(1.0)}, [None]), 1, 0)
    assert len(empty) < len(full)
    _, decoded = worker_messages.unframe(empty)
    assert decoded[1:] == [{}, {}] and decoded[1] is not decoded[2]
    _, decoded = worker_messages.unframe(full)
    assert decoded[1:] == [{'a': 1.0}, [None]]
    assert type(decoded[1]['a']) is np.float64  # pylint: disable=C0123


def test_values_that_do_not_fit_return_none():
    """Other arrays and scalars, and inexact integers, are left to pickle."""
    observ = np.zeros(2, np.float32)
    frame = worker_messages.frame
    assert frame(Message.STEP, (np.array(['a']),), 1, 0) is None
    assert frame(Message.STEP, (observ.astype('>f4'),), 1, 0) is None
    assert frame(Message.STEP, ([1.0],), 1, 0) is None
    assert frame(Message.STEP, (observ, 1j, False), 1, 2) is None
    assert frame(Message.STEP, (2 ** 53 + 1,), 0, 1) is None
    assert _round_trip((2 ** 53,), 0, 1) == [2 ** 53]


def test_channel_splits_messages_sent_together():
    """Messages written before a read arrive one by one, whole."""
    left, right = multiprocessing.Pipe()
    sender = worker_messages.Channel(left)
    receiver = worker_messages.Channel(right)
    large = bytes(range(256)) * 300  # More than one read.
    for data in (b'first', b'second', large, b''):
        sender.send(data)
    assert not receiver.pending()
    assert receiver.receive() == b'first'
    assert receiver.pending()
    assert receiver.receive() == b'second'
    assert receiver.receive() == large
    assert receiver.receive() == b''
    assert not receiver.pending()
    left.close()
    with pytest.raises(EOFError, match='closed'):
        receiver.receive()
    right.close()
