"""A batch of environments stepped in slices by a few worker processes.

Each worker steps its contiguous slice per message: one round trip per
worker and step instead of one per environment. This module must not import
TensorFlow: worker processes import it.
"""

import functools
import logging
import os

import gymnasium as gym
import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import env_slice
from agents.tools import env_state
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
        constructors: Callables without arguments, one per environment,
            pickled once here (restarts reuse them).
        num_workers: Number of workers, at most one per environment;
            None: one per CPU core this process may use.
        restart: Whether to replace a failed worker instead of raising.
        timeout: Seconds a worker may take to answer; None: the default
            of `ExternalProcess`, as for `start_method`.
        start_method: Start method of the workers, or None.

    Raises:
        TypeError: When a constructor is an environment or not callable.
        ValueError: On no constructors, a `num_workers` that is not a
            positive integer, or environments of different spaces.
        Exception: A constructor's error, naming its environment.
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
        count = len(constructors)
        sizes = [count // num_workers + (worker < count % num_workers)
                 for worker in range(num_workers)]
        starts = np.cumsum([0] + sizes).tolist()
        self._bounds = list(zip(starts[:-1], starts[1:]))
        self._worker_of = np.repeat(np.arange(num_workers), sizes).tolist()
        self._payloads = [
            worker_pickle.dumps(constructors[start:stop])
            for start, stop in self._bounds]
        self._timeout = timeout
        self._start_method = start_method
        self._restart_workers = bool(restart)
        # Per worker, the first observations of environments restarted in a
        # reset that the next step hands out.
        self._pending = {}
        # Replacement workers that have not completed a step yet.
        self._fresh_workers = set()
        self._workers = []
        try:
            for worker in range(num_workers):
                self._workers.append(self._start(worker))
            super().__init__(
                [_Member(self, index) for index in range(count)],
                blocking=False)
        except BaseException:
            batch_env_lib.close_all(self._workers)
            raise

    @property
    def workers(self):
        """Tuple of the `ExternalProcess` workers, one per slice."""
        return tuple(self._workers)

    @property
    def slices(self):
        """Tuple of the `(start, stop)` indices of the slice of each worker."""
        return tuple(self._bounds)

    @property
    def restarts(self):
        """Number of environments replaced after failures (whole slices)."""
        return self._restarts

    def step(self, actions):
        """Step every environment of the batch, as `BatchEnv.step` does.

        Without `restart`, raises the failure of the lowest index.
        """
        actions = self._check_actions(actions)
        if isinstance(self._action_space, gym.spaces.Discrete):
            # Integers travel as one array; the workers hand on Python ints.
            actions = np.array(actions, np.int64)
        requests = []
        for index, (start, stop) in enumerate(self._bounds):
            part = actions[start:stop]
            pending = self._pending.get(index)
            if pending:
                part = env_slice.Request(part, frozenset(pending))
            requests.append(functools.partial(
                self._workers[index].step, part, blocking=False))
        results, errors = self._in_parallel(requests)
        failures = self._failures(results, errors)
        restarted = np.zeros(len(self._envs), bool)
        for worker, (index, error) in sorted(failures.items()):
            start, stop = self._bounds[worker]
            self._replace_worker(worker, index, error)
            observ, _ = self._reset_worker(worker, index)
            size = stop - start
            results[worker] = env_slice.StepBatch(
                observ, np.zeros(size, np.float32), np.zeros(size, bool),
                np.zeros(size, bool), ({},) * size, {})
            restarted[start:stop] = True
        for worker, pending in self._pending.items():
            start, _ = self._bounds[worker]
            result = results[worker]
            infos = list(result.infos)
            for position, observ in pending.items():
                result.observ[position] = observ
                result.reward[position] = 0
                result.terminated[position] = False
                result.truncated[position] = False
                infos[position] = {}
                restarted[start + position] = True
            results[worker] = result._replace(infos=tuple(infos))
        self._pending.clear()
        self._fresh_workers.intersection_update(failures)
        observ, reward, terminated, truncated = (
            np.concatenate(column)
            for column in zip(*[result[:4] for result in results]))
        terminated, truncated = terminated.astype(bool), truncated.astype(bool)
        info = dict(
            terminated=terminated, truncated=truncated, restarted=restarted,
            infos=tuple(info for result in results for info in result.infos))
        return (observ.astype(self._observ_dtype, copy=False),
                reward.astype(np.float32), terminated | truncated, info)

    def reset(self, indices=None, seed=None):
        """Reset some or all environments, as `BatchEnv.reset` does.

        Without `restart`, raises the failure of the lowest index.
        """
        indices = self._check_indices(indices, seed)
        if not indices:
            return self._no_observs()
        requested = {}
        for order, index in enumerate(indices):
            worker = self._worker_of[index]
            start, _ = self._bounds[worker]
            requested.setdefault(worker, []).append((
                order, index - start,
                None if seed is None else int(seed) + index))
        workers = sorted(requested)
        requests = []
        for worker in workers:
            _, positions, seeds = zip(*requested[worker])
            # Reset now, these environments need no first observation later.
            pending = self._pending.get(worker, {})
            for position in positions:
                pending.pop(position, None)
            requests.append(functools.partial(
                self._workers[worker].reset, options=dict(
                    positions=positions, seeds=seeds), blocking=False))
        results, errors = self._in_parallel(requests)
        failures = self._failures(
            [result and _as_batch(result) for result in results], errors,
            requested)
        results = dict(zip(workers, results))
        for worker, (index, error) in sorted(failures.items()):
            self._replace_worker(worker, index, error)
            results[worker] = self._reset_worker(
                worker, index, requested[worker])
        rows = [None] * len(indices)
        for worker in workers:
            observ, _ = results[worker]
            for (order, _, _), row in zip(requested[worker], observ):
                rows[order] = row
        return self._stack(rows)

    def get_env_state(self):
        """The state of every environment; see `BatchEnv.get_env_state`."""
        return [
            state for worker in self._workers
            for state in worker.call('get_env_state')]

    def set_env_state(self, states):
        """Set the states of `get_env_state`.

        Raises:
            env_state.StateUnavailable: When the states do not fit.
        """
        if len(states) != len(self):
            raise env_state.StateUnavailable(
                f'the saved state is of {len(states)} environments; the '
                f'batch has {len(self)}')
        for worker, (start, stop) in zip(self._workers, self._bounds):
            worker.call('set_env_state', states[start:stop])

    def locate(self, index):
        """The worker of environment `index` and its position in the slice."""
        worker = self._worker_of[index]
        return self._workers[worker], index - self._bounds[worker][0]

    def close(self):
        """Close every worker; safe to call again.

        Raises:
            Exception: The first error of a worker's close, after all closed.
        """
        if self._closed:
            return
        self._closed = True
        batch_env_lib.close_all(self._workers)

    def _start(self, worker):
        """Start the worker process of slice `worker`; it builds in turn."""
        start, stop = self._bounds[worker]
        return external_process.ExternalProcess(
            env_slice.SliceConstructor(self._payloads[worker], start, stop),
            start_method=self._start_method, timeout=self._timeout,
            main_module=False)

    def _failures(self, results, errors, requested=None):
        """Per failed worker, its lowest failed index and that error.

        `results`: a `StepBatch` per worker (per requested worker, of a
        reset), None where the request raised (`errors`, by position).
        """
        workers = sorted(requested) if requested else range(len(results))
        failures = {}
        for position, (worker, result) in enumerate(zip(workers, results)):
            start, stop = self._bounds[worker]
            if position in errors:
                error = errors[position]
                first = start
                if requested:
                    first = start + min(item[1] for item in requested[worker])
                _name_envs(error, first, stop if not requested else first + 1)
                failures[worker] = first, error
            elif result.errors:
                member = min(result.errors)
                index = start + member
                if requested:
                    index = start + requested[worker][member][1]
                error = worker_errors.worker_error(
                    f'environment {index} of {self._workers[worker]!r}',
                    *result.errors[member])
                failures[worker] = index, batch_env_lib.name_index(
                    error, index)
        if failures and not self._restart_workers:
            _, error = min(failures.values(), key=lambda item: item[0])
            raise error
        return failures

    def _replace_worker(self, worker, index, error):
        """Replace the worker of failed environment `index`.

        Raises `error` where the worker is a replacement that has not
        completed a step yet.
        """
        start, stop = self._bounds[worker]
        if worker in self._fresh_workers:
            message = error.args[0] if error.args else str(error)
            error.args = (message.replace(
                ' of the batch failed', ' of the batch failed after a '
                'restart', 1),) + error.args[1:]
            raise error
        _logger.warning(
            'Replacing the worker of environments %d to %d of the batch: %s',
            start, stop - 1, batch_env_lib.first_line(error))
        batch_env_lib.close_failed(self._workers[worker])
        self._pending.pop(worker, None)
        self._fresh_workers.add(worker)
        self._workers[worker] = new = self._start(worker)
        self._restarts += stop - start
        self._check_replacement(index, new, ' to restart')

    def _reset_worker(self, worker, index, requested=None):
        """Reset every environment of a new worker; `(observ, {})`.

        With `requested` (of a reset), the observations of those alone; the
        next step hands out those of the others.
        """
        start, stop = self._bounds[worker]
        seeds = [None] * (stop - start)
        for _, position, seed in requested or ():
            seeds[position] = seed
        observ, info = batch_env_lib.blame(index, functools.partial(
            self._workers[worker].reset, options=dict(
                positions=tuple(range(stop - start)), seeds=tuple(seeds))),
            ' after a restart')
        if info['errors']:
            member = min(info['errors'])
            raise batch_env_lib.name_index(worker_errors.worker_error(
                f'environment {start + member} of '
                f'{self._workers[worker]!r}', *info['errors'][member]),
                start + member, ' after a restart')
        if requested is None:
            return observ, {}
        positions = [position for _, position, _ in requested]
        others = sorted(set(range(stop - start)) - set(positions))
        if others:
            self._pending[worker] = {
                position: observ[position] for position in others}
        return observ[positions], {}


def _as_batch(result):
    """A reset result `(observ, info)` as a batch with the reset's errors."""
    observ, info = result
    return env_slice.StepBatch(
        observ, None, None, None, (), info['errors'])


def _name_envs(error, start, stop):
    """Prefix a worker's error with the range of its environments."""
    if stop - start == 1:
        return batch_env_lib.name_index(error, start)
    return batch_env_lib.prefix_message(
        error, f'Environments {start} to {stop - 1} of the batch failed: ',
        ('Environments ', f'Environment {start} '))


def _from_worker(name, doc):
    """A property of `_Member` that reads `name` from the worker's process."""
    return property(lambda member: getattr(member.worker, name), doc=doc)


class _Member:
    """Proxy of one environment of a `SlicedBatchEnv`, in its worker
    (the new one after a restart)."""

    def __init__(self, batch_env, index):
        self._batch_env = batch_env
        self._index = index

    @property
    def worker(self):
        """The `ExternalProcess` of the slice of this environment."""
        return self._batch_env.locate(self._index)[0]

    pid = _from_worker('pid', 'Process id of the worker of this environment.')
    observation_space = _from_worker(
        'observation_space', 'Observation space of the environment.')
    action_space = _from_worker(
        'action_space', 'Action space of the environment.')

    def __getattr__(self, name):
        """A public attribute of the environment; methods call the worker."""
        forwarding.check_public(self, name)
        worker = self.worker
        position = self._position()
        is_method, value = worker.call('member_attribute', position, name)
        if is_method:
            return functools.partial(
                worker.call, 'call_member', position, name)
        return value

    def _position(self):
        return self._batch_env.locate(self._index)[1]

    def __repr__(self):
        return (f'<environment {self._index} of a SlicedBatchEnv in '
                f'{self.worker!r}>')
