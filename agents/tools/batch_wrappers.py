"""Wrappers of a whole batch of environments, on its stacked arrays.

The per-environment wrappers `LimitDuration`, `RangeNormalize`, `ClipAction`
and `ConvertTo32Bit` of `agents.tools.wrappers` cost a few Python calls per
environment and step; at thousands of steps per second these calls take
longer than simple physics. The wrappers of this module do the same on the
arrays of a batch like `BatchEnv`: one NumPy operation per step for all the
environments, with the same results value for value.

A batch wrapper has the batch interface: `step(actions)` returns
`(observ, reward, done, info)` with the bool arrays `terminated`,
`truncated` and `restarted` in `info`, and `reset(indices=None, seed=None)`
returns the stacked observations of the reset environments, with the
arguments of `BatchEnv.step` and `BatchEnv.reset`; the docstrings of the
wrappers say what they change. Indexing gives
the wrapped batch's environments as they are, without the batch wrappers;
other public attributes are read from the wrapped batch.

This module must not import TensorFlow: worker processes import it.
"""

import numpy as np

from agents.tools import episode_wrappers
from agents.tools import forwarding
from agents.tools import space_wrappers


class BatchWrapper:
    """Base of the batch wrappers: forwards everything to the batch."""

    def __init__(self, batch_env):
        """Wrap a batch.

        Args:
            batch_env: Batch of environments like `tools.BatchEnv`, or
                another batch wrapper.
        """
        self._batch_env = batch_env
        self.observation_space = batch_env.observation_space
        self.action_space = batch_env.action_space

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._batch_env)

    def __getitem__(self, index):
        """The environment `index` of the wrapped batch, without wrappers."""
        return self._batch_env[index]

    def __getattr__(self, name):
        """Forward public attributes to the wrapped batch."""
        forwarding.check_public(self, name)
        return getattr(self._batch_env, name)

    @property
    def batch_env(self):
        """The wrapped batch."""
        return self._batch_env

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
        """The state of the batch and its wrappers; see
        `tools.BatchEnv.get_env_state`."""
        return dict(self._own_state(), batch=self._batch_env.get_env_state())

    def set_env_state(self, state):
        """Set the state of `get_env_state`."""
        state = dict(state)
        self._batch_env.set_env_state(state.pop('batch'))
        self._set_own_state(state)

    def _own_state(self):
        """The state of this wrapper alone, a dict of arrays."""
        return {}

    def _set_own_state(self, state):
        """Set the state of `_own_state`."""
        del state


class LimitDuration(BatchWrapper):
    """End episodes by truncation after a number of steps, batch-wide.

    The step that reaches the limit sets `truncated` (and so `done`).
    Stepping an environment whose episode ended, by the limit or otherwise,
    or that was never reset, raises an error until it is reset. An
    environment that the batch restarted after a failure begins a new
    episode.
    """

    def __init__(self, batch_env, duration):
        """Wrap a batch, with the `duration` of `wrappers.LimitDuration`.

        Raises:
            ValueError: As `wrappers.LimitDuration` does.
        """
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

    def _own_state(self):
        return dict(
            steps=self._steps.copy(), started=self._started.copy(),
            ended=self._ended.copy())

    def _set_own_state(self, state):
        self._steps[...] = state['steps']
        self._started[...] = state['started']
        self._ended[...] = state['ended']


class RangeNormalize(BatchWrapper):
    """Map finite Box bounds of observations and actions to [-1, 1].

    The batch version of `wrappers.RangeNormalize`, with the same arguments
    and the same results.
    """

    def __init__(self, batch_env, observ=None, action=None):
        """Wrap a batch, with the arguments of `wrappers.RangeNormalize`.

        Raises:
            ValueError: As `wrappers.RangeNormalize` does.
        """
        super().__init__(batch_env)
        self._observ, self._action, observation_space, action_space = (
            space_wrappers.range_scales(
                batch_env.observation_space, batch_env.action_space, observ,
                action))
        self.observation_space = observation_space
        self.action_space = action_space

    def step(self, actions):
        """Map the actions to the environments' bounds and step.

        Args:
            actions: Batch of actions in the normalised action space.
        """
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

    The batch version of `wrappers.ClipAction`: the action space has
    infinite bounds, so that samples of an unbounded policy pass.
    """

    def __init__(self, batch_env):
        """Wrap a batch.

        Args:
            batch_env: Batch with a Box action space.

        Raises:
            ValueError: When the action space is not a Box.
        """
        super().__init__(batch_env)
        self._clip = space_wrappers.ActionClip(batch_env.action_space)
        self.action_space = self._clip.space

    def step(self, actions):
        """Clip the actions to the environments' bounds and step.

        Args:
            actions: Batch of actions of any magnitude.
        """
        return self._batch_env.step(self._clip(actions))


class ConvertTo32Bit(BatchWrapper):
    """Convert 64-bit observations to 32 bits; rewards are float32 already.

    The batch version of `wrappers.ConvertTo32Bit`.
    """

    def __init__(self, batch_env):
        """Wrap a batch.

        Args:
            batch_env: Batch to convert.
        """
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
        if self._dtype is None:
            return observ
        return np.asarray(observ).astype(self._dtype, copy=False)
