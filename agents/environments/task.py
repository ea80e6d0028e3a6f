"""Base class of control tasks written as batched TensorFlow operations,
and `StandardTask`, a task behind the standard wrappers."""

import numbers

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import space_wrappers


class Task:
    """A control task as pure functions of batched tensors.

    A task holds no state of its own: its state is a float32 tensor
    `[batch, state_size]` that the caller keeps (in variables, or in the
    loop variables of a compiled loop), and every method builds operations
    that compile under `tf.function(jit_compile=True)`. Random numbers come
    only from stateless operations keyed by the caller's `key`, so the same
    key gives the same numbers, compiled or not.

    Subclasses set the class attributes `env_id` (the gymnasium id whose
    dynamics they follow), `max_episode_steps` (its time limit in
    gymnasium's registry), `state_size`, `name` and the bounds of the
    initial states `reset_low` and `reset_high`, build `observation_space`
    and `action_space` like gymnasium's environment, and implement `step`;
    `reset` samples uniform states in `[reset_low, reset_high)` and
    `observe` returns the states unless a task overrides them. Time limits
    are not part of a task: a batch counts the steps of each episode (see
    `InGraphTaskBatch`).

    Actions of a Discrete action space are int32 tensors `[batch]`, those of
    a Box action space float32 tensors `[batch, *shape]`.
    """

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
        return f'{type(self).__name__}({self.env_id!r})'

    def _define_spaces(self):
        """Return the observation and action spaces of gymnasium's env."""
        raise NotImplementedError

    def reset(self, key, batch_size):
        """Sample initial states as gymnasium's `reset` does.

        Every component is uniform in `[reset_low, reset_high)`, the class
        attributes of the task; a task that samples otherwise overrides
        this method.

        Args:
            key: int64 tensor `[2]`, the seed of the stateless random ops,
                such as `(seed, counter)`.
            batch_size: Python int of the number of states (a static
                shape, as compiled code needs).

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
        """Return the observations of states: by default, the states.

        Args:
            state: float32 tensor `[batch, state_size]`.

        Returns:
            float32 tensor `[batch, *observation_space.shape]`.
        """
        return tf.identity(state, name=f'{self.name}_observe')


class StandardTask(Task):
    """A task behind the standard wrappers of the configured environments.

    Graph operations with the effect of `RangeNormalize` (with
    `normalize_ranges`) and `ClipAction` of `env_construction`: observations
    of finite bounds map to [-1, 1] as `(observ - center) / half_range`,
    Box actions are clipped to the (mapped) bounds and map back as
    `action * half_range + center`, in float32 as the wrappers compute.
    Dimensions with an infinite or empty range stay as they are. The state
    and resets are those of the wrapped task.
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
        """Clip and map the actions, step, and map the observations.

        Args:
          state: float32 tensor `[batch, state_size]`.
          action: Actions in the wrapped action space.

        Returns:
          Tuple of the next states, their mapped observations, the rewards
          and the terminated flags.
        """
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

    The numbers come from TensorFlow's stateless Philox generator keyed by
    `key`, and always from its XLA version: XLA's stateless random ops draw
    other numbers than TensorFlow's kernels for the same key, and compiled
    and plain code must agree. Outside a compiled function this is one
    small compiled call; inside one it is inlined.

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
    if (not isinstance(batch_size, numbers.Integral) or
            isinstance(batch_size, bool) or batch_size < 1):
        raise ValueError(
                f'batch_size must be a Python int >= 1, got {batch_size!r}.')
    return _compiled_uniform(
            tf.convert_to_tensor(key, tf.int64), int(batch_size),
            tuple(float(value) for value in low),
            tuple(float(value) for value in high))


def _uniform(key, batch_size, low, high):
    unit = tf.random.stateless_uniform(
            [batch_size, len(low)], seed=key, dtype=tf.float32, alg='philox')
    low = tf.constant(low, tf.float32)
    high = tf.constant(high, tf.float32)
    return low + unit * (high - low)


_compiled_uniform = tf.function(_uniform, jit_compile=True)
