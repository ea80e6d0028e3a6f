"""A batch of environments stepped in slices by a few worker processes: one
round trip per worker and step. No TensorFlow here: workers import it."""

import contextlib
import functools
import logging
import os

import gymnasium as gym
import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_slice
from agents.tools import episode_wrappers
from agents.tools import external_process
from agents.tools import forwarding
from agents.tools import worker_errors
from agents.tools import worker_pickle

_logger = logging.getLogger('agents')


def available_cpus():
    """Number of CPU cores this process may run on (its affinity mask)."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


class SlicedBatchEnv(batch_env_lib.BatchEnv):
    """A batch of environments stepped by a few workers, a slice each.

    It keeps the contract of `BatchEnv`; indexing it gives a proxy of an
    environment in its worker. With `restart`, a failure in a slice replaces
    its worker: every environment of the slice begins a new episode, flagged
    in `info['restarted']` (with its first observation and a zero reward in
    a step; in a reset, the others of the slice hand theirs out in the next
    step). A replacement that fails before its first step raises.

    Args:
        constructors: Callables without arguments, one per environment.
        num_workers: Number of workers, at most one per environment;
            None: one per CPU core this process may use.
        timeout, start_method: Of the workers' `ExternalProcess`es.

    Raises:
        TypeError: When a constructor is an environment or not callable.
        ValueError: On no constructors, a bad `num_workers`, or environments
            of different spaces; a constructor's error names its index.
    """

    # Class defaults keep `close` and `__del__` safe when `__init__` fails.
    _workers = ()

    def __init__(
            self, constructors, num_workers=None, restart=False,
            timeout=None, start_method=None):
        constructors = list(constructors)
        if not constructors:
            raise ValueError(
                'SlicedBatchEnv needs at least one environment constructor, '
                'got 0.')
        for index, constructor in enumerate(constructors):
            if isinstance(constructor, gym.Env) or not callable(constructor):
                raise TypeError(
                    f'Constructor {index} of SlicedBatchEnv is {constructor!r}'
                    '; expected a callable without arguments that returns '
                    'the environment.')
        if num_workers is None:
            num_workers = available_cpus()
        if not episode_wrappers.is_integer(num_workers) or num_workers < 1:
            raise ValueError(
                f'num_workers must be a positive integer or None, got '
                f'{num_workers!r}.')
        num_workers = min(int(num_workers), len(constructors))
        parts = np.array_split(np.arange(len(constructors)), num_workers)
        self._bounds = [(int(part[0]), int(part[-1]) + 1) for part in parts]
        self._worker_of = np.repeat(
            np.arange(num_workers), [len(part) for part in parts]).tolist()
        self._payloads = [
            worker_pickle.dumps(constructors[start:stop])
            for start, stop in self._bounds]
        self._timeout = timeout
        self._start_method = start_method
        self._restart_workers = bool(restart)
        self._workers = []
        try:
            for worker in range(num_workers):
                self._workers.append(self._start(worker))
            super().__init__(
                [_Member(self, worker, index, start)
                 for worker, (start, stop) in enumerate(self._bounds)
                 for index in range(start, stop)],
                blocking=False)
            self._owned = self._workers
        except BaseException:
            batch_env_lib.close_all(self._workers)
            raise

    workers = property(
        lambda self: tuple(self._workers),
        doc='Tuple of the `ExternalProcess` workers, one per slice.')
    slices = property(
        lambda self: tuple(self._bounds),
        doc='Tuple of the `(start, stop)` indices of the slice of each worker.')

    def step(self, actions):
        """Step every environment of the batch, as `BatchEnv.step` does."""
        actions = self._check_actions(actions)
        if isinstance(self.action_space, gym.spaces.Discrete):
            # Integers travel as one array; the workers hand on Python ints.
            actions = np.array(actions, np.int64)
        results, errors = self._gather([
            functools.partial(self._workers[worker].step, actions[start:stop])
            for worker, (start, stop) in enumerate(self._bounds)],
            blocking=False)
        failures = self._failures(
            range(len(self._workers)), errors,
            [result and result.errors for result in results], self._bounds)
        for worker, (index, error) in sorted(failures.items()):
            start, stop = self._bounds[worker]
            self._replace_worker(worker, index, error)
            # A step of the new worker hands out the first observations.
            results[worker] = batch_env_lib.blame(index, functools.partial(
                self._workers[worker].step, actions[start:stop]),
                ' after a restart')
        # `_fresh` holds the replaced workers that have not stepped yet.
        self._fresh.intersection_update(failures)
        observ, reward, terminated, truncated, restarted = (
            np.concatenate(column) for column in zip(*[
                result[:5] for result in results]))
        return self._result(
            observ, reward, terminated, truncated, restarted,
            [result.infos.get(position, {}) for result, (start, stop) in zip(
                results, self._bounds) for position in range(stop - start)])

    def reset(self, indices=None, seed=None):
        """Reset some or all environments, as `BatchEnv.reset` does."""
        indices = self._check_indices(indices, seed)
        requested = {}
        for index in indices:
            worker = self._worker_of[index]
            positions, seeds = requested.setdefault(worker, ([], []))
            positions.append(index - self._bounds[worker][0])
            seeds.append(None if seed is None else int(seed) + index)
        workers = list(requested)
        results, errors = self._gather([
            functools.partial(self._workers[worker].reset, options=dict(
                positions=positions, seeds=seeds))
            for worker, (positions, seeds) in requested.items()],
            blocking=False)
        firsts = [self._bounds[worker][0] + min(requested[worker][0])
                  for worker in workers]
        failures = self._failures(
            workers, errors, [result and result[1]['errors']
                              for result in results],
            [(first, first + 1) for first in firsts])
        observs = {worker: iter(result[0]) for worker, result in zip(
            workers, results) if worker not in failures}
        for worker, (index, error) in sorted(failures.items()):
            observs[worker] = iter(self._replace_worker(
                worker, index, error, *requested[worker]))
        return batch_env_lib.stack([
            next(observs[self._worker_of[index]]) for index in indices],
            self.observation_space)

    def get_env_state(self):
        """The state of every environment; see `BatchEnv.get_env_state`."""
        return [
            state for worker in self._workers
            for state in worker.call('get_env_state')]

    def _set_states(self, states):
        """Set the states of `get_env_state` in the workers."""
        for worker, (start, stop) in zip(self._workers, self._bounds):
            worker.call('set_env_state', states[start:stop])

    def _start(self, worker):
        """Start the worker process of slice `worker`; it builds in turn."""
        start, stop = self._bounds[worker]
        return external_process.ExternalProcess(
            env_slice.SliceConstructor(self._payloads[worker], start, stop),
            start_method=self._start_method, timeout=self._timeout,
            main_module=False)

    def _failures(self, workers, errors, env_errors, ranges):
        """Per failed worker, its lowest failed index and error; raises
        the first unless workers restart."""
        failures = {}
        for position, worker in enumerate(workers):
            if position in errors:
                start, stop = ranges[position]
                failures[worker] = start, _name_envs(
                    errors[position], start, stop)
            elif env_errors[position]:
                member = min(env_errors[position])
                index = self._bounds[worker][0] + member
                failures[worker] = index, self._env_error(
                    worker, index, env_errors[position][member])
        if failures and not self._restart_workers:
            _, error = min(failures.values(), key=lambda item: item[0])
            raise error
        return failures

    def _env_error(self, worker, index, details, when=''):
        """The error of environment `index` from its worker's `details`."""
        return batch_env_lib.name_index(worker_errors.worker_error(
            f'environment {index} of {self._workers[worker]!r}', *details),
            index, when)

    def _replace_worker(self, worker, index, error, positions=(), seeds=()):
        """Replace the worker (or raise); new observations of `positions`."""
        start, stop = self._bounds[worker]
        if worker in self._fresh:
            message = error.args[0] if error.args else str(error)
            error.args = (message.replace(
                ' of the batch failed', ' of the batch failed after a '
                'restart', 1),) + error.args[1:]
            raise error
        _logger.warning(
            'Replacing the worker of environments %d to %d of the batch: %s',
            start, stop - 1, batch_env_lib.first_line(error))
        with contextlib.suppress(Exception):  # It failed already.
            self._workers[worker].close()
        self._fresh.add(worker)
        self._workers[worker] = new = self._start(worker)
        self.restarts += stop - start
        self._check_replacement(index, new, ' to restart')
        observ, info = batch_env_lib.blame(index, functools.partial(
            new.reset, options=dict(
                positions=positions, seeds=seeds, restart=True)),
            ' after a restart')
        if info['errors']:
            member = min(info['errors'])
            raise self._env_error(
                worker, start + member, info['errors'][member],
                ' after a restart')
        return observ


def _name_envs(error, start, stop):
    """Prefix a worker's error with the range of its environments."""
    if stop - start == 1:
        return batch_env_lib.name_index(error, start)
    return batch_env_lib.prefix_message(
        error, f'Environments {start} to {stop - 1} of the batch failed: ',
        ('Environments ', f'Environment {start} '))


class _Member:
    """Proxy of one environment of a `SlicedBatchEnv`, in its worker."""

    def __init__(self, batch_env, worker, index, start):
        self._index = index
        self._position = index - start
        self._worker = lambda: batch_env.workers[worker]

    def __getattr__(self, name):
        """A public attribute of the environment; methods call the worker."""
        forwarding.check_public(self, name)
        worker = self._worker()
        if name in ('pid', 'observation_space', 'action_space'):
            return getattr(worker, name)
        is_method, value = worker.call(
            'member_attribute', self._position, name)
        if is_method:
            return functools.partial(
                worker.call, 'call_member', self._position, name)
        return value

    def __repr__(self):
        return (f'<environment {self._index} of a SlicedBatchEnv in '
                f'{self._worker()!r}>')
