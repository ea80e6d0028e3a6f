"""Base class of control tasks written as batched TensorFlow operations,
and `StandardTask`, a task behind the standard wrappers."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import episode_wrappers
from agents.tools import space_wrappers


class Task:
    """A control task as pure functions of batched tensors.

    The caller keeps the state, a float32 tensor `[batch, state_size]`;
    every method builds operations that XLA compiles, and random numbers
    come from stateless operations keyed by the caller's `key`. Subclasses
    set the class attributes, build the spaces of gymnasium's environment
    (`_define_spaces`) and implement `step`. Discrete actions are int32
    `[batch]`, Box actions float32 `[batch, *shape]`; time limits are the
    batch's (`InGraphTaskBatch`).
    """

    # The gymnasium id whose dynamics the task follows, and its time limit.
    env_id = None
    max_episode_steps = None
    state_size = None
    # Prefix of the names of the task's operations.
    name = None
    # Bounds of the uniform initial states, one per state component.
    reset_low = None
    reset_high = None

    def __init__(self):
        """Create the spaces of the task."""
        self.observation_space, self.action_space = self._define_spaces()

    def __repr__(self):
        """The class and the gymnasium id."""
        return f'{type(self).__name__}({self.env_id!r})'

    def _define_spaces(self):
        """Return the observation and action spaces of gymnasium's env."""
        raise NotImplementedError

    def reset(self, key, batch_size):
        """Sample initial states, uniform in `[reset_low, reset_high)`.

        Args:
            key: int64 tensor `[2]`, the seed of the stateless random ops.
            batch_size: Python int of the number of states.

        Returns:
            float32 tensor `[batch_size, state_size]`.
        """
        if self.reset_low is None:
            raise NotImplementedError
        with tf.name_scope(f'{self.name}_reset'):
            return uniform(key, batch_size, self.reset_low, self.reset_high)

    def step(self, state, action):
        """Advance every state by one step of the dynamics.

        Args:
            state: float32 tensor `[batch, state_size]`.
            action: Tensor of one action per state (see the class docstring).

        Returns:
            Tuple of the next states, their observations, the float32
            rewards `[batch]` and the bool flags `[batch]` telling which
            episodes terminated (time limits aside).
        """
        raise NotImplementedError

    def observe(self, state):
        """The observations `[batch, *shape]` of states: by default, the
        states."""
        return tf.identity(state, name=f'{self.name}_observe')


class StandardTask(Task):
    """A task behind the standard wrappers, as graph operations.

    `RangeNormalize` (with `normalize_ranges`) maps finite bounds to
    [-1, 1] and `ClipAction` clips Box actions, in float32 as the wrappers
    compute. The state and resets are those of the wrapped task.
    """

    def __init__(self, task, normalize_ranges=True):
        """Wrap a task.

        Args:
          task: `environments.Task` instance or class.
          normalize_ranges: Whether to map finite bounds to [-1, 1].
        """
        if isinstance(task, type):
            task = task()
        self._task = task
        self._normalize = bool(normalize_ranges)
        self.env_id = task.env_id
        self.max_episode_steps = task.max_episode_steps
        self.state_size = task.state_size
        super().__init__()

    def __repr__(self):
        return (
            f'StandardTask({self._task!r}, '
            f'normalize_ranges={self._normalize})')

    @property
    def task(self):
        """The wrapped task."""
        return self._task

    def _define_spaces(self):
        """The spaces of the wrappers; sets the maps and the clip bounds."""
        observation_space = self._task.observation_space
        action_space = self._task.action_space
        self._observ_map = self._action_map = self._clip = None
        if self._normalize:
            # The maps and spaces of the wrappers' `RangeNormalize`.
            (self._observ_map, self._action_map, observation_space,
             action_space) = space_wrappers.range_scales(
                 observation_space, action_space, None, None)
        if isinstance(action_space, gym.spaces.Discrete):
            return observation_space, action_space
        self._clip = (
            action_space.low.astype(np.float32),
            action_space.high.astype(np.float32))
        return observation_space, gym.spaces.Box(
            -np.inf, np.inf, action_space.shape, np.float32)

    def reset(self, key, batch_size):
        """Sample initial states of the wrapped task; see `Task.reset`."""
        return self._task.reset(key, batch_size)

    def step(self, state, action):
        """Clip and map the actions, step, and map the observations; see
        `Task.step`."""
        if self._clip is not None:
            with tf.name_scope('standard_action'):
                low, high = self._clip
                action = tf.minimum(tf.maximum(action, low), high)
                if self._action_map is not None:
                    action = (
                        action * self._action_map.half_range
                        + self._action_map.center)
        state, observ, reward, terminated = self._task.step(state, action)
        return state, self._map_observ(observ), reward, terminated

    def observe(self, state):
        """The mapped observations of states; see `Task.observe`."""
        return self._map_observ(self._task.observe(state))

    def _map_observ(self, observ):
        """Observations mapped as `RangeNormalize` maps them."""
        if self._observ_map is None:
            return observ
        with tf.name_scope('standard_observ'):
            return (
                (observ - self._observ_map.center)
                / self._observ_map.half_range)


def symmetric_box(high):
    """A float32 Box space from `-high` to `high`.

    Args:
        high: Sequence of the upper bounds of the components.

    Returns:
        `gym.spaces.Box` of the shape of `high`.
    """
    high = np.array(high, np.float32)
    return gym.spaces.Box(-high, high, dtype=np.float32)


def uniform(key, batch_size, low, high):
    """Sample float32 values uniformly from `[low, high)` per component.

    Always from the XLA version of the stateless Philox op (one small
    compiled call outside compiled code): XLA's and TensorFlow's kernels draw
    other numbers for the same key, and compiled and plain code must agree.

    Args:
        key: int64 tensor `[2]`, the seed of the stateless random op.
        batch_size: Python int of the rows.
        low: Sequence of the lower bounds of the components.
        high: Sequence of the upper bounds, as long as `low`.

    Raises:
        ValueError: When `batch_size` is not a positive Python int.

    Returns:
        float32 tensor `[batch_size, len(low)]`.
    """
    if not episode_wrappers.is_integer(batch_size) or batch_size < 1:
        raise ValueError(
                f'batch_size must be a Python int >= 1, got {batch_size!r}.')
    return _compiled_uniform(
            tf.convert_to_tensor(key, tf.int64), int(batch_size),
            tuple(float(value) for value in low),
            tuple(float(value) for value in high))


def _uniform(key, batch_size, low, high):
    """Uniform values `[batch_size, len(low)]` in `[low, high)`."""
    unit = tf.random.stateless_uniform(
            [batch_size, len(low)], seed=key, dtype=tf.float32, alg='philox')
    low = tf.constant(low, tf.float32)
    high = tf.constant(high, tf.float32)
    return low + unit * (high - low)


_compiled_uniform = tf.function(_uniform, jit_compile=True)
