"""End-to-end tests: signals and stuck steps stop training cleanly.

SIGINT and SIGTERM, to the trainer or to its whole process group as
schedulers send them, in every env mode, also while a step hangs; and
environments that hang in the trainer's process. The script runs in a
subprocess of its own process group, so that real signals reach it. Helpers
and test doubles come from `train_reliability_test`.
"""

import os
import re
import shutil
import signal
import tempfile
import time

import pytest

from agents import tools
from agents.training import checkpoints
from agents.training import config_io
from agents.training import simulation
from agents.training import stopping
from agents.scripts.train_reliability_test import _Script
from agents.scripts.train_reliability_test import _main
from agents.scripts.train_reliability_test import _new_run_folder
from agents.scripts.train_reliability_test import _resume_one_phase
from agents.scripts.train_reliability_test import _saved_checkpoint
from agents.scripts.train_reliability_test import _saved_checkpoints
from agents.scripts.train_reliability_test import _wait_until_gone


@pytest.mark.parametrize(
    'signum', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_signal_saves_a_checkpoint_and_the_run_resumes(
        monkeypatch, tmp_path, signum):
    """A signal saves, closes the workers and exits; the run resumes.

    SIGINT goes to the process group, as Ctrl-C in a terminal sends it, and
    SIGTERM to the trainer alone. The same timestamp resumes the run.
    """
    # Without a seed, so that `main` here leaves op determinism alone.
    run_dir = _new_run_folder(str(tmp_path), 'T', steps=1e5, seed=None)
    # Worker processes that step slices of the batch must be gone too.
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=slices')
    try:
        script.wait_for(r'INFO Step \d+ \(eval\): mean score ')
        script.record_descendants()
        if signum == signal.SIGINT:
            os.killpg(script.process.pid, signum)
        else:
            script.process.send_signal(signum)
        code, seconds = script.finish()
    finally:
        script.kill()
    name = signal.Signals(signum).name
    assert code == 128 + signum and seconds < 15
    assert script.lines[-1] == (
        f'Interrupted by {name}; resume with --logdir={tmp_path} '
        '--timestamp=T.')
    assert not _wait_until_gone(script.descendants)
    saved, _ = _saved_checkpoint(script, run_dir)
    if signum == signal.SIGINT:
        return
    # Resume, here to save the import.
    _resume_one_phase(monkeypatch, tmp_path, run_dir, saved, 'inprocess')


def _wait_for_file(path, seconds=60):
    """Wait until a file exists; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        assert time.monotonic() < deadline, f'No {path} yet.'
        time.sleep(0.05)


def _faulty_run(tmp_path, env_mode, fault, environ=None, **overrides):
    """The script on a run folder of `FaultyEnvironment`s, past a report.

    Returns the script, once the fault began in a step, and the run folder.
    """
    overrides.setdefault('seed', None)
    run_dir = _new_run_folder(
        str(tmp_path), 'T', env=tools.FaultyEnvironment, steps=1e5,
        **overrides)
    fault_file = tmp_path / 'fault'
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', f'--env_mode={env_mode}',
        fault_file=fault_file, environ=environ)
    script.wait_for(r'INFO Step \d+ \(eval\)')
    fault_file.write_text(fault)
    _wait_for_file(str(fault_file) + '.reached')
    script.record_descendants()
    return script, run_dir


def _last_reported_step(lines):
    """The training steps of the last progress line of the script."""
    return max(
        int(match.group(1)) for match in map(
            re.compile(r'INFO Step (\d+) ').search, lines) if match)


@pytest.mark.parametrize('env_mode', ['inprocess', 'processes', 'slices'])
def test_sigterm_to_the_process_group_mid_step_saves_and_exits_143(
        tmp_path, env_mode):
    """SIGTERM to the whole group, as schedulers send it, during a step.

    Workers ignore it and finish the step; the trainer saves the step,
    closes them and exits with 143.
    """
    script, run_dir = _faulty_run(tmp_path, env_mode, 'slow')
    # Only the steps under way when the signal comes are slow: the rest of
    # the session call, which the trainer finishes before it saves, runs at
    # full speed (20 s less in process).
    saved_step = _terminate_group_and_check_the_save(
        script, run_dir, tmp_path,
        then=lambda: os.remove(tmp_path / 'fault'))
    # The signal may land in an evaluation step, or between a report and
    # the next step (a loaded machine, seen in CI): the step saved is then
    # the one reported last, never an earlier one.
    assert saved_step >= _last_reported_step(script.lines), '\n'.join(
        script.lines)
    assert not _wait_until_gone(script.descendants)


def _terminate_group_and_check_the_save(
        script, run_dir, tmp_path, then=lambda: None):
    """SIGTERM the script's process group, call `then`; check exit, line
    and checkpoint.

    Returns:
        The training steps of the one checkpoint that the interrupted run
        saved.
    """
    try:
        os.killpg(script.process.pid, signal.SIGTERM)
        then()
        code, _ = script.finish()
    finally:
        script.kill()
    assert code == 143, '\n'.join(script.lines)
    assert script.lines[-1] == (
        f'Interrupted by SIGTERM; resume with --logdir={tmp_path} '
        '--timestamp=T.')
    saved, = _saved_checkpoints(script.lines)
    assert checkpoints.list_checkpoints(run_dir)[0] == saved
    return _training_steps(run_dir, saved)


def _training_steps(run_dir, checkpoint):
    """The training steps of a checkpoint, named by its global step."""
    return simulation.training_steps(
        config_io.load_config(run_dir), int(checkpoint.rsplit('-', 1)[1]))


@pytest.fixture(name='short_temp_dir')
def fixture_short_temp_dir():
    """An empty temporary folder with a short path: the socket of the
    forkserver of the slices lies below it, and a Unix socket's path holds
    at most 107 bytes, which pytest's folders of long test names exceed."""
    path = tempfile.mkdtemp(prefix='sig-')
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_hung_environment_in_process_stops_the_run_in_one_line(
        tmp_path, short_temp_dir):
    """An environment stuck in process stops the run after worker_timeout.

    Nothing interrupts the stuck step, so the watchdog saves the last
    completed step, prints the line of a worker's timeout and exits,
    leaving no multiprocessing folder `pymp-*` in the temporary folder.
    """
    temp_dir = short_temp_dir
    script, run_dir = _faulty_run(
        tmp_path, 'inprocess', 'hang', environ=dict(TMPDIR=str(temp_dir)),
        worker_timeout=2)
    try:
        code, _ = script.finish()
    finally:
        script.kill()
    assert code == 1, '\n'.join(script.lines)
    assert script.lines[-1] == (
        'Error: Training stopped: Environment 0 of the batch failed: '
        'Environment <PendulumEnv<Pendulum-v1>> in this process did not '
        'answer within 2 seconds; it cannot be interrupted, so the process '
        'stops.')
    saved, = _saved_checkpoints(script.lines)
    assert checkpoints.list_checkpoints(run_dir)[0] == saved
    assert _training_steps(run_dir, saved) >= _last_reported_step(
        script.lines)
    assert not _wait_until_gone(script.descendants)
    assert os.listdir(temp_dir) == []


@pytest.mark.parametrize('env_mode', ['inprocess', 'slices'])
def test_signal_during_a_hung_step_saves_and_exits(
        tmp_path, env_mode, short_temp_dir):
    """SIGTERM ends a run whose step hangs, long before worker_timeout.

    The last completed step is saved, no process is left, nor a
    multiprocessing folder `pymp-*` in the temporary folder (the forkserver
    of the slices has its socket there), and the run resumes from it.
    """
    temp_dir = short_temp_dir
    script, run_dir = _faulty_run(
        tmp_path, env_mode, 'hang', environ=dict(TMPDIR=str(temp_dir)))
    saved_step = _terminate_group_and_check_the_save(script, run_dir, tmp_path)
    assert saved_step >= _last_reported_step(script.lines)
    assert not _wait_until_gone(script.descendants)
    assert os.listdir(temp_dir) == []


def test_signal_during_the_final_save_says_the_run_finished(
        monkeypatch, tmp_path, capsys):
    """SIGTERM as the last checkpoint is saved waits for it: the run
    finished, exit 0, and the checkpoint is whole."""
    run_dir = _new_run_folder(str(tmp_path), 'T')
    save = checkpoints.RunSaver.save

    def save_with_a_signal(
            self, sess, prefix=None, global_step=None, **kwargs):
        if global_step == 80:  # The run's last step.
            os.kill(os.getpid(), signal.SIGTERM)
        return save(self, sess, prefix, global_step, **kwargs)

    monkeypatch.setattr(checkpoints.RunSaver, 'save', save_with_a_signal)
    # An interruption would end this process, the test's, with os._exit.
    monkeypatch.setattr(stopping, 'exit_now', stopping.exit_with)
    code = _main(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    assert code == 0
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        'Training finished; SIGTERM arrived at its end and waited for the '
        'final checkpoint.')
    assert checkpoints.list_checkpoints(run_dir)[0] == os.path.join(
        run_dir, 'model.ckpt-80')
    assert os.path.exists(os.path.join(run_dir, 'model.ckpt-80.meta'))
