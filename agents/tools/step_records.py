"""The values of a batch step packed into one float32 row per environment
(one write per step of a graph loop); float32 holds them exactly."""

import numpy as np
import tensorflow.compat.v1 as tf


def specs(structure):
    """The `tf.TensorSpec`s of a nested structure of tensors, for `unpack`."""
    return tf.nest.map_structure(
        lambda value: tf.TensorSpec(value.shape, value.dtype), structure)


def width(spec_structure):
    """Columns of a packed row of the structure."""
    return sum(_sizes(spec_structure))


def _sizes(spec_structure):
    """Columns of each flattened spec."""
    return [int(np.prod(spec.shape[1:].as_list(), dtype=np.int64))
            for spec in tf.nest.flatten(spec_structure)]


def pack(structure):
    """Concatenate a nested structure of tensors `[batch, ...]` into a
    float32 tensor `[batch, width]`, in the order of `tf.nest.flatten`."""
    columns = [
        tf.reshape(tf.cast(value, tf.float32), [value.shape[0], -1])
        for value in tf.nest.flatten(structure)]
    return tf.concat(columns, 1)


def unpack(rows, spec_structure):
    """The values that `pack` packed into rows, by their nested specs; a
    ValueError where the rows' width is not that of the specs."""
    flat = tf.nest.flatten(spec_structure)
    sizes = _sizes(spec_structure)
    if rows.shape[-1] != sum(sizes):
        raise ValueError(
            f'rows of width {rows.shape[-1]} cannot hold values of '
            f'{sum(sizes)} columns.')
    columns = tf.split(rows, sizes, axis=1) if len(sizes) > 1 else [rows]
    values = [
        tf.cast(tf.reshape(column, spec.shape), spec.dtype)
        for column, spec in zip(columns, flat)]
    return tf.nest.pack_sequence_as(spec_structure, values)
