"""Wrappers that transform spaces and values: history, deltas, ranges.
No TensorFlow here: worker processes import it."""

import gymnasium as gym
import numpy as np

from agents.tools import episode_wrappers
from agents.tools.episode_wrappers import ForwardingWrapper


class FrameHistory(ForwardingWrapper):
    """Observe a stack of past observations at the given offsets (0: the
    current, 1: the one before; the first of an episode fills the past), of
    shape `(len(past_indices),) + shape`, or with `flatten` merged into the
    first axis. A ValueError unless `past_indices` is a non-empty sequence
    of non-negative integers and the observation space a Box."""

    def __init__(self, env, past_indices, flatten):
        past_indices = tuple(past_indices)
        if not past_indices or not all(
                episode_wrappers.is_integer(index) and index >= 0
                for index in past_indices):
            raise ValueError(
                'past_indices must be a non-empty sequence of non-negative '
                f'integers, got {past_indices!r}.')
        space = _require_box(env.observation_space, 'FrameHistory')
        super().__init__(env, past_indices=past_indices, flatten=flatten)
        self._past_indices = tuple(int(index) for index in past_indices)
        self._capacity = max(self._past_indices) + 1
        self._flatten = flatten
        self._dtype = space.dtype
        self._buffer = None
        self._step = 0
        low, high = (
            self._select(np.broadcast_to(
                bound, (self._capacity,) + space.shape), 0)
            for bound in (space.low, space.high))
        self.observation_space = gym.spaces.Box(low, high, dtype=space.dtype)

    def step(self, action):
        """Step the environment and observe the history."""
        self._require_reset(self._buffer)
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        self._buffer[self._step % self._capacity] = observ
        return (self._select(self._buffer, self._step), reward, terminated,
                truncated, info)

    def reset(self, *, seed=None, options=None):
        """Reset the environment and fill the history with its observation."""
        observ, info = self.env.reset(seed=seed, options=options)
        observ = np.asarray(observ, self._dtype)
        self._buffer = np.repeat(observ[None], self._capacity, 0)
        self._step = 0
        return self._select(self._buffer, 0), info

    def _select(self, buffer, step):
        """The frames of the offsets at a step, from a buffer of them."""
        # Indexing with a list copies, so earlier observations stay intact.
        rows = [(step - index) % self._capacity for index in self._past_indices]
        frames = buffer[rows]
        if self._flatten:
            frames = frames.reshape((-1,) + frames.shape[2:])
        return frames


class FrameDelta(ForwardingWrapper):
    """Observe the difference of each observation to the previous one (zero
    at first); integer deltas in a signed type of twice the width, which
    cannot overflow. A ValueError unless the observation space is a Box."""

    def __init__(self, env):
        space = _require_box(env.observation_space, 'FrameDelta')
        super().__init__(env)
        self._dtype = _delta_dtype(space.dtype)
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        self.observation_space = gym.spaces.Box(
            _clip_bounds(low - high, self._dtype),
            _clip_bounds(high - low, self._dtype), dtype=self._dtype)
        self._last = None

    def step(self, action):
        """Step the environment and observe the change."""
        self._require_reset(self._last)
        observ, reward, terminated, truncated, info = self.env.step(action)
        observ = np.asarray(observ, self._dtype)
        delta, self._last = observ - self._last, observ
        return delta, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        """Reset the environment and observe a zero delta."""
        observ, info = self.env.reset(seed=seed, options=options)
        self._last = np.array(observ, self._dtype)
        return np.zeros_like(self._last), info


class ValueMap:
    """What a standard wrapper does to spaces and values, of one environment
    (`MapWrapper`) or a batch (`batch_wrappers`)."""

    def __init__(self, env):
        self.observation_space = env.observation_space
        self.action_space = env.action_space

    def action(self, action):
        """The action for the wrapped environment."""
        return action

    def observ(self, observ):
        """The observation for the caller."""
        return observ

    def reward(self, reward):
        """The reward for the caller."""
        return reward


class MapWrapper(ForwardingWrapper):
    """A wrapper that applies its class's `map_class`, built with its args."""

    map_class = ValueMap

    def __init__(self, env, **constructor_args):
        value_map = self.map_class(env, **constructor_args)
        super().__init__(env, **constructor_args)
        self._map = value_map
        self.observation_space = value_map.observation_space
        self.action_space = value_map.action_space

    def step(self, action):
        """Map the action, step the environment and map the outcome."""
        observ, reward, terminated, truncated, info = self.env.step(
            self._map.action(action))
        return (self._map.observ(observ), self._map.reward(reward),
                terminated, truncated, info)

    def reset(self, *, seed=None, options=None):
        """Reset the environment and map its observation."""
        observ, info = self.env.reset(seed=seed, options=options)
        return self._map.observ(observ), info


class RangeMap(ValueMap):
    """The maps of `RangeNormalize`, with its arguments."""

    def __init__(self, env, observ=None, action=None):
        super().__init__(env)
        (self._observ, self._action, self.observation_space,
         self.action_space) = range_scales(
             env.observation_space, env.action_space, observ, action)

    def action(self, action):
        """The action mapped from [-1, 1] to the bounds."""
        return self._action.denormalize(action) if self._action else action

    def observ(self, observ):
        """The observation mapped from the bounds to [-1, 1]."""
        return self._observ.normalize(observ) if self._observ else observ


class RangeNormalize(MapWrapper):
    """Map finite Box bounds of observations and actions to [-1, 1].

    Dimensions with an infinite or empty range stay as they are. Integer
    observations become float32. Actions outside [-1, 1] map linearly
    outside the bounds (`ClipAction` around this wrapper clips them). A
    ValueError on a non-bool switch, or True for another space.

    Args:
        observ: Whether to normalise observations; None: where the space
            is a Box with finite bounds somewhere.
        action: As `observ`, for a floating point Box of actions.
    """

    map_class = RangeMap

    def __init__(self, env, observ=None, action=None):
        super().__init__(env, observ=observ, action=action)


def range_scales(observation_space, action_space, observ, action):
    """The `_Scale`s (or None) and spaces of `RangeNormalize`."""
    for name, value in (('observ', observ), ('action', action)):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise ValueError(
                f'{name} must be None, True or False, got {value!r}.')
    observ_scale = action_scale = None
    space = observation_space
    if observ or (observ is None and _normalizable(space)):
        space = _require_box(space, 'RangeNormalize(observ=True)')
        dtype = (space.dtype if space.dtype.kind == 'f'
                 else np.dtype(np.float32))
        observ_scale = _Scale(space, dtype)
        observation_space = observ_scale.normalized_space()
    space = action_space
    if action or (action is None and _normalizable(space)
                  and space.dtype.kind == 'f'):
        space = _require_box(space, 'RangeNormalize(action=True)')
        if space.dtype.kind != 'f':
            raise ValueError(
                'RangeNormalize(action=True) needs a floating point Box '
                f'action space, got {space}.')
        action_scale = _Scale(space, space.dtype)
        action_space = action_scale.normalized_space()
    return observ_scale, action_scale, observation_space, action_space


class ClipMap(ValueMap):
    """The map of `ClipAction`."""

    def __init__(self, env):
        super().__init__(env)
        space = _require_box(env.action_space, 'ClipAction')
        self.low, self.high = space.low, space.high
        self._dtype = space.dtype
        self.action_space = gym.spaces.Box(
            -np.inf, np.inf, space.shape, space.dtype)

    def action(self, action):
        """The action, or a batch of them, clipped in the space's dtype."""
        # Two ufuncs cost a fraction of np.clip's Python overhead, which
        # shows at thousands of steps per second; NaN stays NaN either way.
        action = np.minimum(np.maximum(action, self.low), self.high)
        return action.astype(self._dtype, copy=False)


class ClipAction(MapWrapper):
    """Clip actions to the bounds of the Box action space (a ValueError for
    others); its own is unbounded, so Gaussian samples pass batch checks."""

    map_class = ClipMap


class Map32Bit(ValueMap):
    """The maps of `ConvertTo32Bit`."""

    def __init__(self, env):
        super().__init__(env)
        space = env.observation_space
        self._dtype = dtype = _CONVERSIONS.get(getattr(space, 'dtype', None))
        if dtype and isinstance(space, gym.spaces.Discrete):
            self.observation_space = gym.spaces.Discrete(
                int(space.n), start=int(space.start), dtype=dtype)
        elif dtype and isinstance(space, gym.spaces.Box):
            self.observation_space = gym.spaces.Box(
                _clip_bounds(space.low, dtype), _clip_bounds(space.high, dtype),
                dtype=dtype)

    def observ(self, observ):
        """The observation, or a batch of them, in the space's 32 bits."""
        return observ if self._dtype is None else self._dtype.type(observ)

    def reward(self, reward):
        """The reward, or a batch of them, as float32."""
        return np.float32(reward)


class ConvertTo32Bit(MapWrapper):
    """Convert 64-bit observations, their space and rewards to 32 bits."""

    map_class = Map32Bit


class CacheSpaces(MapWrapper):
    """Read the observation and action space once and keep them."""


class _Scale:
    """Affine map between finite Box bounds and [-1, 1], per dimension."""

    def __init__(self, space, dtype):
        self._low = space.low.astype(np.float64)
        self._high = space.high.astype(np.float64)
        with np.errstate(invalid='ignore', over='ignore'):
            half_range = (self._high - self._low) / 2
            center = self._low + half_range
        # The mapped dimensions; the others map through 0 and 1.
        self.mask = np.isfinite(half_range) & (half_range > 0)
        self._space = space
        self._dtype = dtype
        self.center = np.where(self.mask, center, 0).astype(dtype)
        self.half_range = np.where(self.mask, half_range, 1).astype(dtype)

    def normalized_space(self):
        """The Box with [-1, 1] in place of the mapped bounds."""
        low = np.where(self.mask, -1.0, self._low).astype(self._dtype)
        high = np.where(self.mask, 1.0, self._high).astype(self._dtype)
        return gym.spaces.Box(low, high, dtype=self._dtype)

    def normalize(self, value):
        """Map a value from the bounds to [-1, 1]."""
        value = np.asarray(value, self._dtype)
        return ((value - self.center) / self.half_range).astype(
            self._dtype, copy=False)

    def denormalize(self, value):
        """Map a value from [-1, 1] to the bounds, in the space's dtype."""
        value = np.asarray(value, self._dtype)
        return (value * self.half_range + self.center).astype(
            self._space.dtype, copy=False)


def _require_box(space, user):
    """The space; a ValueError naming `user` unless it is a Box."""
    if not isinstance(space, gym.spaces.Box):
        raise ValueError(f'{user} needs a Box space, got {space}.')
    return space


def _normalizable(space):
    """Whether a space is a Box with finite, distinct bounds somewhere."""
    return isinstance(space, gym.spaces.Box) and bool(
        _Scale(space, np.float64).mask.any())


def _delta_dtype(dtype):
    """A type that holds the difference of two values of `dtype`."""
    if dtype.kind == 'f':
        return dtype
    if dtype.kind == 'b':
        return np.dtype(np.int8)
    return np.dtype(f'int{min(64, 16 * dtype.itemsize)}')


_CONVERSIONS = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
}


def _clip_bounds(bounds, dtype):
    """Cast bounds to a narrower type, keeping infinities, clipping others."""
    if dtype.kind == 'f':
        largest = float(np.finfo(dtype).max)
        clipped = np.clip(bounds, -largest, largest)
        return np.where(np.isinf(bounds), bounds, clipped).astype(dtype)
    info = np.iinfo(dtype)
    return np.clip(bounds, info.min, info.max).astype(dtype)
