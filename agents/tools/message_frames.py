"""Binary frames for the messages between `ExternalProcess` and its worker.

Steps are the hot path of every batched simulation. Pickling a small NumPy
array or scalar costs more than stepping a classic control task, and the
info of a physics step holds several of them, so step actions and results
travel as compact frames: numeric arrays as their raw bytes with dtype and
shape, scalars and flags with a code for their exact type, so that the
receiver gets back the types that were sent. Values that do not fit return
None from the packing functions, and the caller pickles them instead.

`Channel` carries length-prefixed messages on a pipe's file descriptor.

This module must not import TensorFlow: worker processes import it.
"""

import collections
import functools
import math
import os
import pickle
import struct

import numpy as np

PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL

# Frame layouts. An array is the header (dtype character, number of
# dimensions), its dimensions, and its raw bytes in C order.
_ARRAY_HEADER = struct.Struct('<cB')
_DIMENSIONS = tuple(struct.Struct(f'<{ndim}q') for ndim in range(33))
_INTEGER_ACTION = struct.Struct('<BBq')
# Step result: message, flags, reward kind, reward.
_STEP_HEADER = struct.Struct('<BBBd')
_ARRAY_KINDS = frozenset('biufc')
_INT64_MIN, _INT64_MAX = -2 ** 63, 2 ** 63 - 1

# Kinds of scalars the frames carry, so that the parent returns the same
# types the environment produced. Floating point kinds travel as doubles,
# the others as 64-bit integers.
_SCALAR_TYPES = (
    float, np.float64, np.float32, int, np.int64, np.int32, bool, np.bool_)
_SCALAR_CODES = {type_: code for code, type_ in enumerate(_SCALAR_TYPES)}
_FLOAT_CODES = frozenset((0, 1, 2))
_EXACT = 2 ** 53
# Info entries: kind, value, length of the key; then the key. Arrays: kind,
# length of the key, the key, then the framed array.
_FLOAT_ENTRY = struct.Struct('<BdH')
_INTEGER_ENTRY = struct.Struct('<BqH')
_ARRAY_ENTRY = struct.Struct('<BH')
_ARRAY_CODE = 255
_INFO_FRAMED = b'\x01'
_INFO_PICKLED = b'\x02'
_FLAG_TYPES = (bool, np.bool_)
_FLAG_CODES = {type_: code for code, type_ in enumerate(_FLAG_TYPES)}
# Step batch: message, number of environments; then each info's length.
_BATCH_HEADER = struct.Struct('<BI')
_LENGTHS = struct.Struct('<I')

StepBatch = collections.namedtuple(
    'StepBatch', 'observ, reward, terminated, truncated, infos, errors')
StepBatch.__doc__ = """Results of stepping several environments at once.

Fields:
    observ: Array of the stacked observations.
    reward: Array of the rewards.
    terminated: Bool array of the termination flags.
    truncated: Bool array of the truncation flags.
    infos: Tuple of the info dicts.
    errors: Dict from positions in the batch whose step raised to a tuple
        of the error's module, qualified name and formatted traceback; their
        rows hold zeros and an empty info.
"""


def array_parts(array):
    """Frame parts of a numeric array in native byte order.

    Args:
        array: The array.

    Returns:
        Tuple of byte strings, or None for other arrays.
    """
    dtype = array.dtype
    if (dtype.kind not in _ARRAY_KINDS or not dtype.isnative
            or array.ndim >= len(_DIMENSIONS)):
        return None
    return (_ARRAY_HEADER.pack(dtype.char.encode(), array.ndim),
            _DIMENSIONS[array.ndim].pack(*array.shape), array.tobytes())


def unpack_array(data, offset):
    """Decode a framed array.

    Args:
        data: Bytes-like object holding the frame.
        offset: Where the array's parts start.

    Returns:
        Tuple of a writable copy of the array and the offset after it.
    """
    char, ndim = _ARRAY_HEADER.unpack_from(data, offset)
    offset += _ARRAY_HEADER.size
    shape = _DIMENSIONS[ndim].unpack_from(data, offset)
    offset += _DIMENSIONS[ndim].size
    dtype = _dtype(char)
    count = math.prod(shape)
    # Copy out of the received bytes: a view would be read-only.
    array = np.frombuffer(data, dtype, count, offset).reshape(shape).copy()
    return array, offset + count * dtype.itemsize


@functools.lru_cache(maxsize=None)
def _dtype(char):
    return np.dtype(char.decode())


def pack_integer(message, value):
    """Frame a message of one int, np.int64 or np.int32.

    Args:
        message: Message constant that starts the frame.
        value: The integer.

    Returns:
        The frame, or None when the value needs more than 64 bits.
    """
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return _INTEGER_ACTION.pack(message, _SCALAR_CODES[type(value)], value)


def unpack_integer(data):
    """Decode a frame of `pack_integer` into the integer it carries."""
    _, code, value = _INTEGER_ACTION.unpack(data)
    return _SCALAR_TYPES[code](value)


def pack_step(message, result):
    """Frame the result of a step.

    Args:
        message: Message constant that starts the frame.
        result: Tuple of observation, reward, terminated, truncated, info.

    Returns:
        Tuple of byte strings; or None when the observation is not a
        numeric array, or the reward or the flags of no framed type.
    """
    observ, reward, terminated, truncated, info = result
    reward_code = _SCALAR_CODES.get(type(reward))
    terminated_code = _FLAG_CODES.get(type(terminated))
    truncated_code = _FLAG_CODES.get(type(truncated))
    parts = (
        type(observ) is np.ndarray  # pylint: disable=unidiomatic-typecheck
        and type(info) is dict  # pylint: disable=unidiomatic-typecheck
        and terminated_code is not None and truncated_code is not None
        # Integer rewards travel in the float slot only while exact.
        and (reward_code in _FLOAT_CODES or (
            reward_code is not None and -_EXACT <= reward <= _EXACT))
        and array_parts(observ))
    if not parts:
        return None
    flags = (bool(terminated) | bool(truncated) << 1
             | terminated_code << 2 | truncated_code << 3)
    head = _STEP_HEADER.pack(message, flags, reward_code, reward)
    if not info:
        return (head, *parts)
    entries = _pack_info(info)
    if entries is None:
        return (head, *parts, _INFO_PICKLED,
                pickle.dumps(info, PICKLE_PROTOCOL))
    return (head, *parts, _INFO_FRAMED, *entries)


def unpack_step(data):
    """Decode a frame of `pack_step`.

    Args:
        data: Bytes-like object holding the frame.

    Returns:
        Tuple of observation, reward, terminated, truncated and info, of
        the types that were packed.
    """
    _, flags, reward_code, reward = _STEP_HEADER.unpack_from(data)
    observ, offset = unpack_array(data, _STEP_HEADER.size)
    if reward_code:
        reward = _SCALAR_TYPES[reward_code](reward)
    terminated = _FLAG_TYPES[flags >> 2 & 1](flags & 1)
    truncated = _FLAG_TYPES[flags >> 3 & 1](flags & 2)
    if len(data) == offset:
        info = {}
    elif data[offset] == _INFO_FRAMED[0]:
        info = _unpack_info(data, offset + 1)
    else:
        info = pickle.loads(data[offset + 1:])
    return observ, reward, terminated, truncated, info


def pack_step_batch(message, batch):
    """Frame the results of stepping several environments.

    The arrays travel as raw bytes and every info dict as in `pack_step`, so
    a batch of flat infos needs no pickle; only errors and infos that do not
    fit are pickled.

    Args:
        message: Message constant that starts the frame.
        batch: `StepBatch`.

    Returns:
        Tuple of byte strings; or None when a field of the batch is not a
        numeric array.
    """
    arrays = []
    for array in batch[:4]:
        if type(array) is not np.ndarray:  # pylint: disable=C0123
            return None
        parts = array_parts(array)
        if parts is None:
            return None
        arrays += parts
    infos = []
    for info in batch.infos:
        if not info:
            infos.append(_LENGTHS.pack(0))
            continue
        entries = None
        if type(info) is dict:  # pylint: disable=unidiomatic-typecheck
            entries = _pack_info(info)
        if entries is None:
            entries = (_INFO_PICKLED, pickle.dumps(info, PICKLE_PROTOCOL))
        else:
            entries = (_INFO_FRAMED, *entries)
        infos += (_LENGTHS.pack(sum(len(part) for part in entries)),
                  *entries)
    errors = ()
    if batch.errors:
        errors = (pickle.dumps(batch.errors, PICKLE_PROTOCOL),)
    return (_BATCH_HEADER.pack(message, len(batch.infos)), *arrays, *infos,
            *errors)


def unpack_step_batch(data):
    """Decode a frame of `pack_step_batch`.

    Args:
        data: Bytes-like object holding the frame.

    Returns:
        `StepBatch` with writable arrays and info values of the types that
        were packed.
    """
    _, count = _BATCH_HEADER.unpack_from(data)
    offset = _BATCH_HEADER.size
    arrays = []
    for _ in range(4):
        array, offset = unpack_array(data, offset)
        arrays.append(array)
    infos = []
    for _ in range(count):
        (size,), offset = _LENGTHS.unpack_from(data, offset), offset + 4
        end = offset + size
        if not size:
            infos.append({})
        elif data[offset] == _INFO_FRAMED[0]:
            infos.append(_unpack_info(data[:end], offset + 1))
        else:
            infos.append(pickle.loads(data[offset + 1:end]))
        offset = end
    errors = pickle.loads(data[offset:]) if offset < len(data) else {}
    return StepBatch(*arrays, tuple(infos), errors)


def _pack_info(info):
    """Frame parts of a flat info dict, or None when it needs a pickle.

    Infos of physics tasks hold a few NumPy scalars, each of which takes
    longer to pickle than the physics step.
    """
    parts = []
    for key, value in info.items():
        if type(key) is not str:  # pylint: disable=unidiomatic-typecheck
            return None
        key = key.encode()
        code = _SCALAR_CODES.get(type(value))
        if code is None:
            if type(value) is not np.ndarray:  # pylint: disable=C0123
                return None
            array = array_parts(value)
            if array is None:
                return None
            parts += (_ARRAY_ENTRY.pack(_ARRAY_CODE, len(key)), key, *array)
        elif code in _FLOAT_CODES:
            parts += (_FLOAT_ENTRY.pack(code, value, len(key)), key)
        elif _INT64_MIN <= value <= _INT64_MAX:
            parts += (_INTEGER_ENTRY.pack(code, int(value), len(key)), key)
        else:
            return None
    return parts


def _unpack_info(data, offset):
    """Decode the framed entries of an info dict from `offset` on."""
    info = {}
    end = len(data)
    while offset < end:
        code = data[offset]
        if code == _ARRAY_CODE:
            _, size = _ARRAY_ENTRY.unpack_from(data, offset)
            offset += _ARRAY_ENTRY.size + size
            key = str(data[offset - size:offset], 'utf-8')
            info[key], offset = unpack_array(data, offset)
            continue
        entry = _FLOAT_ENTRY if code in _FLOAT_CODES else _INTEGER_ENTRY
        _, value, size = entry.unpack_from(data, offset)
        offset += entry.size + size
        key = str(data[offset - size:offset], 'utf-8')
        info[key] = _SCALAR_TYPES[code](value) if code else value
    return info


class Channel:
    """Length-prefixed messages over the file descriptor of a connection.

    Reading and writing the descriptor directly skips the buffering layers
    of `multiprocessing.connection`, which cost more than a small message.
    A read takes whatever is available, so it may hold the start of the
    next message; `buffered` tells whether a whole one is waiting.
    """

    _LENGTH = struct.Struct('<I')
    _READ_SIZE = 1 << 16

    def __init__(self, conn):
        self._conn = conn  # Keeps the descriptor open.
        self._fd = conn.fileno()
        self._buffer = b''

    def send(self, *parts):
        """Write one message made of the given byte strings."""
        size = sum(len(part) for part in parts)
        data = b''.join((self._LENGTH.pack(size), *parts))
        written = os.write(self._fd, data)
        if written < len(data):
            view = memoryview(data)
            while written < len(data):
                written += os.write(self._fd, view[written:])

    def buffered(self):
        """Whether a whole message was read already."""
        buffer = self._buffer
        return (len(buffer) >= 4
                and len(buffer) >= 4 + self._LENGTH.unpack_from(buffer)[0])

    def receive(self):
        """Read one message, waiting for it.

        Raises:
            EOFError: When the other end closed the connection.

        Returns:
            The message as a bytes-like object.
        """
        buffer = self._buffer
        while len(buffer) < 4:
            buffer = self._read(buffer, self._READ_SIZE)
        end = 4 + self._LENGTH.unpack_from(buffer)[0]
        while len(buffer) < end:
            buffer = self._read(buffer, max(end - len(buffer), 4096))
        if len(buffer) == end:
            self._buffer = b''
        else:
            self._buffer = buffer[end:]
        return memoryview(buffer)[4:end]

    def _read(self, buffer, size):
        chunk = os.read(self._fd, size)
        if not chunk:
            raise EOFError('The other end of the pipe closed.')
        return buffer + chunk if buffer else chunk
