"""Wrappers that shape the flow of episodes: resets, repeats, limits.

This module must not import TensorFlow: worker processes import it.
"""

import copy
import numbers

import gymnasium as gym
import numpy as np

from agents.tools import forwarding

_RANDOM_START_ATTEMPTS = 10


class ForwardingWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A `gymnasium.Wrapper` that forwards unknown public attributes.

    Attributes the wrapper does not define are read from the wrapped
    environment, as wrappers did in the 2017 framework (gymnasium 1.0 dropped
    this). The base of every wrapper in `agents.tools.wrappers`. Each
    wrapper passes its constructor arguments on, so that `env.spec` can
    recreate the wrapped environment as gymnasium's own wrappers allow (its
    `check_env` requires it).

    The wrappers keep gymnasium's arguments and results: `step(action)`
    returns a tuple of observation, reward, terminated, truncated and info,
    and `reset(*, seed=None, options=None)` a tuple of observation and info.
    Their docstrings say what they change. Wrappers that keep state of the
    episode raise a RuntimeError when stepped before their first reset.
    """

    def __init__(self, env, **constructor_args):
        """Wrap an environment.

        Args:
            env: The environment to wrap.
            **constructor_args: The wrapper's other constructor arguments,
                recorded for `env.spec`.
        """
        gym.utils.RecordConstructorArgs.__init__(self, **constructor_args)
        gym.Wrapper.__init__(self, env)

    def __getattr__(self, name):
        forwarding.check_public(self, name)
        if name == 'env':
            # Missing until `__init__` ran.
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute 'env'")
        return getattr(self.env, name)

    def _require_reset(self, state):
        """Raise unless `reset` ran, which set `state` (None before)."""
        if state is None:
            raise RuntimeError(
                f'Reset the {type(self).__name__} before stepping it.')


class AutoReset(ForwardingWrapper):
    """Reset the environment automatically after an episode ended.

    The step that ends an episode is returned as it is. The next call to
    `step` ignores its action, resets the environment, and returns the first
    observation of the new episode with reward 0.0, `terminated` and
    `truncated` false, and the reset's info. This is gymnasium's "next step"
    autoreset: every step's observation follows from the one before, and the
    final observation of an episode is never replaced.
    """

    def __init__(self, env):
        """Wrap an environment.

        Args:
            env: Environment to reset automatically.
        """
        super().__init__(env)
        self._done = False

    def step(self, action):
        """Step the environment, or reset it when the episode ended.

        Args:
            action: Action for the environment; ignored on the reset step.
        """
        if self._done:
            self._done = False
            observ, info = self.env.reset()
            return observ, 0.0, False, False, info
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._done = bool(terminated or truncated)
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        """Reset the environment and forget that an episode ended."""
        self._done = False
        return self.env.reset(seed=seed, options=options)


class ActionRepeat(ForwardingWrapper):
    """Repeat each action several times and sum the rewards.

    Repetition stops early at the end of an episode; the returned
    observation, flags and info are those of the last step taken.
    """

    def __init__(self, env, amount):
        """Wrap an environment.

        Args:
            env: Environment to step.
            amount: Positive number of times to apply each action.

        Raises:
            ValueError: When `amount` is not a positive integer.
        """
        if not _is_integer(amount) or amount < 1:
            raise ValueError(
                f'amount must be a positive integer, got {amount!r}.')
        super().__init__(env, amount=amount)
        self._amount = int(amount)

    def step(self, action):
        """Apply the action up to `amount` times.

        Returns:
            Tuple of the last observation, the summed reward, the last
            terminated and truncated flags, and the last info.
        """
        total_reward = 0.0
        for _ in range(self._amount):
            observ, reward, terminated, truncated, info = self.env.step(action)
            total_reward += reward
            if terminated or truncated:
                break
        return observ, total_reward, terminated, truncated, info


class RandomStart(ForwardingWrapper):
    """Begin each episode with a random number of random actions.

    After every reset, a number of steps drawn uniformly from 0 to
    `max_steps` is taken with actions sampled from the action space, or with
    a fixed no-op action. Their rewards are dropped. Should the episode end
    during these steps, the environment is reset and a new number drawn.
    The reset's info gains the key `random_start_steps`. A seed given to
    `reset` seeds these draws too, so seeded episodes repeat exactly.
    """

    def __init__(self, env, max_steps, noop_action=None):
        """Wrap an environment.

        Args:
            env: Environment to start randomly.
            max_steps: Largest number of random steps after a reset.
            noop_action: Action to repeat instead of random actions; None
                samples from the action space.

        Raises:
            ValueError: When `max_steps` is not a non-negative integer or
                `noop_action` is not in the action space.
        """
        if not _is_integer(max_steps) or max_steps < 0:
            raise ValueError(
                f'max_steps must be a non-negative integer, got '
                f'{max_steps!r}.')
        if noop_action is not None and not env.action_space.contains(
                noop_action):
            raise ValueError(
                f'noop_action {noop_action!r} is not in the action space '
                f'{env.action_space}.')
        super().__init__(env, max_steps=max_steps, noop_action=noop_action)
        self._max_steps = int(max_steps)
        self._noop_action = noop_action
        # A copy, so that seeding our samples leaves the environment's space
        # and its random state alone.
        self._sample_space = copy.deepcopy(env.action_space)
        self._random = np.random.default_rng()

    def reset(self, *, seed=None, options=None):
        """Reset the environment and take the random steps.

        Args:
            seed: Seed for the environment and the random steps, or None.
            options: Options for the environment's reset, or None.

        Raises:
            RuntimeError: When episodes keep ending during the random steps.
        """
        if seed is not None:
            self._random = np.random.default_rng(seed)
            self._sample_space.seed(int(self._random.integers(2 ** 31)))
        for attempt in range(_RANDOM_START_ATTEMPTS):
            observ, info = self.env.reset(
                seed=seed if attempt == 0 else None, options=options)
            steps = int(self._random.integers(0, self._max_steps + 1))
            for _ in range(steps):
                if self._noop_action is None:
                    action = self._sample_space.sample()
                else:
                    action = self._noop_action
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
    """End episodes by truncation after a number of steps.

    The step that reaches the limit sets `truncated`. Stepping an episode
    that ended, by the limit or otherwise, raises an error until `reset`.
    """

    def __init__(self, env, duration):
        """Wrap an environment.

        Args:
            env: Environment to limit.
            duration: Positive number of steps per episode.

        Raises:
            ValueError: When `duration` is not a positive integer.
        """
        checked = check_duration(duration)
        super().__init__(env, duration=duration)
        self._duration = checked
        self._step = None
        self._ended = False

    def step(self, action):
        """Step the environment and truncate at the limit.

        Raises:
            RuntimeError: When called before `reset` or after the episode
                ended.
        """
        self._require_reset(self._step)
        if self._ended:
            raise RuntimeError(
                f'The episode ended after {self._step} steps (limit '
                f'{self._duration}); reset the environment before stepping '
                'it again.')
        observ, reward, terminated, truncated, info = self.env.step(action)
        self._step += 1
        if self._step >= self._duration:
            truncated = True
        self._ended = bool(terminated or truncated)
        return observ, reward, terminated, truncated, info

    def reset(self, *, seed=None, options=None):
        """Reset the environment and the step count."""
        self._step = 0
        self._ended = False
        return self.env.reset(seed=seed, options=options)


def check_duration(duration):
    """The step limit of `LimitDuration`, per environment or per batch.

    Args:
        duration: Positive number of steps per episode.

    Raises:
        ValueError: When `duration` is not a positive integer.

    Returns:
        The duration as an int.
    """
    if not _is_integer(duration) or duration < 1:
        raise ValueError(
            f'duration must be a positive integer, got {duration!r}.')
    return int(duration)


def _is_integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
