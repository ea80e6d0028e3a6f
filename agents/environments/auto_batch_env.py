"""The env mode 'auto': time a batch of every candidate mode in short
bursts at the first use and keep the fastest. No TensorFlow."""

import logging
import threading
import time

import numpy as np

from agents.tools import batch_env as batch_env_lib
from agents.tools import forwarding

# The modes that 'auto' times against each other; 'envpool' joins them
# where EnvPool is installed and has the task.
AUTO_CANDIDATES = ('inprocess', 'slices')
# Modes with worker processes, which 'auto' uses only with several cores.
_WORKER_MODES = ('processes', 'slices', 'ray')

# Seconds of random steps of each candidate per round, and the rounds.
_AUTO_BURST_SECONDS = 0.05
_AUTO_ROUNDS = 3
# How much faster than in-process stepping a mode with worker processes must
# step: in training the graph competes with the workers for the cores (not
# EnvPool's threads, which step while the graph waits).
_WORKER_MARGIN = 1.25


def create(modes, constructors, timeout=None, restart=False,
           candidates=AUTO_CANDIDATES, leader=None):
    """An `AutoBatchEnv`, or the batch of the only usable candidate.

    Args:
      modes: `env_modes.MODES` or alike, whose `build` makes each batch.
      constructors: `env_modes.SeededConstructor`s, one per environment.
      candidates: Names of `modes` to compare.
      leader: None, or a batch whose `choose` gives the mode, untimed.
    """
    usable = usable_candidates(
        constructors[0].constructor, len(constructors), candidates)
    if len(usable) == 1:
        return modes[usable[0]].build(constructors, timeout, restart)
    return AutoBatchEnv(modes, constructors, usable, timeout, restart, leader)


class AutoBatchEnv(forwarding.BatchForwarding):
    """A batch of environments in the fastest of some env modes: the first
    candidate gives the spaces; a thread builds the others, as worker
    processes take about as long to start as TensorFlow to build the graph.
    The first use of the batch (not of its length or spaces) times them,
    closes them and builds the chosen mode anew with the seeds."""

    def __init__(self, modes, constructors, candidates, timeout=None,
                 restart=False, leader=None):
        """Build the first candidate and start building the others."""
        # A leader without `choose` had a single candidate too.
        self._leader = leader if hasattr(leader, 'choose') else None
        unseeded = [
            constructor._replace(seed=None) for constructor in constructors]
        self._create = lambda mode, seeded=False: modes[mode].build(
            constructors if seeded else unseeded, timeout, restart and seeded)
        first, *others = sorted(
            candidates, key=lambda mode: mode != 'inprocess')
        if self._leader is not None:
            others = []  # The first, for the spaces until the choice.
        self._num_agents = len(constructors)
        self._candidates = {first: self._create(first)}
        self.observation_space = self._candidates[first].observation_space
        self.action_space = self._candidates[first].action_space
        self._failed = {}
        # Guards `_closed` and `_candidates` against the building thread.
        self._lock = threading.Lock()
        self._choosing = threading.Lock()
        self._closed = False
        self._batch_env = None
        self.mode = None  # The chosen mode, once chosen.
        self._thread = threading.Thread(
            target=self._build, args=(others,), name='env_mode_candidates',
            daemon=True)
        self._thread.start()

    def __len__(self):
        """Number of environments in the batch."""
        return self._num_agents

    def close(self):
        """Close the candidates, once built, and the chosen batch."""
        with self._lock:
            self._closed = True
        self._thread.join()
        self._close_candidates()
        if self._batch_env is not None:
            self._batch_env.close()

    def _build(self, modes):
        """Build the candidates of some modes, unless closed meanwhile."""
        for mode in modes:
            with self._lock:
                if self._closed:
                    return
            try:
                batch_env = self._create(mode)
            except Exception as error:  # pylint: disable=broad-except
                self._failed[mode] = error
                continue
            with self._lock:
                if self._closed:
                    batch_env.close()
                    return
                self._candidates[mode] = batch_env

    def _chosen(self):
        """The batch of the chosen mode, which the first call chooses."""
        if self._batch_env is not None:
            return self._batch_env
        with self._choosing:
            if self._batch_env is None:
                self._thread.join()
                for mode, error in self._failed.items():
                    logging.getLogger('agents').warning(
                        'Env mode auto: %s did not start, so it is no '
                        'candidate: %s', mode, batch_env_lib.first_line(error))
                try:
                    if self._leader is not None:
                        mode = self._leader.choose()
                    elif len(self._candidates) > 1:
                        mode, _ = time_candidates(self._candidates)
                    else:
                        mode = next(iter(self._candidates))
                finally:
                    self._close_candidates()
                self._batch_env = self._create(mode, seeded=True)
                self.mode = mode
        return self._batch_env

    # The chosen batch takes `step`, `reset` and the rest.
    _wrapped = property(_chosen)

    def choose(self):
        """Choose the mode now, unless chosen already, and return it."""
        self._chosen()
        return self.mode

    def _close_candidates(self):
        """Close the candidates that were built."""
        candidates, self._candidates = self._candidates, {}
        for batch_env in candidates.values():
            batch_env.close()


def usable_candidates(constructor, num_agents, candidates=AUTO_CANDIDATES):
    """The modes worth timing (by default with 'envpool' where EnvPool is
    installed and has the constructor's `env_id`): none with worker
    processes for one environment or one core (where 'inprocess' is one)."""
    from agents.tools import envpool_batch_env
    from agents.tools import sliced_batch_env
    if candidates is AUTO_CANDIDATES and envpool_batch_env.has_task(
            getattr(constructor, 'env_id', None)):
        candidates += ('envpool',)
    candidates = list(candidates)
    if (num_agents == 1 or sliced_batch_env.available_cpus() == 1) and (
            'inprocess' in candidates):
        candidates = [mode for mode in candidates if mode not in _WORKER_MODES]
    return candidates


def time_candidates(batch_envs):
    """Time candidate batches (a dict of mode names to open batches): the
    chosen mode and the modes' steps per second, also logged."""
    modes = list(batch_envs)
    rates = dict.fromkeys(modes, 0.0)
    num_agents = len(batch_envs[modes[0]])
    space = batch_envs[modes[0]].action_space
    space.seed(0)
    actions = [np.stack([space.sample() for _ in range(num_agents)])
               for _ in range(16)]
    for mode in modes:
        batch_envs[mode].reset()
        batch_envs[mode].step(actions[0])
    for _ in range(_AUTO_ROUNDS):
        for mode in modes:
            rates[mode] = max(rates[mode], _burst_rate(
                batch_envs[mode], actions, _AUTO_BURST_SECONDS))
    mode = pick_env_mode(rates)
    logging.getLogger('agents').info(
        'Env mode auto: %s; using %s.', ', '.join(
            f'{name} {rate:,.0f} steps/s' for name, rate in rates.items()),
        mode)
    return mode, rates


def describe():
    """What 'auto' does, in one sentence for help texts and docs."""
    return (
        'graph where the task has an in-graph version; otherwise, at the '
        f"first step, it times {' and '.join(AUTO_CANDIDATES)} (and envpool "
        'where EnvPool is installed and has the task) in bursts of a '
        'fraction of a second and keeps in-process stepping unless another '
        'mode steps faster, a mode with worker processes at least '
        f'{_WORKER_MARGIN:g}x as fast, logging the rates and its choice; '
        'the choice depends on the machine and its load')


def pick_env_mode(rates):
    """The mode to use given a dict of measured steps per second."""
    fastest = max(rates, key=rates.get)
    if 'inprocess' not in rates or fastest == 'inprocess':
        return fastest
    eligible = [
        mode for mode, rate in rates.items()
        if mode == 'inprocess' or rate >= rates['inprocess'] * (
            _WORKER_MARGIN if mode in _WORKER_MODES else 1.0)]
    return max(eligible, key=rates.get)


def _burst_rate(batch_env, actions, seconds):
    """Environment steps per second of stepping a batch for some seconds."""
    steps, start = 0, time.perf_counter()
    while True:
        _, _, done, _ = batch_env.step(actions[steps % len(actions)])
        if done.any():
            batch_env.reset(np.flatnonzero(done))
        steps += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and steps >= 2:
            return steps * len(batch_env) / elapsed
