"""Deterministic environment double for unit and end-to-end tests."""

import gymnasium as gym
import numpy as np


class MockEnvironment(gym.Env):
    """Environment with fixed episode durations and step-counting observations.

    After `k` steps of an episode the observation is filled with `k` and the
    step's reward is `k`, so an episode of duration `d` scores `d * (d + 1) /
    2`. Durations cycle through `durations`. It records the `actions`, and
    the `steps`, `durations` and reset `seeds` of every episode. The 2017
    arguments `(observ_shape, action_shape, min_duration, max_duration)`
    draw each duration uniformly, seeded with 0 or the seed of `reset`.
    """

    metadata = {'render_modes': ['rgb_array'], 'render_fps': 30}
    # Its stepping state is in plain attributes (see `tools.env_state`);
    # `steps` and `actions` record calls and are left out.
    state_in_attributes = True

    def __init__(
            self, observ_shape=(2,), action_shape=(3,), min_duration=None,
            max_duration=None, *, durations=(5,), truncate=False,
            discrete=None, render_mode=None):
        """Create a mock environment; a ValueError on a duration that is not
        a positive integer, or `min_duration` and `max_duration` that are no
        range.

        Args:
            action_shape: Shape of the continuous actions in [-1, 1].
            durations: Episode lengths, one per episode in turn.
            truncate: Whether episodes end by truncation, not termination.
            discrete: Number of discrete actions, instead of continuous ones.
        """
        self._random = None
        if min_duration is not None or max_duration is not None:
            if min_duration is None or max_duration is None or not (
                    1 <= min_duration <= max_duration):
                raise ValueError(
                        'min_duration and max_duration must be positive '
                        'integers with min_duration <= max_duration, got '
                        f'{min_duration!r} and {max_duration!r}')
            durations = range(int(min_duration), int(max_duration) + 1)
            self._random = np.random.RandomState(0)
        durations = tuple(durations)
        if not durations or any(int(d) != d or d < 1 for d in durations):
            raise ValueError(
                    f'durations must be positive integers, got {durations!r}')
        self._durations = tuple(int(d) for d in durations)
        self._truncate = truncate
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(
                -np.inf, np.inf, observ_shape, np.float32)
        if discrete:
            self.action_space = gym.spaces.Discrete(discrete)
        else:
            self.action_space = gym.spaces.Box(
                -1.0, 1.0, action_shape, np.float32)
        self.steps = []
        self.durations = []
        self.actions = []
        self.seeds = []
        self._episode = -1
        self._step = None

    @property
    def duration(self):
        """Length of the current episode, or None before the first reset."""
        return self.durations[-1] if self.durations else None

    def reset(self, *, seed=None, options=None):
        """Start a new episode and return its first observation and info."""
        del options
        self.seeds.append(seed)
        self._episode += 1
        self._step = 0
        self.steps.append(0)
        if self._random is None:
            duration = self._durations[self._episode % len(self._durations)]
        else:
            if seed is not None:
                self._random.seed(seed)
            duration = self._durations[
                    self._random.randint(len(self._durations))]
        self.durations.append(duration)
        return self._current_observ(), {}

    def step(self, action):
        """Advance the episode by one step; the action is only recorded. A
        RuntimeError before reset or after the episode ended."""
        if self._step is None:
            raise RuntimeError('Reset the MockEnvironment before stepping it.')
        if self._step >= self.duration:
            raise RuntimeError(
                    f'Episode {self._episode} ended after {self.duration} '
                    'steps; reset the MockEnvironment before stepping it '
                    'again.')
        self.actions.append(np.array(action))
        self._step += 1
        self.steps[-1] += 1
        ended = self._step >= self.duration
        return (self._current_observ(), float(self._step),
                ended and not self._truncate, ended and self._truncate, {})

    def render(self):
        """A small frame whose pixels encode the step in the episode."""
        frame = np.zeros((16, 16, 3), np.uint8)
        frame[...] = min(255, 10 * (self._step or 0))
        return frame

    def _current_observ(self):
        """An observation filled with the step in the episode."""
        space = self.observation_space
        return np.full(space.shape, self._step, space.dtype)
