"""The runs of a sweep on Ray (see docs/sweeps.md): the sweep's process
submits them and prints their progress (`train_runs`); each trains in a Ray
worker of its own (`train_run`)."""

import contextlib
import json
import logging
import math
import os
import signal
import socket
import time

from agents.tools import atomic_file
from agents.tools import batch_env as batch_env_lib
from agents.training import checkpoints
from agents.training import config_io
from agents.training import errors
from agents.training import simulation
from agents.training import stopping
from agents.training import sweep_records
from agents.training import trainer

# The sweep's file beside its runs that asks them to save and stop.
STOP_NAME = 'stop-requested'
# Seconds between a run's looks for the sweep's stop file.
_STOP_POLL_SECONDS = 0.25
# Seconds to wait for the runs to save their checkpoints after Ctrl-C.
_STOP_SECONDS = 600.0
_POLL_SECONDS = 0.5


class Progress:
    """Collects the progress lines of the runs for the sweep to print."""

    def __init__(self):
        self._lines = []

    def put(self, line):
        """Add a line."""
        self._lines.append(line)

    def take(self):
        """The lines added since the last call."""
        lines, self._lines = self._lines, []
        return lines


class RunStop(stopping.StopRequest):
    """Asks a run of the sweep to save and stop, in its Ray worker: Ray's
    cancellation (SIGINT) or the sweep's stop file, where that is lost. A
    stuck step is left to `worker_timeout`: a worker that exits without its
    record would count as dead for Ray."""

    abandon_stuck = False

    def __init__(self, marker):
        super().__init__(lambda signum, again=False: '')
        self._marker = marker
        self._looked = -math.inf

    def handle(self, signum, unused_frame):
        """The signal handler; only the first signal counts."""
        if self.signum is None:
            super().handle(signum, unused_frame)

    def requested(self):
        """Whether a signal or the stop file asked to stop."""
        now = time.monotonic()
        if self.signum is None and now - self._looked >= _STOP_POLL_SECONDS:
            self._looked = now
            if os.path.exists(self._marker):
                self.signum = signal.SIGINT
        return self.signum is not None


def train_runs(ray, todo, records, options, echo):
    """Train the `(run, config)` pairs of `todo` on Ray, printing their
    progress with `echo`, and put their records in `records` by run name;
    `options`: dict of `cpus_per_run`, `env_mode`, `max_retries` and
    `sweep_dir`. Ctrl-C raises KeyboardInterrupt once every run stopped."""
    # Of an earlier sweep of this timestamp that was interrupted.
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(options['sweep_dir'], STOP_NAME))
    if not todo:
        return
    progress = ray.remote(num_cpus=0)(Progress).remote()
    # A fresh worker process per run: TensorFlow's process-wide settings
    # and memory stay with the run.
    task = ray.remote(max_calls=1)(train_run).options(
        num_cpus=options['cpus_per_run'], max_retries=options['max_retries'],
        retry_exceptions=False)
    pending = {}
    try:
        with stopping.StopRequest(_describe_interrupt).install():
            # Within: runs submitted before an interruption stop with it.
            for run, config in todo:
                ref = task.remote(
                    config, options['env_mode'],
                    sweep_records.new_record(run), progress)
                pending[ref] = run
            _wait(ray, pending, records, progress, echo)
    except KeyboardInterrupt:
        # Every run looks for the file between its session runs, since Ray's
        # cancellation can miss the run's thread.
        os.makedirs(options['sweep_dir'], exist_ok=True)
        atomic_file.write_atomic(
            os.path.join(options['sweep_dir'], STOP_NAME), '')
        echo(f'Interrupted; stopping {len(pending)} runs with a checkpoint '
             '(interrupt again to stop them without).')
        for ref in pending:
            ray.cancel(ref)
        try:
            with stopping.StopRequest(_describe_interrupt).install():
                _wait(ray, pending, records, progress, echo,
                      deadline=time.monotonic() + _STOP_SECONDS)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
        for run in pending.values():
            records[run.name] = _stored_record(run)
        raise
    finally:
        _drain(ray, progress, echo)
        ray.kill(progress)


def _wait(ray, pending, records, progress, echo, deadline=None):
    """Wait for the pending runs (emptied as they end) until `deadline`."""
    while pending:
        if deadline is not None and time.monotonic() > deadline:
            return
        ready, _ = ray.wait(
            list(pending), num_returns=1, timeout=_POLL_SECONDS)
        _drain(ray, progress, echo)
        for ref in ready:
            run = pending.pop(ref)
            try:
                record = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                record = _stored_record(run)
                if record['status'] == 'running':
                    record['status'] = 'interrupted'
            except ray.exceptions.RayError as error:
                # The worker or node died more often than Ray retries.
                record = _stored_record(run)
                record.update(status='failed', error=(
                    f'{type(error).__name__}: '
                    f'{batch_env_lib.first_line(error)}'))
                echo(f'[{run.name}] failed: {record["error"]}')
            records[run.name] = record


def _drain(ray, progress, echo):
    """Print the lines that the runs reported since the last call."""
    for line in ray.get(progress.take.remote()):
        echo(line)


def _stored_record(run):
    """The record in the run's folder, or that of a run not started."""
    return sweep_records.read_record(run.run_dir) or sweep_records.new_record(
        run)


def join_ray(ray, address, cpus_per_run):
    """Join or start Ray quietly (at `address`, or None), unless done; a
    ConfigError where no node of the cluster has `cpus_per_run`."""
    if not ray.is_initialized():
        ray.init(
            address=address, include_dashboard=False, log_to_driver=False,
            logging_level='ERROR')
    most = max((
        node['Resources'].get('CPU', 0) for node in ray.nodes()
        if node.get('Alive')), default=0)
    if cpus_per_run > most:
        raise config_io.ConfigError(
            f'--cpus_per_run={cpus_per_run:g} exceeds the CPUs of every '
            f'node of the Ray cluster (at most {most:g}).')


def _describe_interrupt(signum, again=False):
    """The line of a second signal, which ends the sweep at once."""
    twice = ' twice: stopped at once' if again else ''
    return f'Interrupted by {signal.Signals(signum).name}{twice}.'


def train_run(config, env_mode, record, progress):
    """Train or resume one run in a Ray worker; return its final record. A
    run folder's `config.yaml` and record replace `config` and `record`. The
    run's errors go into its record, so that Ray retries a run only when its
    worker dies; `progress` is the sweep's `Progress` actor."""
    import ray  # pylint: disable=import-outside-toplevel
    run_dir = config.logdir
    os.makedirs(run_dir, exist_ok=True)
    record = sweep_records.read_record(run_dir) or record
    _log_to_file(os.path.join(run_dir, 'train.log'))
    resumed = checkpoint_steps(run_dir)
    record['attempts'].append(dict(
        pid=os.getpid(), host=socket.gethostname(),
        node=ray.get_runtime_context().get_node_id(), resumed_from=resumed))
    record.update(status='running', error=None)
    attempt = _Attempt(run_dir, record, progress)
    attempt.save()
    if len(record['attempts']) > 1:
        attempt.say(
            f'attempt {len(record["attempts"])} resumes from step '
            f'{resumed:,}.', wait=False)
    try:
        _train(config, env_mode, attempt.on_report)
    except KeyboardInterrupt:
        # Training saved a checkpoint of its last step before it stopped.
        attempt.save(
            steps=max(record['steps'], checkpoint_steps(run_dir)),
            status='interrupted')
        attempt.say(f'stopped with a checkpoint at step {record["steps"]:,}.')
        return record
    except Exception as error:
        message = batch_env_lib.first_line(error)
        if not isinstance(
                error, (config_io.ConfigError, errors.TrainingError)):
            message = f'{type(error).__name__}: {message}'
        attempt.save(status='failed', error=message)
        attempt.say(f'failed: {message}')
        return record
    attempt.save(status='finished')
    final, best = sweep_records.final_and_best(record)
    attempt.say(
        f'finished at step {record["steps"]:,} in '
        f'{record["wall_clock"]:.0f} s: final score '
        f'{sweep_records.format_score(final)}, best '
        f'{sweep_records.format_score(best)}.')
    return record


class _Attempt:
    """The record of a run's attempt, written to its folder on each change."""

    def __init__(self, run_dir, record, progress):
        self._path = os.path.join(run_dir, sweep_records.RECORD_NAME)
        self._record = record
        self._progress = progress
        self._wall_clock = record['wall_clock']
        self._start = time.monotonic()

    def save(self, **changes):
        """Update the record and write it."""
        self._record.update(
            changes,
            wall_clock=self._wall_clock + time.monotonic() - self._start)
        atomic_file.write_atomic(
            self._path, json.dumps(self._record, indent=1) + '\n')

    def say(self, line, wait=True):
        """Put a line of the run into the sweep's progress."""
        import ray  # pylint: disable=import-outside-toplevel
        ref = self._progress.put.remote(f'[{self._record["run"]}] {line}')
        if wait:
            ray.get(ref)

    def on_report(self, step, score):
        """Record and print an evaluation report."""
        score = None if math.isnan(score) else float(score)
        # A retried run reports again the steps after its checkpoint.
        reports = [
            report for report in self._record['reports'] if report[0] < step]
        self.save(reports=reports + [[step, score]], steps=step)
        self.say(
            f'step {step:,}: score {sweep_records.format_score(score)}',
            wait=False)


def _train(config, env_mode, on_report):
    """Train the config, or that of its run folder, until done or stopped."""
    run_dir = config.logdir
    if os.path.exists(os.path.join(run_dir, 'config.yaml')):
        config = config_io.load_config(run_dir)
    with config.unlocked:
        config.logdir = run_dir
        # `ray.cancel` raises KeyboardInterrupt in this thread: between
        # steps only where the environments run in others.
        config.caller_thread = False
    # Each run has its own worker process.
    trainer.enable_determinism(config)
    stop = RunStop(os.path.join(os.path.dirname(config.logdir), STOP_NAME))
    with stop.install():
        if stop.requested():
            raise stopping.Interrupted(stop.signum)
        for _ in trainer.train(config, env_mode, on_report=on_report):
            pass


def checkpoint_steps(run_dir):
    """Training steps of the latest checkpoint of a run folder; 0 without."""
    names = checkpoints.list_checkpoints(run_dir)
    if not names:
        return 0
    global_step = int(names[0].rsplit('-', 1)[1])
    return simulation.training_steps(
        config_io.load_config(run_dir), global_step)


def _log_to_file(path):
    """Send the 'agents' log lines of this worker to a file."""
    logger = logging.getLogger('agents')
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(path, encoding='utf-8')
    handler.setFormatter(logging.Formatter(
        '%(asctime)s %(levelname)s %(message)s', '%Y-%m-%d %H:%M:%S'))
    logger.addHandler(handler)
