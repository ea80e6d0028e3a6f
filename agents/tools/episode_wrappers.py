"""Wrappers that shape the flow of episodes: resets, repeats, limits.
No TensorFlow here: worker processes import it."""

import copy
import numbers

import gymnasium as gym
import numpy as np

from agents.tools import forwarding

_RANDOM_START_ATTEMPTS = 10


class ForwardingWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A `gymnasium.Wrapper` that reads unknown public attributes from the
    wrapped environment (as in 2017) and records its `constructor_args`."""

    def __init__(self, env, **constructor_args):
        gym.utils.RecordConstructorArgs.__init__(self, **constructor_args)
        gym.Wrapper.__init__(self, env)

    def __getattr__(self, name):
        forwarding.check_public(self, name)
        if name == 'env':
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute 'env'")
        return getattr(self.env, name)

    def _require_reset(self, state):
        """Raise unless `reset` ran, which set `state` (None before)."""
        if state is None:
            raise RuntimeError(
                f'Reset the {type(self).__name__} before stepping it.')


class AutoReset(gym.wrappers.Autoreset, ForwardingWrapper):
    """Gymnasium's "next step" `Autoreset`, forwarding attributes: the step
    after the end of an episode ignores its action and returns the reset's
    observation and info, reward 0.0 and both flags false."""


class ActionRepeat(ForwardingWrapper):
    """Repeat each action `amount` times (a positive integer), summing the
    rewards; repetition stops at the end of an episode."""

    def __init__(self, env, amount):
        super().__init__(env, amount=amount)
        self._amount = checked_integer(amount, 'amount', 'positive')

    def step(self, action):
        """Apply the action up to `amount` times; sum the rewards."""
        total_reward = 0.0
        for _ in range(self._amount):
            observ, reward, terminated, truncated, info = self.env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        return observ, total_reward, terminated, truncated, info


class RandomStart(ForwardingWrapper):
    """Begin each episode with a random number of random actions.

    After a reset, 0 to `max_steps` steps (uniformly) are taken with
    `noop_action` (None: sampled actions), their rewards dropped; an episode
    that ends meanwhile is reset and a new number drawn. The reset's info
    gains `random_start_steps`; a seed given to `reset` seeds the draws too.
    A ValueError on a bad `max_steps` or `noop_action`.
    """

    def __init__(self, env, max_steps, noop_action=None):
        if noop_action is not None and not env.action_space.contains(
                noop_action):
            raise ValueError(
                f'noop_action {noop_action!r} is not in the action space '
                f'{env.action_space}.')
        super().__init__(env, max_steps=max_steps, noop_action=noop_action)
        self._max_steps = checked_integer(
            max_steps, 'max_steps', 'non-negative')
        self._noop_action = noop_action
        # A copy, so that seeding it leaves the environment's space alone.
        self._sample_space = copy.deepcopy(env.action_space)
        self._random = np.random.default_rng()

    def reset(self, *, seed=None, options=None):
        """Reset and take the random steps; a RuntimeError if episodes end."""
        if seed is not None:
            self._random = np.random.default_rng(seed)
            self._sample_space.seed(int(self._random.integers(2 ** 31)))
        for attempt in range(_RANDOM_START_ATTEMPTS):
            observ, info = self.env.reset(
                seed=seed if attempt == 0 else None, options=options)
            steps = int(self._random.integers(0, self._max_steps + 1))
            for _ in range(steps):
                action = self._noop_action
                if action is None:
                    action = self._sample_space.sample()
                observ, _, terminated, truncated, _ = self.env.step(action)
                if terminated or truncated:
                    break
            else:
                return observ, dict(info, random_start_steps=steps)
        raise RuntimeError(
            f'Episodes ended during the random start {_RANDOM_START_ATTEMPTS}'
            f' times; max_steps={self._max_steps} is too large for '
            'episodes this short.')


class LimitDuration(ForwardingWrapper):
    """End episodes by truncation after `duration` steps (a positive
    integer). Stepping an episode that ended raises until `reset`."""

    def __init__(self, env, duration):
        super().__init__(env, duration=duration)
        self._limit = DurationLimit(duration, 1)

    def step(self, action):
        """Step the environment and truncate at the limit."""
        self._limit.check(f'the {type(self).__name__}')
        observ, reward, terminated, truncated, info = self.env.step(action)
        truncated = self._limit.count(terminated, truncated)
        return observ, reward, terminated, bool(truncated[0]), info

    def reset(self, *, seed=None, options=None):
        """Reset the environment and the step count."""
        self._limit.begin(slice(None))
        return self.env.reset(seed=seed, options=options)


class DurationLimit:
    """The step counts of `LimitDuration`, per environment of a batch."""

    def __init__(self, duration, size):
        self.duration = checked_integer(duration, 'duration', 'positive')
        self.steps = np.zeros(size, np.int64)
        self.started = np.zeros(size, bool)
        self.ended = np.zeros(size, bool)

    def check(self, wrapper=None):
        """Raise unless all episodes began and go on (`wrapper`: its name)."""
        if not self.ended.any() and self.started.all():
            return
        index = int(np.argmax(self.ended | ~self.started))
        subject = wrapper or f'environment {index} of the batch'
        if not self.started[index]:
            raise RuntimeError(f'Reset {subject} before stepping it.')
        of = '' if wrapper else ' of ' + subject
        raise RuntimeError(
            f'The episode{of} ended after {self.steps[index]} steps (limit '
            f'{self.duration}); reset the environment before stepping it '
            'again.')

    def count(self, done, truncated):
        """Count a step; the truncated flags, true also at the limit."""
        self.steps += 1
        truncated = truncated | (self.steps >= self.duration)
        self.ended = done | truncated
        return truncated

    def begin(self, rows):
        """Begin new episodes in the rows (an index array or slice)."""
        self.steps[rows] = 0
        self.started[rows] = True
        self.ended[rows] = False


def checked_integer(value, name, kind):
    """`value` as an int; a ValueError unless a `kind` integer."""
    if not is_integer(value) or value < (1 if kind == 'positive' else 0):
        raise ValueError(f'{name} must be a {kind} integer, got {value!r}.')
    return int(value)


def is_integer(value):
    """Whether `value` is an integer (Python's or NumPy's), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
