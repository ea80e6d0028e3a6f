"""Wrappers of a whole batch like `BatchEnv`, on its stacked arrays.

The standard wrappers of `agents.tools.wrappers` in one NumPy operation per
batch step, with the same results. No TensorFlow: worker processes import it.
"""

import numpy as np

from agents.tools import episode_wrappers
from agents.tools import forwarding
from agents.tools import space_wrappers


class BatchWrapper(forwarding.BatchForwarding):
    """Base of the batch wrappers: forwards everything else to the batch,
    whose environments indexing gives unwrapped."""

    # The names of the wrapper's arrays `_<name>` that resumes restore.
    _state_arrays = ()

    def __init__(self, batch_env):
        self._batch_env = batch_env
        self.observation_space = batch_env.observation_space
        self.action_space = batch_env.action_space

    @property
    def batch_env(self):
        """The wrapped batch."""
        return self._batch_env

    _wrapped = batch_env

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
    """The batch form of `wrappers.LimitDuration`; an environment the
    batch restarted after a failure begins a new episode."""

    _state_arrays = ('steps', 'started', 'ended')

    def __init__(self, batch_env, duration):
        checked = episode_wrappers.checked_integer(
            duration, 'duration', 'positive')
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


class MapBatch(BatchWrapper):
    """A batch wrapper that applies the `space_wrappers.ValueMap` of its
    class's `map_class` to the stacked arrays."""

    map_class = space_wrappers.ValueMap

    def __init__(self, batch_env, **kwargs):
        super().__init__(batch_env)
        self._map = self.map_class(batch_env, **kwargs)
        self.observation_space = self._map.observation_space
        self.action_space = self._map.action_space

    def step(self, actions):
        """Map the actions, step the batch and map the outcomes."""
        observ, reward, done, info = self._batch_env.step(
            self._map.action(actions))
        return self._map.observ(observ), self._map.reward(reward), done, info

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and map the observations."""
        return self._map.observ(self._batch_env.reset(indices, seed))


class RangeNormalize(MapBatch):
    """The batch form of `wrappers.RangeNormalize`, with its arguments."""

    map_class = space_wrappers.RangeMap

    def __init__(self, batch_env, observ=None, action=None):
        super().__init__(batch_env, observ=observ, action=action)


class ClipAction(MapBatch):
    """The batch form of `wrappers.ClipAction`."""

    map_class = space_wrappers.ClipMap


class ConvertTo32Bit(MapBatch):
    """The batch form of `wrappers.ConvertTo32Bit`."""

    map_class = space_wrappers.Map32Bit
