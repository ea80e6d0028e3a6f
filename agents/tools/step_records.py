"""The values of a batch step packed into one float32 row per environment.

A plain graph loop that records many values at every step (a
`tf.TensorArray` each) pays for every one of them at every step: a write,
and the loop's plumbing around the array's flow. Packed, a step is one
concatenation and one write; a compiled function unpacks the rows again.

Packing casts to float32, which holds every value of the dtypes a step
records exactly: bools, small integers (discrete actions), float32, and
float64 actions sampled in float32. Observations of other float dtypes
lose their extra precision, which normalizers drop anyway (they compute in
float32).
"""

import numpy as np
import tensorflow.compat.v1 as tf


def specs(structure):
    """The `tf.TensorSpec` of every tensor of a nested structure.

    Args:
        structure: Nested structure of tensors (or variables) of a batch,
            all with the batch as first dimension and static shapes.

    Returns:
        The structure of specs, which `unpack` takes.
    """
    return tf.nest.map_structure(
        lambda value: tf.TensorSpec(value.shape, value.dtype), structure)


def width(spec_structure):
    """Columns of a packed row of the structure."""
    return sum(
        int(np.prod(spec.shape[1:].as_list(), dtype=np.int64))
        for spec in tf.nest.flatten(spec_structure))


def pack(structure):
    """Concatenate a batch's values into rows of float32.

    Args:
        structure: Nested structure of tensors `[batch, ...]`.

    Returns:
        float32 tensor `[batch, width]`, the values in the order of
        `tf.nest.flatten`.
    """
    columns = [
        tf.reshape(tf.cast(value, tf.float32), [value.shape[0], -1])
        for value in tf.nest.flatten(structure)]
    return tf.concat(columns, 1)


def unpack(rows, spec_structure):
    """The values that `pack` packed into rows.

    Args:
        rows: float32 tensor `[batch, width]`.
        spec_structure: Nested `tf.TensorSpec` of the packed structure.

    Returns:
        The nested structure of tensors of the specs' shapes and dtypes.

    Raises:
        ValueError: When the rows' width is not that of the specs.
    """
    flat = tf.nest.flatten(spec_structure)
    sizes = [
        int(np.prod(spec.shape[1:].as_list(), dtype=np.int64))
        for spec in flat]
    if rows.shape[-1] != sum(sizes):
        raise ValueError(
            f'rows of width {rows.shape[-1]} cannot hold values of '
            f'{sum(sizes)} columns.')
    columns = tf.split(rows, sizes, axis=1) if len(sizes) > 1 else [rows]
    values = [
        tf.cast(tf.reshape(column, spec.shape), spec.dtype)
        for column, spec in zip(columns, flat)]
    return tf.nest.pack_sequence_as(spec_structure, values)
