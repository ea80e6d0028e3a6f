"""Tests for the binary frames of worker messages."""

import socket

import numpy as np
import pytest

from agents.tools import message_frames

_MESSAGE = 12

_INFO = {
    'x': np.float64(0.5), 'ctrl': np.float32(-0.25), 'count': 3,
    'big': np.int64(-2 ** 62), 'small': np.int32(7), 'flag': True,
    'success': np.bool_(False), 'pos': np.arange(3, dtype=np.float32),
    'name_\u00e9': 1.5}


@pytest.mark.parametrize('result', [
    (np.arange(6, dtype=np.uint8).reshape(2, 3), 1.5, False, True, {}),
    (np.ones((), np.float64), np.float32(0.25), np.bool_(True), False,
     {'a': [1]}),
    (np.zeros((0, 4), np.int32), 3, True, np.bool_(False), _INFO),
    (np.array([1, 2], np.int64), np.int64(-7), False, False, {'a': {}}),
    (np.array([1.0]), np.bool_(True), False, False, {'x': 2 ** 70}),
    (np.array([1.0]), np.int32(-3), False, False, {3: 1.0}),
])
def test_step_frames_round_trip_exactly(result):
    """Step frames decode to equal values of equal types."""
    frame = b''.join(message_frames.pack_step(_MESSAGE, result))
    assert frame[0] == _MESSAGE
    decoded = message_frames.unpack_step(memoryview(frame))
    assert decoded[0].dtype == result[0].dtype
    assert decoded[0].flags.writeable
    np.testing.assert_array_equal(decoded[0], result[0])
    for value, expected in zip(decoded[1:4], result[1:4]):
        assert type(value) is type(expected)  # pylint: disable=C0123
        assert value == expected
    info, expected = decoded[4], result[4]
    assert list(info) == list(expected)
    for key, value in info.items():
        assert type(value) is type(expected[key])  # pylint: disable=C0123
        np.testing.assert_array_equal(value, expected[key])
        if isinstance(value, np.ndarray):
            assert value.dtype == expected[key].dtype


def test_flat_infos_are_framed_and_others_pickled():
    """Flat infos of scalars and arrays skip the pickle; others use it."""
    # Parts: step header, array header, dimensions, data, info marker.
    parts = message_frames.pack_step(
        _MESSAGE, (np.zeros(1), 0.0, False, False, _INFO))
    assert parts[4] == b'\x01'
    parts = message_frames.pack_step(
        _MESSAGE, (np.zeros(1), 0.0, False, False, {'x': {'nested': 1}}))
    assert parts[4] == b'\x02' and parts[5][0] == 0x80


@pytest.mark.parametrize('result', [
    ((1, 2), 1.0, False, False, {}),
    (np.zeros(2, object), 1.0, False, False, {}),
    (np.zeros(2).astype('>f8'), 1.0, False, False, {}),
    (np.zeros(2), 2 ** 60, False, False, {}),
    (np.zeros(2), None, False, False, {}),
    (np.zeros(2), 1.0, 0, False, {}),
])
def test_step_results_that_do_not_fit_return_none(result):
    """Values the frame cannot carry are left to a pickle."""
    assert message_frames.pack_step(_MESSAGE, result) is None


@pytest.mark.parametrize('value', [3, np.int64(-2 ** 63), np.int32(5)])
def test_integer_frames_keep_the_type(value):
    """Integer frames decode to the same type and value."""
    frame = message_frames.pack_integer(_MESSAGE, value)
    assert frame[0] == _MESSAGE
    decoded = message_frames.unpack_integer(frame)
    assert type(decoded) is type(value)  # pylint: disable=C0123
    assert decoded == value
    assert message_frames.pack_integer(_MESSAGE, 2 ** 64) is None


def test_array_frames_of_any_shape():
    """Arrays of several shapes and dtypes follow each other in a frame."""
    arrays = [np.arange(24, dtype=np.int16).reshape(2, 3, 4),
              np.array(True), np.linspace(0, 1, 5, dtype=np.float32)[::2]]
    data = b'x' + b''.join(
        b''.join(message_frames.array_parts(array)) for array in arrays)
    offset = 1
    for array in arrays:
        decoded, offset = message_frames.unpack_array(data, offset)
        assert (decoded.dtype, decoded.shape) == (array.dtype, array.shape)
        np.testing.assert_array_equal(decoded, array)
    assert offset == len(data)
    assert message_frames.array_parts(np.array(['a'])) is None


def test_channel_splits_and_joins_messages():
    """Messages arrive whole and in order, however the reads fall."""
    left, right = socket.socketpair()
    sender = message_frames.Channel(left)
    receiver = message_frames.Channel(right)
    try:
        # Larger than one read, smaller than the socket buffer.
        large = bytes(range(256)) * 400
        sender.send(b'ab', b'c')
        sender.send(b'')
        sender.send(large)
        assert bytes(receiver.receive()) == b'abc'
        assert receiver.buffered()
        assert bytes(receiver.receive()) == b''
        assert bytes(receiver.receive()) == large
        assert not receiver.buffered()
        left.close()
        with pytest.raises(EOFError):
            receiver.receive()
    finally:
        left.close()
        right.close()


def test_step_batch_frames_round_trip_exactly():
    """Batches decode to equal arrays, infos of equal types, and errors."""
    batch = message_frames.StepBatch(
        np.arange(6, dtype=np.float32).reshape(3, 2),
        np.array([1.5, -2, 0], np.float32), np.array([True, False, False]),
        np.array([False, False, True]), ({}, _INFO, {'a': {'nested': 1}}),
        {1: ('builtins', 'ValueError', 'Traceback: ...')})
    parts = message_frames.pack_step_batch(_MESSAGE, batch)
    assert not any(part[:1] == b'\x80' for part in parts[:-3])
    frame = b''.join(parts)
    assert frame[0] == _MESSAGE
    decoded = message_frames.unpack_step_batch(memoryview(frame))
    for value, expected in zip(decoded[:4], batch[:4]):
        assert value.dtype == expected.dtype and value.flags.writeable
        np.testing.assert_array_equal(value, expected)
    assert (decoded.infos[0], decoded.infos[2]) == ({}, {'a': {'nested': 1}})
    assert list(decoded.infos[1]) == list(_INFO)
    for key, value in decoded.infos[1].items():
        assert type(value) is type(_INFO[key])  # pylint: disable=C0123
        np.testing.assert_array_equal(value, _INFO[key])
    assert decoded.errors == batch.errors
    empty = batch._replace(infos=({},) * 3, errors={})
    decoded = message_frames.unpack_step_batch(memoryview(b''.join(
        message_frames.pack_step_batch(_MESSAGE, empty))))
    assert decoded.infos == ({},) * 3 and decoded.errors == {}


def test_step_batch_of_other_values_is_not_framed():
    """Batches with a field that is no numeric array need a pickle."""
    batch = message_frames.StepBatch(
        [np.zeros(2)], np.zeros(1), np.zeros(1, bool), np.zeros(1, bool),
        ({},), {})
    assert message_frames.pack_step_batch(_MESSAGE, batch) is None
