"""Where a global step falls in the phases of a `Loop` (which take turns
in order; a phase step counts one phase's steps over all its turns), in
Python and graph; an interval fires on the run that reaches its multiple."""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

Location = collections.namedtuple('Location', 'epoch, index, phase_step')


def phase_steps_at(global_step, steps):
    """List of the steps each phase made up to a global step (the steps of
    all phases), of the `steps` of each turn of each phase in order."""
    epoch, within = divmod(int(global_step), sum(steps))
    made = []
    for turn in steps:
        made.append(epoch * turn + min(within, turn))
        within = max(0, within - turn)
    return made


def find_phase(global_step, steps):
    """Index, epoch and steps into the turn of the phase at a global step."""
    epoch, steps_in = divmod(global_step, sum(steps))
    for index, turn in enumerate(steps):
        if steps_in < turn:
            return index, epoch, steps_in
        steps_in -= turn
    raise AssertionError('The phases cover every step of an epoch.')


def fires(phase_step, batch, every):
    """Whether a run over `batch` steps from `phase_step` reaches a multiple."""
    if not every:
        return False
    return (phase_step + batch) // every > phase_step // every


def locate(global_step, steps):
    """The `Location` of an int64 global step tensor, as `find_phase`."""
    sizes = np.array(steps, np.int64)
    ends = np.cumsum(sizes)
    epoch, steps_in = global_step // ends[-1], global_step % ends[-1]
    index = tf.reduce_sum(tf.cast(steps_in >= ends[:-1], tf.int32))
    phase_step = (
        epoch * tf.gather(sizes, index) + steps_in -
        tf.gather(ends - sizes, index))
    return Location(epoch, index, phase_step)


def lookup(values, index):
    """The int64 value of the phase at an index tensor."""
    return tf.gather(np.array(values, np.int64), index)


def fires_in_graph(phase_step, batch, intervals, index):
    """`fires` of the phase at an index tensor; None never fires."""
    every = lookup([interval or 1 for interval in intervals], index)
    enabled = tf.gather([bool(interval) for interval in intervals], index)
    reached = (phase_step + batch) // every > phase_step // every
    return tf.logical_and(enabled, reached)


def phase_value(key, feeds, index):
    """A variable's value in the phase at an index tensor: the feed of
    the phase (dicts by `ref()`), else the variable's current value."""
    variable = key.deref()
    dtype = variable.dtype.base_dtype.as_numpy_dtype
    shape = variable.shape.as_list()
    given = [key in feed for feed in feeds]
    table = np.stack([
        np.asarray(feed[key], dtype) if present else np.zeros(shape, dtype)
        for feed, present in zip(feeds, given)])
    return tf.where_v2(
        tf.gather(given, index), tf.gather(table, index),
        variable.read_value())
