"""The runs of a sweep on Ray (see docs/sweeps.md): the sweep's process
submits them and prints their progress (`train_runs`); each run, or each
population of runs, trains in a Ray worker of its own (`train_run`)."""

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
from agents.training import sweep_progress
from agents.training import sweep_records
from agents.training import trainer

# The sweep's file beside its runs that asks them to save and stop.
STOP_NAME = 'stop-requested'
# Seconds between a run's looks for the sweep's stop file.
_STOP_POLL_SECONDS = 0.25
# Seconds to wait for the runs to save their checkpoints after Ctrl-C.
_STOP_SECONDS = 600.0
_POLL_SECONDS = 0.5


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
    """Train the `(pack, config)` pairs of `todo` (a `sweep_grid.Pack`,
    its runs' `run_dir` set) on Ray, a Ray task per pack, printing their
    progress with `echo`, and put their runs' records in `records` by run
    name; `options`: dict of `cpus_per_run`, `env_mode`, `max_retries` and
    `sweep_dir`. Ctrl-C raises KeyboardInterrupt once every run stopped."""
    # Of an earlier sweep of this timestamp that was interrupted.
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(options['sweep_dir'], STOP_NAME))
    if not todo:
        return
    progress = ray.remote(num_cpus=0)(sweep_progress.Progress).remote()
    # A fresh worker process per run: TensorFlow's process-wide settings
    # and memory stay with the run.
    task = ray.remote(max_calls=1)(train_run).options(
        num_cpus=options['cpus_per_run'], max_retries=options['max_retries'],
        retry_exceptions=False)
    pending = {}
    try:
        with stopping.StopRequest(_describe_interrupt).install():
            # Within: runs submitted before an interruption stop with it.
            for pack, config in todo:
                ref = task.remote(
                    config, options['env_mode'], [
                        (run.run_dir, sweep_records.new_record(run))
                        for run in pack.runs], progress,
                    dict(seeds=pack.seeds, variants=pack.variants) if len(
                        pack.runs) > 1 else None)
                pending[ref] = pack
            _wait(ray, pending, records, progress, echo)
    except KeyboardInterrupt:
        # Every run looks for the file between its session runs, since Ray's
        # cancellation can miss the run's thread.
        os.makedirs(options['sweep_dir'], exist_ok=True)
        atomic_file.write_atomic(
            os.path.join(options['sweep_dir'], STOP_NAME), '')
        echo(f'Interrupted; stopping '
             f'{sum(len(pack.runs) for pack in pending.values())} runs with '
             'a checkpoint (interrupt again to stop them without).')
        for ref in pending:
            ray.cancel(ref)
        try:
            with stopping.StopRequest(_describe_interrupt).install():
                _wait(ray, pending, records, progress, echo,
                      deadline=time.monotonic() + _STOP_SECONDS)
        except KeyboardInterrupt:
            for ref in pending:
                ray.cancel(ref, force=True)
        for pack in pending.values():
            for run in pack.runs:
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
            pack = pending.pop(ref)
            try:
                finished = ray.get(ref)
            except ray.exceptions.TaskCancelledError:
                finished = [_stored_record(run) for run in pack.runs]
                for record in finished:
                    if record['status'] == 'running':
                        record['status'] = 'interrupted'
            except ray.exceptions.RayError as error:
                # The worker or node died more often than Ray retries.
                message = (f'{type(error).__name__}: '
                           f'{batch_env_lib.first_line(error)}')
                finished = [
                    dict(_stored_record(run), status='failed', error=message)
                    for run in pack.runs]
                echo(f'[{pack.name}] failed: {message}')
            records.update(
                (run.name, record)
                for run, record in zip(pack.runs, finished))


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


def train_run(config, env_mode, runs, progress, population=None):
    """Train or resume a run, or a population (`population`: the trainer's
    `seeds` and `variants` as a dict), in a Ray worker; return the
    final records of `runs`, pairs of a run's folder and record, one per
    member of a population. A run folder's `config.yaml` and records
    replace `config` and those of `runs`. The errors of training go into
    the records, so that Ray retries only when its worker dies; `progress`
    is the sweep's `Progress` actor."""
    import ray  # pylint: disable=import-outside-toplevel
    run_dir = config.logdir
    records = []
    for folder, record in runs:
        os.makedirs(folder, exist_ok=True)
        records.append(sweep_records.read_record(folder) or record)
    _log_to_file(os.path.join(run_dir, 'train.log'))
    resumed = checkpoint_steps(run_dir)
    for record in records:
        record['attempts'].append(dict(
            pid=os.getpid(), host=socket.gethostname(),
            node=ray.get_runtime_context().get_node_id(),
            resumed_from=resumed))
    attempt = _Attempt(
        os.path.basename(run_dir), [folder for folder, _ in runs], records,
        progress)
    attempt.save(status='running', error=None)
    if len(records[0]['attempts']) > 1:
        attempt.say(
            f'attempt {len(records[0]["attempts"])} resumes from step '
            f'{resumed:,}.', wait=False)
    try:
        _train(config, env_mode, attempt.on_report, population)
    except KeyboardInterrupt:
        # Training saved a checkpoint of its last step before it stopped.
        steps = max([checkpoint_steps(run_dir)] + [
            record['steps'] for record in records])
        attempt.save(steps=steps, status='interrupted')
        attempt.say(f'stopped with a checkpoint at step {steps:,}.')
        return records
    except Exception as error:
        message = batch_env_lib.first_line(error)
        if not isinstance(
                error, (config_io.ConfigError, errors.TrainingError)):
            message = f'{type(error).__name__}: {message}'
        attempt.save(status='failed', error=message)
        attempt.say(f'failed: {message}')
        return records
    attempt.save(status='finished')
    lines = []
    for record in records:
        final, best = sweep_records.final_and_best(record)
        lines.append(
            f'[{record["run"]}] finished at step {record["steps"]:,} in '
            f'{record["wall_clock"]:.0f} s: final score '
            f'{sweep_records.format_score(final)}, best '
            f'{sweep_records.format_score(best)}.')
    attempt.put(lines)
    return records


class _Attempt:
    """The records of the runs of an attempt, written to their folders on
    each change; `name` prefixes the lines of the attempt."""

    def __init__(self, name, folders, records, progress):
        self._name = name
        self._paths = [
            os.path.join(folder, sweep_records.RECORD_NAME)
            for folder in folders]
        self._records = records
        self._progress = progress
        self._wall_clocks = [record['wall_clock'] for record in records]
        self._start = time.monotonic()

    def save(self, **changes):
        """Update the records and write them."""
        seconds = time.monotonic() - self._start
        for path, record, wall_clock in zip(
                self._paths, self._records, self._wall_clocks):
            record.update(changes, wall_clock=round(wall_clock + seconds, 1))
            atomic_file.write_atomic(
                path, json.dumps(record, indent=1) + '\n')

    def say(self, line, wait=True):
        """Put a line of the attempt into the sweep's progress."""
        self.put([f'[{self._name}] {line}'], wait)

    def put(self, lines, wait=True):
        """Put lines into the sweep's progress."""
        import ray  # pylint: disable=import-outside-toplevel
        ref = self._progress.put.remote(*lines)
        if wait:
            ray.get(ref)

    def on_report(self, step, score, member_scores=None):
        """Record and print an evaluation report: the score of the run, or
        each member's of a population."""
        lines = []
        for record, value in zip(self._records, (
                [score] if member_scores is None else member_scores)):
            value = None if math.isnan(value) else float(value)
            # A retried run reports again the steps after its checkpoint.
            reports = [
                report for report in record['reports'] if report[0] < step]
            record.update(reports=reports + [[step, value]], steps=step)
            lines.append(
                f'[{record["run"]}] step {step:,}: score '
                f'{sweep_records.format_score(value)}')
        self.save()
        self.put(lines, wait=False)


def _train(config, env_mode, on_report, population):
    """Train the config, or that of its run folder, until done or stopped;
    `population`: None, or the trainer's `seeds` and `variants`."""
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
        for _ in trainer.train(
                config, env_mode, on_report=on_report, **population or {}):
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
