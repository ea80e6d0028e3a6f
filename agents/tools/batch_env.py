"""Combine several environments into one batch that steps them together."""

import functools

import gymnasium as gym
import numpy as np

_NUMERIC_KINDS = 'biuf'


class BatchEnv:
    """A batch of environments stepped together.

    `step` takes one action per environment and returns stacked arrays;
    `done` is `terminated | truncated` and both flags stay available in the
    info, so that algorithms can bootstrap truncated episodes. Environments
    are not reset automatically: reset the finished ones with `reset`.

    In non-blocking mode every environment is asked to step with
    `env.step(action, blocking=False)` before any result is awaited, so that
    `ExternalProcess` workers step in parallel.
    """

    # A class default keeps `close` and `__del__` safe when `__init__` fails.
    _closed = True

    def __init__(self, envs, blocking):
        """Combine environments into a batch.

        Args:
            envs: Sequence of environments with equal spaces.
            blocking: Whether to step the environments one after another
                rather than sending all actions before awaiting the results
                (which needs environments like `ExternalProcess` whose `step`
                and `reset` accept `blocking=False`).

        Raises:
            ValueError: When `envs` is empty, when an environment's spaces
                differ from those of the first, or when observations are not
                arrays.
        """
        self._envs = tuple(envs)
        if not self._envs:
            raise ValueError('BatchEnv needs at least one environment, got 0.')
        self._blocking = blocking
        observation_space = self._envs[0].observation_space
        action_space = self._envs[0].action_space
        for index, env in enumerate(self._envs[1:], 1):
            if env.observation_space != observation_space:
                raise ValueError(
                    f'Environment {index} has the observation space '
                    f'{env.observation_space}; expected '
                    f'{observation_space} like environment 0.')
            if env.action_space != action_space:
                raise ValueError(
                    f'Environment {index} has the action space '
                    f'{env.action_space}; expected {action_space} like '
                    'environment 0.')
        if getattr(observation_space, 'dtype', None) is None:
            raise ValueError(
                'BatchEnv stacks observations into one array; expected an '
                f'array observation space, got {observation_space}.')
        self._observation_space = observation_space
        self._action_space = action_space
        self._observ_dtype = observation_space.dtype
        self._observ_shape = observation_space.shape
        if isinstance(action_space, gym.spaces.Box):
            self._low = action_space.low
            self._high = action_space.high
        self._closed = False

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._envs)

    def __getitem__(self, index):
        """Access an environment of the batch by its index."""
        return self._envs[index]

    def __getattr__(self, name):
        """Forward public attributes to the first environment.

        Args:
            name: Attribute name; names starting with an underscore are not
                forwarded.

        Raises:
            AttributeError: When the name is private or the environment has
                no such attribute.

        Returns:
            The attribute of the first environment.
        """
        if name.startswith('_'):
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(self._envs[0], name)

    @property
    def observation_space(self):
        """Observation space of a single environment of the batch."""
        return self._observation_space

    @property
    def action_space(self):
        """Action space of a single environment of the batch."""
        return self._action_space

    def step(self, actions):
        """Step every environment of the batch.

        Box actions are cast to the dtype of the action space after the
        bounds check, and Discrete actions handed on as Python integers.

        Args:
            actions: Batch of actions, one per environment.

        Raises:
            ValueError: When the batch size is wrong or an action lies
                outside the action space.

        Returns:
            Tuple of the observations stacked in the dtype of the observation
            space, float32 rewards, bool `done` flags, and an info dict with
            bool arrays `terminated` and `truncated` and the tuple `infos` of
            the environments' info dicts.
        """
        actions = self._check_actions(actions)
        if self._blocking:
            results = [env.step(action)
                       for env, action in zip(self._envs, actions)]
        else:
            results = _in_parallel([
                functools.partial(env.step, action, blocking=False)
                for env, action in zip(self._envs, actions)])
        observs, rewards, terminated, truncated, infos = zip(*results)
        observ = self._stack(observs)
        reward = np.array(rewards, np.float32)
        terminated = np.array(terminated, bool)
        truncated = np.array(truncated, bool)
        done = terminated | truncated
        info = dict(terminated=terminated, truncated=truncated, infos=infos)
        return observ, reward, done, info

    def reset(self, indices=None, seed=None):
        """Reset some or all environments of the batch.

        Args:
            indices: Indices of the environments to reset; None resets all.
            seed: None, or an integer from which environment `i` receives the
                seed `seed + i`.

        Raises:
            ValueError: When an index is not an integer in range or the seed
                is not an integer.

        Returns:
            Stacked observations of the reset environments, in the order of
            `indices`.
        """
        indices = self._check_indices(indices)
        if seed is not None and not isinstance(seed, (int, np.integer)):
            raise ValueError(f'seed must be None or an integer, got {seed!r}.')
        seeds = [None if seed is None else int(seed) + index
                 for index in indices]
        if self._blocking:
            results = [self._envs[index].reset(seed=seed_)
                       for index, seed_ in zip(indices, seeds)]
        else:
            results = _in_parallel([
                functools.partial(
                    self._envs[index].reset, seed=seed_, blocking=False)
                for index, seed_ in zip(indices, seeds)])
        if not results:
            return np.zeros((0,) + self._observ_shape, self._observ_dtype)
        return self._stack([observ for observ, _ in results])

    def close(self):
        """Close every environment of the batch; safe to call again.

        Raises:
            Exception: The first error of an environment's `close`, after
                all environments were closed.
        """
        if self._closed:
            return
        self._closed = True
        error = None
        for env in self._envs:
            try:
                env.close()
            except Exception as exception:
                error = error or exception
        if error is not None:
            raise error

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass  # Nothing to report to at garbage collection or exit.

    def _stack(self, observs):
        return np.stack(observs).astype(self._observ_dtype, copy=False)

    def _check_indices(self, indices):
        """Return the indices as a list of ints, or raise a ValueError."""
        if indices is None:
            return list(range(len(self._envs)))
        array = np.asarray(indices)
        if array.ndim != 1 or (array.size and array.dtype.kind not in 'iu'):
            raise ValueError(
                'Expected a list or 1-D array of integer environment indices,'
                f' got {indices!r}.')
        bad = (array < 0) | (array >= len(self._envs))
        if bad.any():
            raise ValueError(
                f'Environment index {array[bad][0]} is out of range; expected '
                f'indices from 0 to {len(self._envs) - 1}.')
        return array.tolist()

    def _check_actions(self, actions):
        """Validate a batch of actions and return one action per env."""
        space = self._action_space
        count = len(self._envs)
        if isinstance(space, gym.spaces.Box):
            array = np.asarray(actions)
            if array.ndim == 0 or len(array) != count:
                raise ValueError(
                    f'Expected a batch of {count} actions, one per '
                    f'environment, got {_size(array)}.')
            if array.dtype.kind not in _NUMERIC_KINDS:
                raise ValueError(
                    f'Expected numeric actions, got dtype {array.dtype}.')
            if array.shape[1:] != space.shape:
                raise ValueError(
                    f'Expected actions of shape {(count,) + space.shape}, '
                    f'got {array.shape}.')
            # Comparisons with NaN are false, so NaN fails this check too.
            valid = (array >= self._low) & (array <= self._high)
            if not valid.all():
                index = int(np.argmin(valid.reshape(count, -1).all(1)))
                raise ValueError(
                    f'Action {array[index]!r} of environment {index} is '
                    f'outside the action space {space}.')
            return array.astype(space.dtype, copy=False)
        if isinstance(space, gym.spaces.Discrete):
            array = np.asarray(actions)
            if array.ndim != 1 or len(array) != count:
                raise ValueError(
                    f'Expected a batch of {count} actions, one per '
                    f'environment, got {_size(array)}.')
            if array.dtype.kind not in 'iu':
                raise ValueError(
                    f'Expected integer actions for {space}, got dtype '
                    f'{array.dtype}: {array!r}.')
            start = int(space.start)
            valid = (array >= start) & (array < start + int(space.n))
            if not valid.all():
                index = int(np.argmin(valid))
                raise ValueError(
                    f'Action {array[index]!r} of environment {index} is '
                    f'outside the action space {space}.')
            return array.tolist()
        actions = list(actions)
        if len(actions) != count:
            raise ValueError(
                f'Expected a batch of {count} actions, one per environment, '
                f'got {len(actions)}.')
        for index, action in enumerate(actions):
            if not space.contains(action):
                raise ValueError(
                    f'Action {action!r} of environment {index} is outside '
                    f'the action space {space}.')
        return actions


def _in_parallel(requests):
    """Send every request, then resolve every promise; raise the first error.

    Sending and resolving continue past a failure, so that every healthy
    worker advances exactly once and its answers stay in step with its
    requests.

    Args:
        requests: Callables that send a request and return its promise.

    Returns:
        The results of the promises, in order.
    """
    promises, error = [], None
    for request in requests:
        try:
            promises.append(request())
        except Exception as exception:
            error = error or exception
    results = []
    for promise in promises:
        try:
            results.append(promise())
        except Exception as exception:
            error = error or exception
    if error is not None:
        raise error
    return results


def _size(array):
    if array.ndim == 0:
        return f'the scalar {array!r}'
    return f'{len(array)}'
