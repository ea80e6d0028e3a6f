"""The check of a batch of actions against the action space of one env."""

import gymnasium as gym
import numpy as np

_NUMERIC_KINDS = 'biuf'


def check_actions(actions, space, count):
    """Validate a batch of actions against the action space of one env.

    Args:
        actions: Batch of actions, one per environment.
        space: Action space of one environment.
        count: Number of environments in the batch.

    Raises:
        ValueError: When the batch size, dtype or shape is wrong or an
            action lies outside the action space, naming its environment.

    Returns:
        Box actions as an array of the space's dtype, others as a list
        (Discrete ones of Python ints).
    """
    box = isinstance(space, gym.spaces.Box)
    if not box and not isinstance(space, gym.spaces.Discrete):
        return _check_other(list(actions), space, count)
    array = np.asarray(actions)
    if array.ndim == 0 or len(array) != count or (
            not box and array.ndim != 1):
        raise ValueError(
            f'Expected a batch of {count} actions, one per '
            f'environment, got {_size(array)}.')
    if box:
        if array.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(
                f'Expected numeric actions, got dtype {array.dtype}.')
        if array.shape[1:] != space.shape:
            raise ValueError(
                f'Expected actions of shape {(count,) + space.shape}, '
                f'got {array.shape}.')
        # Comparisons with NaN are false, so NaN fails this check too.
        valid = (array >= space.low) & (array <= space.high)
    else:
        if array.dtype.kind not in 'iu':
            raise ValueError(
                f'Expected integer actions for {space}, got dtype '
                f'{array.dtype}: {array!r}.')
        start = int(space.start)
        valid = (array >= start) & (array < start + int(space.n))
    if not valid.all():
        index = int(np.argmin(valid.reshape(count, -1).all(1)))
        raise ValueError(
            f'Action {array[index]!r} of environment {index} is '
            f'outside the action space {space}.')
    return array.astype(space.dtype, copy=False) if box else array.tolist()


def _check_other(actions, space, count):
    """Check actions of a space that is neither Box nor Discrete."""
    if len(actions) != count:
        raise ValueError(
            f'Expected a batch of {count} actions, one per environment, '
            f'got {len(actions)}.')
    for index, action in enumerate(actions):
        if not space.contains(action):
            raise ValueError(
                f'Action {action!r} of environment {index} is outside '
                f'the action space {space}.')
    return actions


def _size(array):
    if array.ndim == 0:
        return f'the scalar {array!r}'
    return f'{len(array)}'
