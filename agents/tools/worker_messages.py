"""The messages between `ExternalProcess` and its worker (`Channel`):
pickles, and steps and their results as binary `frame`s, at a fraction of
the cost. No TensorFlow here: worker processes import this module."""

import copyreg
import functools
import io
import math
import os
import pickle
import struct

import numpy as np

_PICKLE_PROTOCOL = pickle.HIGHEST_PROTOCOL
_LENGTH = struct.Struct('<I')
# A frame: the message and its numbers of arrays, of scalars and of other
# values that are empty dicts; each array's `_array_header` and bytes; the
# scalars' type codes and values; a pickle of the other values, if any.
_HEADER = struct.Struct('<4B')
_SCALARS = (float, np.float64, np.float32, bool, np.bool_, int, np.int64,
            np.int32)
_SCALAR_CODES = {kind: code for code, kind in enumerate(_SCALARS)}
_SCALAR_STRUCTS = [struct.Struct(f'<{count}B{count}d') for count in range(4)]
_EXACT = 2 ** 53  # Integers up to this travel exactly as doubles.


class Message:
    """The messages between parent and worker: integer constants; those of
    frames stand in a frame's first byte, a pickle's is 0x80."""

    ACCESS = 1
    CALL = 2
    RESULT = 3
    EXCEPTION = 4
    CLOSE = 5
    READY = 6
    CALLABLE = 7
    STEP = 8  # A frame of the action.
    STEP_RESULT = 9  # A frame of a step's or a reset's result.
    BATCH_RESULT = 10  # A frame of a `StepBatch`.


def dumps(value):
    """Pickle a message (numbers faster than NumPy's own reduction)."""
    buffer = io.BytesIO()
    _Pickler(buffer, _PICKLE_PROTOCOL).dump(value)
    return buffer.getvalue()


def frame(message, values, arrays, scalars):
    """The frame of a tuple of `arrays` native numeric arrays, then
    `scalars` (at most 3) numbers of `_SCALARS`, then other values (sent
    by `dumps`); None where the values are not."""
    others = values[arrays + scalars:]
    empty = set(map(type, others)) <= {dict} and not any(others)
    parts = [_HEADER.pack(message, arrays, scalars, empty and len(others))]
    for array in values[:arrays]:
        header = type(array) is np.ndarray and _array_header(  # pylint: disable=C0123
            array.dtype, array.shape)
        if not header:
            return None
        parts += (header, array.tobytes())
    if scalars:
        numbers = values[arrays:arrays + scalars]
        codes = tuple(map(_SCALAR_CODES.get, map(type, numbers)))
        if None in codes or max(codes) > 4 and any(
                not -_EXACT <= number <= _EXACT for number in numbers):
            return None
        parts.append(_SCALAR_STRUCTS[scalars].pack(*codes, *numbers))
    if not empty:
        parts.append(dumps(others))
    return b''.join(parts)


def unframe(data):
    """The message and the list of the values of a `frame`."""
    message, arrays, scalars, empty = _HEADER.unpack_from(data)
    offset, values = _HEADER.size, []
    for _ in range(arrays):
        end = offset + 2 + 8 * data[offset + 1]
        dtype, count, shape = _array_layout(data[offset:end])
        # A copy, as the array of the received bytes is read-only.
        values.append(np.frombuffer(data, dtype, count, end).reshape(
            shape).copy())
        offset = end + count * dtype.itemsize
    if scalars:
        numbers = _SCALAR_STRUCTS[scalars].unpack_from(data, offset)
        values += [_SCALARS[code](number) for code, number in zip(
            numbers[:scalars], numbers[scalars:])]
        offset += _SCALAR_STRUCTS[scalars].size
    if empty:
        values += [{} for _ in range(empty)]
    elif offset < len(data):
        values += pickle.loads(memoryview(data)[offset:])
    return message, values


@functools.lru_cache(maxsize=256)
def _array_header(dtype, shape):
    """Frame header of native numeric arrays: dtype char, ndim, shape."""
    if dtype.kind not in 'biufc' or not dtype.isnative:
        return None
    return struct.pack(
        f'<cB{len(shape)}q', dtype.char.encode(), len(shape), *shape)


@functools.lru_cache(maxsize=256)
def _array_layout(header):
    """The dtype, size and shape of an `_array_header`."""
    shape = struct.unpack_from(f'<{header[1]}q', header, 2)
    return np.dtype(chr(header[0])), math.prod(shape), shape


def _reduce_array(array):
    """Reduce a numeric array to its bytes, others as NumPy does."""
    if array.dtype.kind not in 'biufc':
        return array.__reduce_ex__(_PICKLE_PROTOCOL)
    return _array, (array.tobytes(), array.dtype.str, array.shape)


def _array(data, dtype, shape):
    """A writable array of the values of `_reduce_array`."""
    return np.frombuffer(data, dtype).reshape(shape).copy()


class _Pickler(pickle.Pickler):
    """Pickler of `dumps`."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[np.ndarray] = _reduce_array
    dispatch_table.update(dict.fromkeys(
        (np.float64, np.float32, np.int64, np.int32, np.bool_),
        lambda value: (type(value), (value.item(),))))


class Channel:
    """Length-prefixed messages on the descriptor of a connection (`conn`,
    kept open), read and written directly: `multiprocessing.connection`'s
    own reads cost more than a step."""

    def __init__(self, conn):
        self._conn, self._fd, self._buffer = conn, conn.fileno(), b''

    def send(self, data):
        """Write the message `data`, a bytes object."""
        view = memoryview(_LENGTH.pack(len(data)) + data)
        while view:
            view = view[os.write(self._fd, view):]

    def pending(self):
        """Whether a whole message was read already."""
        return 0 < self._size() <= len(self._buffer)

    def receive(self):
        """The next message, waited for; EOFError once the other end closed."""
        while not 0 < (size := self._size()) <= len(self._buffer):
            chunk = os.read(self._fd, max(size - len(self._buffer), 1 << 16))
            if not chunk:
                raise EOFError('The other end of the pipe closed.')
            self._buffer += chunk
        data, self._buffer = self._buffer[4:size], self._buffer[size:]
        return data

    def _size(self):
        """The size of the first message with its length, once known."""
        buffer = self._buffer
        return len(buffer) >= 4 and 4 + _LENGTH.unpack_from(buffer)[0]
