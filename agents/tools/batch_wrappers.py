"""The standard wrappers of `agents.tools.wrappers` on a batch's stacked
arrays, with the same results. No TensorFlow: worker processes import it."""

import numpy as np

from agents.tools import episode_wrappers
from agents.tools import forwarding
from agents.tools import space_wrappers


class BatchWrapper(forwarding.BatchForwarding):
    """Base of the batch wrappers: applies its class's `map_class` to the
    arrays and forwards the rest to the batch."""

    map_class = space_wrappers.ValueMap

    def __init__(self, batch_env, **kwargs):
        self._batch_env = batch_env
        self._map = self.map_class(batch_env, **kwargs)
        self.observation_space = self._map.observation_space
        self.action_space = self._map.action_space

    batch_env = _wrapped = forwarding.read_only(
        'batch_env', 'The wrapped batch.')

    def step(self, actions):
        """Map the actions, step the batch and map the outcomes."""
        observ, reward, done, info = self._batch_env.step(
            self._map.action(actions))
        return self._map.observ(observ), self._map.reward(reward), done, info

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and map the observations."""
        return self._map.observ(self._batch_env.reset(indices, seed))

    def get_env_state(self):
        """The state of the batch and its wrappers."""
        state = {name: array.copy() for name, array in self._state().items()}
        return dict(state, batch=self._batch_env.get_env_state())

    def set_env_state(self, state):
        """Set the state of `get_env_state`."""
        self._batch_env.set_env_state(state['batch'])
        for name, array in self._state().items():
            array[...] = state[name]

    def _state(self):
        """The wrapper's arrays that resumes restore, by name."""
        return {}


class LimitDuration(BatchWrapper):
    """The batch form of `wrappers.LimitDuration`; an environment the
    batch restarted after a failure begins a new episode."""

    def __init__(self, batch_env, duration):
        super().__init__(batch_env)
        self._limit = episode_wrappers.DurationLimit(duration, len(batch_env))

    def step(self, actions):
        """Step the batch and truncate the episodes at the limit."""
        self._limit.check()
        observ, reward, done, info = self._batch_env.step(actions)
        restarted = info['restarted']
        # The step of a restarted environment began a new episode.
        self._limit.steps[restarted] = -1
        truncated = self._limit.count(done, info['truncated'] & ~restarted)
        return observ, reward, done | truncated, dict(info, truncated=truncated)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments and their step counts."""
        observ = self._batch_env.reset(indices, seed)
        self._limit.begin(
            slice(None) if indices is None else np.asarray(indices, int))
        return observ

    def _state(self):
        """The step counts, started and ended flags."""
        limit = self._limit
        return dict(steps=limit.steps, started=limit.started, ended=limit.ended)


class RangeNormalize(BatchWrapper):
    """The batch form of `wrappers.RangeNormalize` (keyword arguments)."""

    map_class = space_wrappers.RangeMap


class ClipAction(BatchWrapper):
    """The batch form of `wrappers.ClipAction`."""

    map_class = space_wrappers.ClipMap


class ConvertTo32Bit(BatchWrapper):
    """The batch form of `wrappers.ConvertTo32Bit`."""

    map_class = space_wrappers.Map32Bit
