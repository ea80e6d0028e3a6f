"""Binary frames for the messages between `ExternalProcess` and its worker.

Step actions and results travel as raw array bytes and typed scalars, which
costs less than pickling them; values that do not fit return None from the
packing functions, and the caller pickles them instead. `Channel` carries
length-prefixed messages. This module must not import TensorFlow: worker
processes import it.
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

The arrays `observ`, `reward`, `terminated`, `truncated`, the tuple of
`infos`, and `errors`: a dict from the positions whose step raised (their
rows hold zeros) to `worker_errors.error_details`.
"""


def array_parts(array):
    """Frame parts (byte strings) of a native numeric array, else None."""
    dtype = array.dtype
    if (dtype.kind not in _ARRAY_KINDS or not dtype.isnative
            or array.ndim >= len(_DIMENSIONS)):
        return None
    return (_ARRAY_HEADER.pack(dtype.char.encode(), array.ndim),
            _DIMENSIONS[array.ndim].pack(*array.shape), array.tobytes())


def unpack_array(data, offset):
    """A writable array decoded from `data` at `offset`; the offset after."""
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
    """Frame a message of one int, np.int64 or np.int32; None past 64 bits."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return _INTEGER_ACTION.pack(message, _SCALAR_CODES[type(value)], value)


def unpack_integer(data):
    """Decode a frame of `pack_integer` into the integer it carries."""
    _, code, value = _INTEGER_ACTION.unpack(data)
    return _SCALAR_TYPES[code](value)


def pack_step(message, result):
    """Frame a step's `(observ, reward, terminated, truncated, info)`.

    Returns:
        Tuple of byte strings; or None for values of other types.
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
    return (head, *parts, *_info_parts(info))


def unpack_step(data):
    """Decode a frame of `pack_step` into values of the packed types."""
    _, flags, reward_code, reward = _STEP_HEADER.unpack_from(data)
    observ, offset = unpack_array(data, _STEP_HEADER.size)
    if reward_code:
        reward = _SCALAR_TYPES[reward_code](reward)
    terminated = _FLAG_TYPES[flags >> 2 & 1](flags & 1)
    truncated = _FLAG_TYPES[flags >> 3 & 1](flags & 2)
    info = _read_info(data, offset, len(data))
    return observ, reward, terminated, truncated, info


def pack_step_batch(message, batch):
    """Frame a `StepBatch`; errors and infos that do not fit are pickled.

    Returns:
        Tuple of byte strings; or None when an array field is not numeric.
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
        entries = _info_parts(info)
        infos += (_LENGTHS.pack(sum(len(part) for part in entries)),
                  *entries)
    errors = ()
    if batch.errors:
        errors = (pickle.dumps(batch.errors, PICKLE_PROTOCOL),)
    return (_BATCH_HEADER.pack(message, len(batch.infos)), *arrays, *infos,
            *errors)


def unpack_step_batch(data):
    """Decode a frame of `pack_step_batch` into a `StepBatch`."""
    _, count = _BATCH_HEADER.unpack_from(data)
    offset = _BATCH_HEADER.size
    arrays = []
    for _ in range(4):
        array, offset = unpack_array(data, offset)
        arrays.append(array)
    infos = []
    for _ in range(count):
        (size,), offset = _LENGTHS.unpack_from(data, offset), offset + 4
        infos.append(_read_info(data, offset, offset + size))
        offset += size
    errors = pickle.loads(data[offset:]) if offset < len(data) else {}
    return StepBatch(*arrays, tuple(infos), errors)


def _info_parts(info):
    """Parts of a non-empty info: framed where it fits, else pickled."""
    entries = None
    if type(info) is dict:  # pylint: disable=unidiomatic-typecheck
        entries = _pack_info(info)
    if entries is None:
        return _INFO_PICKLED, pickle.dumps(info, PICKLE_PROTOCOL)
    return (_INFO_FRAMED, *entries)


def _read_info(data, offset, end):
    """The info that `_info_parts` put in `data[offset:end]`."""
    if offset == end:
        return {}
    if data[offset] == _INFO_FRAMED[0]:
        return _unpack_info(data[:end], offset + 1)
    return pickle.loads(data[offset + 1:end])


def _pack_info(info):
    """Frame parts of a flat info dict, or None when it needs a pickle."""
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

    The descriptor is read and written directly, without the buffering of
    `multiprocessing.connection`, which costs more than a small message.
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
        """Read one message (bytes-like), waiting for it.

        Raises:
            EOFError: When the other end closed the connection.
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
