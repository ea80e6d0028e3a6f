"""Combine several environments into one batch that steps them together."""

import contextlib
import functools
import logging
import time

import gymnasium as gym
import numpy as np

from agents.tools import env_state
from agents.tools import forwarding

_logger = logging.getLogger('agents')


class BatchEnv(forwarding.Forwarding):
    """A batch of environments stepped together; `reset` alone resets them.

    Errors name the index of the environment; with `restart` a failed one is
    replaced instead: a failed reset is retried on the replacement, a failed
    step returns its first observation with zero reward and
    `info['restarted']` set, so that the episode is dropped, not scored.
    """

    # Class defaults keep `close` and `__del__` safe when `__init__` fails.
    _closed = True
    # For `tools.StepWatchdog`: None between steps; during one, the index of
    # the environment stepping here (None: waiting for workers) and the
    # `time.monotonic()` it began.
    busy = None

    def __init__(self, envs, blocking, restart=None):
        """Combine environments of equal spaces into a batch.

        Args:
            blocking: Whether to step them one after another, rather than
                call `step(action, blocking=False)` on all.
            restart: None, or a function from the index of a failed
                environment to its replacement.

        Raises:
            ValueError: On no `envs`, unequal spaces or observations not arrays.
        """
        self._envs = list(envs)
        if not self._envs:
            raise ValueError('BatchEnv needs at least one environment, got 0.')
        self._blocking = blocking
        self._restart = restart
        self.restarts = 0  # Environments replaced after failures so far.
        # Indices of replacements that have not completed a step yet.
        self._fresh = set()
        # What `close` closes: the environments, or a subclass's workers.
        self._owned = self._envs
        check_spaces(self._envs)
        self.observation_space = self._envs[0].observation_space
        self.action_space = self._envs[0].action_space
        if getattr(self.observation_space, 'dtype', None) is None:
            raise ValueError(
                'BatchEnv stacks observations into one array; expected an '
                f'array observation space, got {self.observation_space}.')
        self._closed = False

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._envs)

    def __getitem__(self, index):
        """Access an environment of the batch by its index."""
        return self._envs[index]

    @property
    def _wrapped(self):
        """The first environment, which gets the attributes the batch lacks."""
        return self._envs[0]

    def step(self, actions):
        """Step every environment of the batch, with one action each.

        Returns:
            Stacked observations, float32 rewards, bool `done` (terminated or
            truncated) and an info dict of bool arrays `terminated`,
            `truncated` and `restarted` and the tuple `infos`.

        Raises:
            ValueError: When an action is invalid.
        """
        actions = self._check_actions(actions)
        results, errors = self._gather([
            functools.partial(env.step, action)
            for env, action in zip(self._envs, actions)])
        restarted = np.zeros(len(self._envs), bool)
        for index, error in sorted(errors.items()):
            env = self._replace(index, error)
            observ, _ = blame(index, env.reset, ' after a restart')
            results[index] = (observ, 0.0, False, False, {})
            restarted[index] = True
        self._fresh.difference_update(np.flatnonzero(~restarted).tolist())
        observs, rewards, terminated, truncated, infos = zip(*results)
        return self._result(
            np.stack(observs), rewards, terminated, truncated, restarted,
            infos)

    def reset(self, indices=None, seed=None):
        """Reset some or all (`indices` None) environments of the batch;
        their stacked observations. Environment `i` gets the seed `seed + i`.

        Raises:
            ValueError: When an index or the seed is not a valid integer.
        """
        indices = self._check_indices(indices, seed)
        seeds = [None if seed is None else int(seed) + index
                 for index in indices]
        results, errors = self._gather([
            functools.partial(self._envs[index].reset, seed=seed_)
            for index, seed_ in zip(indices, seeds)], indices)
        for position, error in sorted(errors.items()):
            index = indices[position]
            env = self._replace(index, error)
            results[position] = blame(index, functools.partial(
                env.reset, seed=seeds[position]), ' after a restart')
        return stack([observ for observ, _ in results], self.observation_space)

    def get_env_state(self):
        """The states of `env_state.get_state` (or its `StateUnavailable`)."""
        return [env_state.get_state(env) for env in self._envs]

    def set_env_state(self, states):
        """Set the states of `get_env_state` (or raise `StateUnavailable`)."""
        if len(states) != len(self._envs):
            raise env_state.StateUnavailable(
                f'the saved state is of {len(states)} environments; the '
                f'batch has {len(self._envs)}')
        self._set_states(states)

    def _set_states(self, states):
        """Set one state per environment."""
        for env, state in zip(self._envs, states):
            env_state.set_state(env, state)

    def close(self):
        """Close every environment (or worker), then raise the first error."""
        if self._closed:
            return
        self._closed = True
        close_all(self._owned)

    def __del__(self):
        # No module globals here: at exit they may be gone already.
        try:
            self.close()
        except Exception:
            pass  # Nobody to report to.

    def _gather(self, requests, indices=None, blocking=None):
        """Results (None: failed) and errors by position of the requests."""
        errors = {}

        def attempt(position, request):
            try:
                return request()
            except Exception as error:
                errors[position] = error
                return None

        try:
            if self._blocking if blocking is None else blocking:
                results = []
                for position, request in enumerate(requests):
                    self.busy = (
                        position if indices is None else indices[position],
                        time.monotonic())
                    results.append(attempt(position, request))
                return results, errors
            self.busy = (None, time.monotonic())
            promises = [
                attempt(position, functools.partial(request, blocking=False))
                for position, request in enumerate(requests)]
            return [promise and attempt(position, promise)
                    for position, promise in enumerate(promises)], errors
        finally:
            self.busy = None

    def _replace(self, index, error):
        """Replace the failed environment `index`, or raise its error."""
        if self._restart is None:
            raise name_index(error, index)
        if index in self._fresh:
            raise name_index(error, index, ' after a restart')
        _logger.warning(
            'Environment %d of the batch failed; replacing it: %s', index,
            first_line(error))
        with contextlib.suppress(Exception):  # It failed already.
            self._envs[index].close()
        self._fresh.add(index)
        self._envs[index] = env = blame(
            index, functools.partial(self._restart, index), ' to restart')
        self.restarts += 1
        self._check_replacement(index, env, ' after a restart')
        return env

    def _check_replacement(self, index, env, when):
        """Raise a ValueError unless `env` has the batch's spaces."""
        mismatch = blame(index, functools.partial(_mismatch, env, self), when)
        if mismatch:
            raise ValueError(
                f'Environment {index} of the batch was replaced by one with '
                f'the {mismatch}.')

    def _result(self, observ, reward, terminated, truncated, restarted,
                infos):
        """The return value of `step` from the rows of its values."""
        terminated, truncated = (
            np.asarray(flags, bool) for flags in (terminated, truncated))
        info = dict(
            terminated=terminated, truncated=truncated, restarted=restarted,
            infos=tuple(infos))
        return (np.asarray(observ, self.observation_space.dtype),
                np.asarray(reward, np.float32), terminated | truncated, info)

    def _check_indices(self, indices, seed=None):
        """The indices (None: all) as ints, after checking them and `seed`."""
        array = np.arange(len(self._envs)) if indices is None else (
            np.asarray(indices))
        if array.ndim != 1 or (array.size and array.dtype.kind not in 'iu'):
            raise ValueError(
                'Expected a list or 1-D array of integer environment indices,'
                f' got {indices!r}.')
        bad = (array < 0) | (array >= len(self._envs))
        if bad.any():
            raise ValueError(
                f'Environment index {array[bad][0]} is out of range; expected '
                f'indices from 0 to {len(self._envs) - 1}.')
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f'seed must be None or an integer, got {seed!r}.')
        return array.tolist()

    def _check_actions(self, actions):
        """The checked actions: an array of a Box's dtype, or a list."""
        space, count = self.action_space, len(self._envs)
        box = isinstance(space, gym.spaces.Box)
        discrete = isinstance(space, gym.spaces.Discrete)
        actions = np.asarray(actions) if box or discrete else list(actions)
        scalar = (box or discrete) and actions.ndim == 0
        if scalar or len(actions) != count or (discrete and actions.ndim != 1):
            size = f'the scalar {actions!r}' if scalar else len(actions)
            raise ValueError(
                f'Expected a batch of {count} actions, one per '
                f'environment, got {size}.')
        if box:
            if actions.dtype.kind not in 'biuf':
                raise ValueError(
                    f'Expected numeric actions, got dtype {actions.dtype}.')
            if actions.shape[1:] != space.shape:
                raise ValueError(
                    f'Expected actions of shape {(count,) + space.shape}, '
                    f'got {actions.shape}.')
            # Comparisons with NaN are false, so NaN fails this check too.
            valid = (actions >= space.low) & (actions <= space.high)
        elif discrete:
            if actions.dtype.kind not in 'iu':
                raise ValueError(
                    f'Expected integer actions for {space}, got dtype '
                    f'{actions.dtype}: {actions!r}.')
            start = int(space.start)
            valid = (actions >= start) & (actions < start + int(space.n))
        else:
            valid = np.array([space.contains(action) for action in actions])
        if not valid.all():
            index = int(np.argmin(valid.reshape(count, -1).all(1)))
            raise ValueError(
                f'Action {actions[index]!r} of environment {index} is '
                f'outside the action space {space}.')
        if box:
            return actions.astype(space.dtype, copy=False)
        return actions.tolist() if discrete else actions

def blame(index, function, when=''):
    """Return `function()`; its error names environment `index` and `when`."""
    try:
        return function()
    except Exception as error:
        name_index(error, index, when)
        raise


def stack(observs, space):
    """The observations as one array of the space's dtype."""
    if not observs:
        return np.zeros((0,) + space.shape, space.dtype)
    return np.stack(observs).astype(space.dtype, copy=False)


def check_spaces(envs, start=0):
    """Raise a ValueError unless all environments have the first's spaces
    (`start`: its index in the batch)."""
    for index, env in enumerate(envs[1:], start + 1):
        mismatch = _mismatch(env, envs[0])
        if mismatch:
            raise ValueError(
                f'Environment {index} has the {mismatch} like environment '
                f'{start}.')


def _mismatch(env, reference):
    """The first space of `env` that differs from `reference`'s, or None."""
    for name in ('observation', 'action'):
        space = getattr(env, name + '_space')
        expected = getattr(reference, name + '_space')
        if space != expected:
            return f'{name} space {space}; expected {expected}'
    return None


def close_all(envs):
    """Close every environment (or worker), then raise the first error."""
    error = None
    for env in envs:
        try:
            env.close()
        except Exception as exception:
            error = error or exception
    if error is not None:
        raise error


def name_index(error, index, when=''):
    """The error of environment `index`, prefixed once with its index and
    `when` (such as ' after a restart')."""
    return prefix_message(
        error, f'Environment {index} of the batch failed{when}: ',
        f'Environment {index} of the batch ')


def prefix_message(error, prefix, named):
    """The error, its message prefixed unless it starts with `named` (a
    string or tuple of them)."""
    args = error.args
    if not args or not isinstance(args[0], str):
        error.args = (prefix + (str(error) or type(error).__name__),)
    elif not args[0].startswith(named):
        error.args = (prefix + args[0],) + args[1:]
    return error


def first_line(error):
    """One line of an error: its first, and its last if that names the
    cause (a worker's traceback); without a message its type name."""
    lines = [line for line in str(error).strip().splitlines() if line]
    if not lines:
        return type(error).__name__
    if len(lines) > 1 and not lines[-1].startswith(' '):
        return f'{lines[0]} {lines[-1]}'
    return lines[0]
