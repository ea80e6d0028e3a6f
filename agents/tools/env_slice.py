"""The environments of one slice of a batch, in a worker of `SlicedBatchEnv`
or `RayBatchEnv`. No TensorFlow here."""

import collections

import cloudpickle
import gymnasium as gym
import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_state
from agents.tools import worker_errors

# A slice's step: stacked arrays (`restarted` of bools), the infos that are
# not empty and the `error_details` of steps that raised (rows of zeros), by
# position.
StepBatch = collections.namedtuple(
    'StepBatch',
    'observ, reward, terminated, truncated, restarted, infos, errors')


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
    """The environments of one slice of the batch, inside their worker;
    errors of single environments are returned, so that the others step on."""

    def __init__(self, constructors, start):
        """Build the environments, the first of index `start`."""
        self._start = start
        self._envs = []
        try:
            for index, constructor in enumerate(constructors, start):
                self._envs.append(batch_env_lib.blame(index, constructor))
            batch_env_lib.check_spaces(self._envs, start)
        except Exception:
            self.close()
            raise
        self.observation_space = space = self._envs[0].observation_space
        self.action_space = self._envs[0].action_space
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self._blank = np.zeros(space.shape, space.dtype)
        # Positions of a new worker's environments that began in a reset of
        # others, and the step results that hand out their observations.
        self._held = {}

    def __str__(self):
        stop = self._start + len(self._envs) - 1
        return (f'<slice of environments {self._start} to {stop}: '
                f'{self._envs[0]}>')

    def step(self, actions):
        """Step the environments of the slice into a `StepBatch`; those held
        by a reset hand out their first observations instead."""
        if self._discrete:  # An array of them, from the parent.
            actions = actions.tolist()
        results, errors = [], {}
        restarted = np.zeros(len(self._envs), bool)
        for position, (env, action) in enumerate(zip(self._envs, actions)):
            result = self._held.pop(position, None)
            restarted[position] = result is not None
            if result is None:
                try:
                    result = env.step(action)
                except Exception as error:
                    errors[position] = worker_errors.error_details(error)
                    result = (self._blank, 0.0, False, False, {})
            results.append(result)
        observs, rewards, terminated, truncated, infos = zip(*results)
        return StepBatch(
            batch_env_lib.stack(observs, self.observation_space),
            np.array(rewards, np.float32),
            np.array(terminated, bool), np.array(truncated, bool),
            restarted, {position: info for position, info in enumerate(infos)
                        if info or not isinstance(info, dict)}, errors)

    def reset(self, *, seed=None, options=None):
        """Reset environments of the slice; their stacked observations
        (zeros where a reset failed) and a dict whose `errors` map positions
        to error details.

        Args:
            options: None to reset all (with `seed`), or a dict of the
                `positions` and their `seeds`; with `restart`, the others are
                reset too and held for the next step (of a new worker).
        """
        options = options or {}
        positions = list(options.get('positions', range(len(self._envs))))
        seeds = list(options.get('seeds', [seed] * len(positions)))
        count = len(positions)
        if options.get('restart'):
            others = sorted(set(range(len(self._envs))) - set(positions))
            positions += others
            seeds += [None] * len(others)
        observs, errors = [], {}
        for position, seed_ in zip(positions, seeds):
            self._held.pop(position, None)
            try:
                observ, _ = self._envs[position].reset(seed=seed_)
            except Exception as error:
                errors[position] = worker_errors.error_details(error)
                observ = self._blank
            observs.append(observ)
        for position, observ in zip(positions[count:], observs[count:]):
            self._held[position] = (observ, 0.0, False, False, {})
        return (batch_env_lib.stack(observs[:count], self.observation_space),
                {'errors': errors})

    # The states of the environments of the slice, as of a batch's.
    get_env_state = batch_env_lib.BatchEnv.get_env_state

    def set_env_state(self, states):
        """Set the states of `get_env_state` on the environments."""
        for env, state in zip(self._envs, states):
            env_state.set_state(env, state)

    def member_attribute(self, position, name):
        """Whether an environment's attribute is a method, else its value."""
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
