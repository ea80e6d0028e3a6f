"""Wrappers of a whole batch of environments, on its stacked arrays.

The per-environment wrappers of `agents.tools.wrappers` cost Python calls
per environment and step; these do the same with one NumPy operation per
step of a batch like `BatchEnv`, with the same results, and keep its
`step` and `reset`. Indexing gives the batch's environments unwrapped.

This module must not import TensorFlow: worker processes import it.
"""

import numpy as np

from agents.tools import episode_wrappers
from agents.tools import forwarding
from agents.tools import space_wrappers


class BatchWrapper(forwarding.BatchForwarding):
    """Base of the batch wrappers: forwards everything to the batch."""

    # The names of the wrapper's arrays `_<name>` that resumes restore.
    _state_arrays = ()

    def __init__(self, batch_env):
        """Wrap a batch like `tools.BatchEnv`, or another batch wrapper."""
        self._batch_env = batch_env
        self.observation_space = batch_env.observation_space
        self.action_space = batch_env.action_space

    @property
    def batch_env(self):
        """The wrapped batch, which gets the attributes the wrapper lacks."""
        return self._batch_env

    _wrapped = batch_env

    def step(self, actions):
        """Step the batch."""
        return self._batch_env.step(actions)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments of the batch."""
        return self._batch_env.reset(indices, seed)

    def close(self):
        """Close the wrapped batch."""
        self._batch_env.close()

    def get_env_state(self):
        """The state of the batch and its wrappers."""
        state = {name: getattr(self, '_' + name).copy()
                 for name in self._state_arrays}
        return dict(state, batch=self._batch_env.get_env_state())

    def set_env_state(self, state):
        """Set the state of `get_env_state`."""
        self._batch_env.set_env_state(state['batch'])
        for name in self._state_arrays:
            getattr(self, '_' + name)[...] = state[name]


class LimitDuration(BatchWrapper):
    """End episodes by truncation after a number of steps, batch-wide.

    As `wrappers.LimitDuration`; an environment the batch restarted after a
    failure begins a new episode.
    """

    _state_arrays = ('steps', 'started', 'ended')

    def __init__(self, batch_env, duration):
        """Wrap a batch, with the `duration` of `wrappers.LimitDuration`."""
        checked = episode_wrappers.check_duration(duration)
        super().__init__(batch_env)
        self._duration = checked
        self._steps = np.zeros(len(batch_env), np.int64)
        self._started = np.zeros(len(batch_env), bool)
        self._ended = np.zeros(len(batch_env), bool)

    def step(self, actions):
        """Step the batch and truncate the episodes at the limit.

        Raises:
            RuntimeError: When an environment was not reset or its episode
                ended.
        """
        if self._ended.any() or not self._started.all():
            index = int(np.argmax(self._ended | ~self._started))
            if not self._started[index]:
                raise RuntimeError(
                    f'Reset environment {index} of the batch before '
                    'stepping it.')
            raise RuntimeError(
                f'The episode of environment {index} of the batch ended '
                f'after {self._steps[index]} steps (limit {self._duration});'
                ' reset the environment before stepping it again.')
        observ, reward, done, info = self._batch_env.step(actions)
        self._steps += 1
        truncated = info['truncated'] | (self._steps >= self._duration)
        restarted = info['restarted']
        if restarted.any():
            truncated &= ~restarted
            self._steps[restarted] = 0
        done = done | truncated
        self._ended = done.copy()
        info = dict(info, truncated=truncated)
        return observ, reward, done, info

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and their step counts."""
        observ = self._batch_env.reset(indices, seed)
        rows = slice(None) if indices is None else np.asarray(indices, int)
        self._steps[rows] = 0
        self._started[rows] = True
        self._ended[rows] = False
        return observ


class RangeNormalize(BatchWrapper):
    """Map finite Box bounds of observations and actions to [-1, 1].

    The batch version of `wrappers.RangeNormalize`.
    """

    def __init__(self, batch_env, observ=None, action=None):
        """Wrap a batch, with the arguments of `wrappers.RangeNormalize`."""
        super().__init__(batch_env)
        self._observ, self._action, observation_space, action_space = (
            space_wrappers.range_scales(
                batch_env.observation_space, batch_env.action_space, observ,
                action))
        self.observation_space = observation_space
        self.action_space = action_space

    def step(self, actions):
        """Map the normalised actions to the environments' bounds; step."""
        if self._action is not None:
            actions = self._action.denormalize(actions)
        observ, reward, done, info = self._batch_env.step(actions)
        if self._observ is not None:
            observ = self._observ.normalize(observ)
        return observ, reward, done, info

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and normalise the observations."""
        observ = self._batch_env.reset(indices, seed)
        if self._observ is not None:
            observ = self._observ.normalize(observ)
        return observ


class ClipAction(BatchWrapper):
    """Clip actions to the bounds of the Box action space.

    The batch version of `wrappers.ClipAction`, with infinite bounds.
    """

    def __init__(self, batch_env):
        """Wrap a batch.

        Raises:
            ValueError: When the action space is not a Box.
        """
        super().__init__(batch_env)
        self._clip = space_wrappers.ActionClip(batch_env.action_space)
        self.action_space = self._clip.space

    def step(self, actions):
        """Clip the actions to the environments' bounds and step."""
        return self._batch_env.step(self._clip(actions))


class ConvertTo32Bit(BatchWrapper):
    """The batch version of `wrappers.ConvertTo32Bit`."""

    def __init__(self, batch_env):
        """Wrap a batch."""
        super().__init__(batch_env)
        self.observation_space = space_wrappers.space_to_32bit(
            batch_env.observation_space)
        self._dtype = getattr(self.observation_space, 'dtype', None)

    def step(self, actions):
        """Step the batch and convert the observations and rewards."""
        observ, reward, done, info = self._batch_env.step(actions)
        return (self._convert(observ), np.asarray(reward, np.float32), done,
                info)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and convert the observations."""
        return self._convert(self._batch_env.reset(indices, seed))

    def _convert(self, observ):
        """The observations in 32 bits."""
        if self._dtype is None:
            return observ
        return np.asarray(observ).astype(self._dtype, copy=False)
