"""The environments of one slice of a batch, built and stepped together.

`SlicedBatchEnv` and `RayBatchEnv` hand each worker a `SliceConstructor`.
This module must not import TensorFlow: worker processes import it.
"""

import collections

import cloudpickle
import gymnasium as gym
import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_state
from agents.tools import forwarding
from agents.tools import worker_errors

# A step that leaves alone the environments at the positions `skip`: those
# of a replaced worker whose first observation the batch has yet to hand out.
Request = collections.namedtuple('Request', 'actions, skip')
# The results of a slice's step: stacked arrays, the tuple of `infos`, and
# the `errors` of the positions whose step raised (their rows hold zeros),
# as `worker_errors.error_details`.
StepBatch = collections.namedtuple(
    'StepBatch', 'observ, reward, terminated, truncated, infos, errors')


class SliceConstructor:
    """Builds the slice of a worker from its pickled constructors."""

    def __init__(self, payload, start, stop):
        """The environments `start` to `stop` of `payload`'s constructors."""
        self._payload = payload
        self._start = start
        # `ExternalProcess` names its worker after this.
        self.__qualname__ = f'slice of environments {start} to {stop - 1}'

    def __call__(self):
        """The `Slice`."""
        return Slice(cloudpickle.loads(self._payload), self._start)


class Slice:
    """The environments of one slice of the batch, inside their worker.

    Errors of single environments are returned, not raised, so that the
    others step on.
    """

    def __init__(self, constructors, start):
        """Build the environments, the first of index `start`."""
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
        try:
            batch_env_lib.check_spaces(self._envs, start)
        except ValueError:
            self.close()
            raise
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
            request: The actions of the slice, or a `Request`.

        Returns:
            `StepBatch`; positions left alone or failed hold zeros.
        """
        skip = ()
        if type(request) is Request:  # pylint: disable=C0123
            request, skip = request
        if self._discrete and isinstance(request, np.ndarray):
            request = request.tolist()
        results, errors = [], {}
        for position, (env, action) in enumerate(zip(self._envs, request)):
            if skip and position in skip:
                result = None
            else:
                try:
                    result = env.step(action)
                except Exception as error:
                    errors[position] = worker_errors.error_details(error)
                    result = None
            results.append(result or (self._blank, 0.0, False, False, {}))
        observs, rewards, terminated, truncated, infos = zip(*results)
        observ = np.stack(observs).astype(
            self.observation_space.dtype, copy=False)
        return StepBatch(
            observ, np.array(rewards, np.float32), np.array(terminated, bool),
            np.array(truncated, bool), infos, errors)

    def reset(self, *, seed=None, options=None):
        """Reset environments of the slice.

        Args:
            seed: Seed of every reset environment, unless `options` hold
                `seeds`.
            options: None to reset all, or a dict of the `positions`.

        Returns:
            Tuple of the stacked observations, zeros where a reset failed,
            and a dict whose `errors` map positions to error details.
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
        """The states of the environments, as `BatchEnv.get_env_state`."""
        return [env_state.get_state(env) for env in self._envs]

    def set_env_state(self, states):
        """Set the states of `get_env_state` on the environments."""
        for env, state in zip(self._envs, states):
            env_state.set_state(env, state)

    def member_attribute(self, position, name):
        """Whether an attribute of an environment is a method, and else its
        value."""
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
