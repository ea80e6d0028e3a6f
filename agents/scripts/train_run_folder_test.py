"""End-to-end tests: the run folder stays the run's own and stays sound.

One trainer at a time, timestamps that name folders inside --logdir,
checkpoints looked up inside the folder being resumed (also when copied, or
when its `checkpoint` index is damaged or stale), `max_to_keep` across
restarts, a full disk, and resumes that fail without writing. Helpers and
test doubles come from `train_reliability_test`.
"""

import errno
import logging
import os
import shutil
import signal

import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.lib.io import file_io

from agents.training import run_folder
from agents.scripts import train
from agents.training import checkpoints
from agents.training.run_folder_test import _fail_removals_below
from agents.scripts.train_reliability_test import _Script
from agents.scripts.train_reliability_test import _edit_config
from agents.scripts.train_reliability_test import _listing
from agents.scripts.train_reliability_test import _main
from agents.scripts.train_reliability_test import _main_last_line
from agents.scripts.train_reliability_test import _new_run_folder
from agents.scripts.train_reliability_test import _recording
from agents.scripts.train_reliability_test import _tiny_config
from agents.scripts.utility_test import _logged
from agents.tools import loop_test


@pytest.fixture(name='finished_run', scope='module')
def fixture_finished_run(tmp_path_factory):
    """A finished run folder of the tiny config: its checkpoint is step 80.

    Tests copy it; the `checkpoint` index names absolute paths, as savers
    before relative paths wrote it.
    """
    run_dir = str(tmp_path_factory.mktemp('finished') / 'T-pendulum')
    list(train.train(_tiny_config(logdir=run_dir, seed=None), False))
    tf.train.update_checkpoint_state(
        run_dir, os.path.join(run_dir, 'model.ckpt-80'))
    return run_dir


def _copy_run(finished_run, logdir):
    """Copy the finished run into a log directory, as `cp -r` does."""
    run_dir = os.path.join(logdir, 'T-pendulum')
    shutil.copytree(finished_run, run_dir)
    return run_dir


def _refusal(capsys, logdir, *flags):
    """The error line of the script run with `--logdir` and the flags,
    which exits with code 2 and leaves the folder as it was."""
    before = _listing(logdir)
    code, line = _main_last_line(capsys, f'--logdir={logdir}', *flags)
    assert code == 2, line
    assert _listing(logdir) == before
    return line


def test_second_trainer_on_a_run_folder_exits_2_and_writes_nothing(
        tmp_path, capsys):
    """A run folder in use by a trainer refuses a second one in one line.

    The lock ends with the trainer, also when it is killed.
    """
    run_dir = _new_run_folder(str(tmp_path), 'T', steps=1e5, seed=None)
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    try:
        script.wait_for(r'INFO Step \d+ \(eval\)')
        # Frozen, so that the folder changes only if the second one writes.
        os.killpg(script.process.pid, signal.SIGSTOP)
        before = _listing(tmp_path)
        result = _main_last_line(
            capsys, f'--logdir={tmp_path}', '--timestamp=T',
            '--env_mode=inprocess')
        assert _listing(tmp_path) == before
    finally:
        script.kill()
    assert result == (
        2, f'Error: Run folder {run_dir} is in use by process '
        f'{script.process.pid}, another trainer; wait for it to end, or pass '
        'another --timestamp for a new run.')
    run_folder.RunLock(run_dir).acquire().release()


@pytest.mark.parametrize(
    'timestamp', ['../escaped', '2024/01', '', '.hidden', 'a:b'])
def test_invalid_timestamp_exits_2_without_writing(
        tmp_path, capsys, timestamp):
    """A timestamp that is no plain folder name fails in one line."""
    logdir = tmp_path / 'runs'
    assert _main_last_line(
        capsys, f'--logdir={logdir}', '--config=pendulum',
        f'--timestamp={timestamp}') == (
            2, f'Error: --timestamp={timestamp!r} must be 1 to 100 letters, '
            "digits, '.', '_', '+' or '-', starting with a letter or digit; "
            'it names a folder inside --logdir.')
    assert os.listdir(tmp_path) == []


def test_timestamp_resumes_only_its_own_run_folder(tmp_path, capsys):
    """Another config, or a longer timestamp, is not resumed.

    The folder `exp-pendulum` belongs to `--timestamp=exp` and the config
    pendulum; `a-b-pendulum` to `--timestamp=a-b`, not to `--timestamp=a`.
    """
    run_dir = _new_run_folder(str(tmp_path), 'exp')
    _new_run_folder(str(tmp_path), 'a-b')
    assert _refusal(
        capsys, tmp_path, '--config=cartpole', '--timestamp=exp') == (
            f'Error: Run folder {run_dir} of --timestamp=exp has the '
            "config 'pendulum', not 'cartpole'; pass --config=pendulum or no "
            '--config to resume it, or another --timestamp for a new run.')
    assert _refusal(capsys, tmp_path, '--timestamp=a') == (
        'Error: Pass --config to start a new run (no run folder with '
        f"timestamp 'a' in {tmp_path}).")


def test_copied_run_folder_resumes_from_its_own_checkpoint(
        finished_run, tmp_path, monkeypatch):
    """A copy resumes from its own files, not from those its index names.

    Its `checkpoint` index names the original's absolute paths, and the
    original is still there.
    """
    run_dir = _copy_run(finished_run, str(tmp_path))
    restored = []
    monkeypatch.setattr(checkpoints, 'initialize_variables', _recording(
        checkpoints.initialize_variables, restored))
    code = _main(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    assert code == 0
    assert restored == [os.path.join(run_dir, 'model.ckpt-80')]


def test_resume_without_a_readable_checkpoint_exits_2_and_writes_nothing(
        finished_run, tmp_path, capsys):
    """A resume that cannot restore fails in one line, leaving no trace."""
    run_dir = _copy_run(finished_run, str(tmp_path))
    shutil.rmtree(os.path.join(run_dir, 'train'))
    shutil.rmtree(os.path.join(run_dir, 'eval'))
    data = os.path.join(run_dir, 'model.ckpt-80.data-00000-of-00001')
    with open(data, 'r+b') as file_:
        file_.truncate(os.path.getsize(data) // 2)
    before = _listing(tmp_path)
    code = _main(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1].startswith(
        f'Error: Cannot resume {run_dir}: No readable checkpoint: '
        f'{run_dir}/model.ckpt-80: '), lines[-1]
    assert _listing(tmp_path) == before


def test_moved_run_folder_stops_its_trainer_at_the_next_save(
        finished_run, tmp_path, capsys, monkeypatch):
    """The lock follows the path: a trainer whose folder moved saves
    nothing more at the old path, and the moved folder keeps its files."""
    run_dir = _copy_run(finished_run, str(tmp_path))
    _edit_config(run_dir, steps=80)
    moved = str(tmp_path / 'moved')
    save = checkpoints.RunSaver.save

    def move_then_save(self, *args, **kwargs):
        if not os.path.exists(moved):
            os.rename(run_dir, moved)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(checkpoints.RunSaver, 'save', move_then_save)
    assert _main_last_line(
        capsys, f'--logdir={tmp_path}', '--timestamp=T',
        '--env_mode=inprocess') == (
            1, f'Error: Run folder {run_dir} was moved or removed while '
            'training; stopped without saving there. A moved folder resumes '
            'from its last checkpoint where it is now.')
    assert not os.path.exists(run_dir)
    assert checkpoints.list_checkpoints(moved) == [
        os.path.join(moved, 'model.ckpt-80')]
    # Its `.lock` went along, free now.
    run_folder.RunLock(moved).acquire().release()


def test_new_run_restores_no_checkpoint_it_did_not_write(
        finished_run, tmp_path, capsys):
    """A folder with checkpoints but no config.yaml (another trainer's
    after a move) is refused to a new run, which writes nothing."""
    run_dir = _copy_run(finished_run, str(tmp_path))
    os.remove(os.path.join(run_dir, 'config.yaml'))
    assert _refusal(
        capsys, tmp_path, '--timestamp=T', '--config=pendulum',
        '--env_mode=inprocess') == (
            f'Error: Run folder {run_dir} holds checkpoints of another '
            'run (model.ckpt-80) but no config.yaml; a new run restores none '
            'it did not write: pass another --timestamp.')


@pytest.mark.parametrize('values, message', [
    (dict(num_agents=4), "config.yaml's num_agents=4 changes the shape of "
     'environments/env_temporary/observ from [2, 3] in model.ckpt-80 to '
     '[4, 3]'),
    (dict(policy_layers=(16,)), "config.yaml's policy_layers=(16,) changes "
     'the shape of network/policy/hidden_0/kernel from [3, 8] in '
     'model.ckpt-80 to [3, 16]'),
])
def test_resume_that_changes_a_shape_exits_2_naming_the_key(
        finished_run, tmp_path, capsys, values, message):
    """Refused before the restore, which would take the values and fail
    steps later; the folder stays as it was."""
    run_dir = _copy_run(finished_run, str(tmp_path))
    _edit_config(run_dir, **values)
    assert _refusal(
        capsys, tmp_path, '--timestamp=T', '--env_mode=inprocess') == (
            f'Error: Cannot resume {run_dir}: {message}; a resumed run '
            'keeps the shapes it started with: restore the value, or start '
            'a new run with another --timestamp.')


def _fail_meta_graph_writes(
        monkeypatch, error=tf.errors.ResourceExhaustedError,
        cause='No space left on device'):
    """Have writes of meta graphs meet a full disk half way.

    TensorFlow writes the meta graph of a checkpoint last, to a temporary
    file that it renames, after it updated the `checkpoint` index; on a full
    disk the write fails and the temporary file stays, as seen on a small
    tmpfs.
    """
    write = file_io.write_string_to_file

    def write_string_to_file(filename, file_content):
        if '.meta.tmp' not in filename:
            return write(filename, file_content)
        write(filename, file_content[:len(file_content) // 2])
        raise error(None, None, f'{filename}; {cause}')

    monkeypatch.setattr(file_io, 'write_string_to_file', write_string_to_file)


def test_full_disk_stops_in_one_line_and_keeps_earlier_checkpoints(
        finished_run, tmp_path, capsys, monkeypatch):
    """A checkpoint that meets a full disk: one line, exit 1, no leftovers.

    The resumed run saves at its end, step 160; the earlier checkpoint
    stays as it was.
    """
    run_dir = _copy_run(finished_run, str(tmp_path))
    _edit_config(run_dir, steps=80)
    earlier = {
        name: content for name, content in _listing(run_dir).items()
        if name.startswith('model.ckpt-80')}
    _fail_meta_graph_writes(monkeypatch)
    assert _main_last_line(
        capsys, f'--logdir={tmp_path}', '--timestamp=T',
        '--env_mode=inprocess') == (
            1, f'Error: Cannot save checkpoint {run_dir}/model.ckpt-160: '
            'No space left on device.')
    assert sorted(
        name for name in os.listdir(run_dir) if name.startswith('model')) == (
            sorted(earlier))
    assert not [name for name in os.listdir(run_dir) if 'tmp' in name]
    listing = _listing(run_dir)
    assert {name: listing[name] for name in earlier} == earlier
    assert checkpoints.list_checkpoints(run_dir) == [
        os.path.join(run_dir, 'model.ckpt-80')]


def test_failed_first_checkpoint_leaves_no_index_and_resumes_from_step_0(
        tmp_path, capsys, monkeypatch):
    """A first save that met a full disk leaves no `checkpoint` index.

    TensorFlow had written the index naming it before it failed; the
    resume then says that it starts over.
    """
    run_dir = _new_run_folder(str(tmp_path), 'T', seed=None)
    with monkeypatch.context() as patch:
        _fail_meta_graph_writes(patch)
        assert _main_last_line(
            capsys, f'--logdir={tmp_path}', '--timestamp=T',
            '--env_mode=inprocess') == (
                1, f'Error: Cannot save checkpoint {run_dir}/model.ckpt-80: '
                'No space left on device.')
    assert sorted(os.listdir(run_dir)) == ['config.yaml', 'eval', 'train']
    with _logged(logging.INFO) as messages:
        code = _main(
            f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    assert code == 0
    assert (
        f'No checkpoint in {run_dir} yet; training starts at step 0.'
        in messages)
    assert checkpoints.list_checkpoints(run_dir) == [
        os.path.join(run_dir, 'model.ckpt-80')]


def test_read_only_run_folder_ends_with_the_checkpoint_error(
        finished_run, tmp_path, capsys, monkeypatch):
    """A run folder that became read-only: the save's line, exit 1.

    Releasing the run lock fails too, on `.lock`, and must not replace the
    error that ended the run. Tests run as root here, which writes
    regardless of permissions, so the read-only mount is mocked: the
    meta graph write and every removal in the folder fail with EROFS.
    """
    run_dir = _copy_run(finished_run, str(tmp_path))
    _edit_config(run_dir, steps=80)
    _fail_meta_graph_writes(
        monkeypatch, tf.errors.FailedPreconditionError,
        os.strerror(errno.EROFS))
    remove = _fail_removals_below(monkeypatch, run_dir)
    assert _main_last_line(
        capsys, f'--logdir={tmp_path}', '--timestamp=T',
        '--env_mode=inprocess') == (
            1, f'Error: Cannot save checkpoint {run_dir}/model.ckpt-160: '
            'Read-only file system.')
    assert run_folder.LOCK_NAME in os.listdir(run_dir)
    monkeypatch.setattr(os, 'remove', remove)
    run_folder.RunLock(run_dir).acquire().release()


def test_full_disk_for_summaries_stops_in_one_line(
        finished_run, tmp_path, capsys, monkeypatch):
    """Summaries that meet a full disk: one line naming the file, exit 1."""
    run_dir = _copy_run(finished_run, str(tmp_path))
    _edit_config(run_dir, steps=80)
    monkeypatch.setattr(tf.summary, 'FileWriter', loop_test.FullDiskWriter)
    assert _main_last_line(
        capsys, f'--logdir={tmp_path}', '--timestamp=T',
        '--env_mode=inprocess') == (
            1, f'Error: Cannot write {run_dir}/train/events.out.tfevents.1.'
            'host: No space left on device.')


def test_config_cut_short_exits_2_without_writing(tmp_path, capsys):
    """A config.yaml that lost its last bytes stops the resume in one line.

    Without its closing line, `worker_timeout: 600` cut to `6` would pass.
    """
    run_dir = _new_run_folder(str(tmp_path), 'T', worker_timeout=600)
    path = os.path.join(run_dir, 'config.yaml')
    with open(path, 'r+b') as file_:
        file_.truncate(os.path.getsize(path) - 3)
    assert _refusal(capsys, tmp_path, '--timestamp=T') == (
        f"Error: {path} is incomplete: its last line '# end of "
        "config.yaml' is missing, so it was cut short; restore it, or start "
        'a new run with another --timestamp.')
