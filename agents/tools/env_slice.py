"""The environments of one slice of a batch, built and stepped together.

`SlicedBatchEnv` and `RayBatchEnv` hand each worker a `SliceConstructor`;
the worker builds the `Slice` of its environments from it and steps all of
them per message.

This module must not import TensorFlow: worker processes import it.
"""

import collections

import cloudpickle
import gymnasium as gym
import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_state
from agents.tools import forwarding
from agents.tools import message_frames
from agents.tools import worker_errors

# A step of a slice that leaves some of its environments alone: those of a
# replaced worker whose first observation the batch still has to hand out.
Request = collections.namedtuple('Request', 'actions, skip')


class SliceConstructor:
    """Builds the slice of a worker from its pickled constructors."""

    def __init__(self, payload, start, stop):
        self._payload = payload
        self._start = start
        # `ExternalProcess` names its worker after this.
        self.__qualname__ = f'slice of environments {start} to {stop - 1}'

    def __call__(self):
        return Slice(cloudpickle.loads(self._payload), self._start)


class Slice:
    """The environments of one slice of the batch, inside their worker.

    `step` takes the actions of the slice and returns a `StepBatch`; errors
    of single environments are part of it, so that the other environments
    of the slice step on. `reset` takes the positions to reset in its
    options and returns their stacked observations and the errors in its
    info.
    """

    def __init__(self, constructors, start):
        self._start = start
        self._envs = []
        for position, constructor in enumerate(constructors):
            try:
                self._envs.append(constructor())
            except Exception as error:
                self.close()
                raise batch_env_lib.name_index(
                    error, start + position) from None
        first = self._envs[0]
        for position, env in enumerate(self._envs[1:], 1):
            for name in ('observation_space', 'action_space'):
                if getattr(env, name) != getattr(first, name):
                    self.close()
                    raise ValueError(
                        f'Environment {start + position} has the {name} '
                        f'{getattr(env, name)}; expected '
                        f'{getattr(first, name)} like environment {start}.')
        self.observation_space = first.observation_space
        self.action_space = first.action_space
        self.metadata = getattr(first, 'metadata', {})
        self.render_mode = getattr(first, 'render_mode', None)
        self.spec = forwarding.spec_of(first)
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        space = self.observation_space
        self._blank = np.zeros(space.shape, space.dtype)

    def __str__(self):
        stop = self._start + len(self._envs) - 1
        return f'<slice of environments {self._start} to {stop}: ' \
            f'{self._envs[0]}>'

    def step(self, request):
        """Step the environments of the slice.

        Args:
            request: The actions of the slice; or a `Request` of actions
                and the positions to leave alone.

        Returns:
            `StepBatch`; positions left alone or failed hold zeros.
        """
        skip = ()
        if type(request) is Request:  # pylint: disable=C0123
            request, skip = request
        if self._discrete and isinstance(request, np.ndarray):
            request = request.tolist()
        observs, rewards, terminated, truncated, infos = [], [], [], [], []
        errors = {}
        for position, (env, action) in enumerate(zip(self._envs, request)):
            if skip and position in skip:
                result = None
            else:
                try:
                    result = env.step(action)
                except Exception as error:
                    errors[position] = worker_errors.error_details(error)
                    result = None
            if result is None:
                result = self._blank, 0.0, False, False, {}
            observs.append(result[0])
            rewards.append(result[1])
            terminated.append(result[2])
            truncated.append(result[3])
            infos.append(result[4])
        observ = np.stack(observs).astype(
            self.observation_space.dtype, copy=False)
        return message_frames.StepBatch(
            observ, np.array(rewards, np.float32), np.array(terminated, bool),
            np.array(truncated, bool), tuple(infos), errors)

    def reset(self, *, seed=None, options=None):
        """Reset environments of the slice.

        Args:
            seed: Seed of every reset environment, unless `options` hold
                seeds.
            options: None to reset all, or a dict with the `positions` to
                reset and optionally their `seeds`.

        Returns:
            Tuple of their stacked observations, zeros where a reset failed,
            and a dict whose `errors` map the positions of failed resets to
            the details of their errors.
        """
        options = options or {}
        positions = options.get('positions', range(len(self._envs)))
        seeds = options.get('seeds', [seed] * len(positions))
        observs, errors = [], {}
        for order, (position, seed_) in enumerate(zip(positions, seeds)):
            try:
                observ, _ = self._envs[position].reset(seed=seed_)
            except Exception as error:
                errors[order] = worker_errors.error_details(error)
                observ = self._blank
            observs.append(observ)
        observ = np.stack(observs).astype(
            self.observation_space.dtype, copy=False)
        return observ, {'errors': errors}

    def get_env_state(self):
        """The states of the environments of the slice; see
        `tools.BatchEnv.get_env_state`."""
        return [env_state.get_state(env) for env in self._envs]

    def set_env_state(self, states):
        """Set the states of `get_env_state` on the environments."""
        for env, state in zip(self._envs, states):
            env_state.set_state(env, state)

    def member_attribute(self, position, name):
        """Read an attribute of an environment of the slice.

        Returns:
            Tuple of whether it is a method, and its value otherwise.
        """
        value = getattr(self._envs[position], name)
        if callable(value) and not isinstance(value, type):
            return True, None
        return False, value

    def call_member(self, position, name, *args, **kwargs):
        """Call a method of an environment of the slice."""
        return getattr(self._envs[position], name)(*args, **kwargs)

    def close(self):
        """Close the environments of the slice."""
        batch_env_lib.close_all(self._envs)
