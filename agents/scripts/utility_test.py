"""Tests of checkpoint discovery and the in-graph batch of environments."""

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time

import pytest
import tensorflow.compat.v1 as tf
from tensorflow.python.lib.io import file_io

from agents import tools
from agents.environments import auto_batch_env
from agents.scripts import utility
from agents.testing import worker_testing

_mock_constructor = worker_testing.mock_constructor


def _save_steps(logdir, steps, max_to_keep=5):
    """Save checkpoints whose variable holds the step, one saver for all."""
    with tf.Graph().as_default():
        variable = tf.Variable(0.0)
        saver = tf.train.Saver([variable], max_to_keep=max_to_keep)
        with tf.Session() as sess:
            for step in steps:
                sess.run(variable.assign(float(step)))
                saver.save(sess, os.path.join(logdir, 'model.ckpt'), step)


def _restore(logdir):
    """Restore the variable of `_save_steps` from a folder.

    Returns:
      The path of the restored checkpoint and the variable's value.
    """
    with tf.Graph().as_default():
        variable = tf.Variable(0.0)
        saver = tf.train.Saver([variable])
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, logdir)
            return path, sess.run(variable)


def test_list_checkpoints_newest_first_and_skips_missing(tmp_path):
    _save_steps(str(tmp_path), (10, 20, 30))
    os.remove(tmp_path / 'model.ckpt-30.index')
    paths = utility.list_checkpoints(str(tmp_path))
    assert [os.path.basename(path) for path in paths] == [
        'model.ckpt-20', 'model.ckpt-10']


def test_initialize_variables_falls_back_from_corrupt_checkpoint(tmp_path):
    _save_steps(str(tmp_path), (1, 2))
    data = [name for name in os.listdir(tmp_path)
            if name.startswith('model.ckpt-2.data')]
    with open(tmp_path / data[0], 'wb') as file_:
        file_.write(b'garbage')
    path, value = _restore(str(tmp_path))
    assert os.path.basename(path) == 'model.ckpt-1'
    assert value == 1.0


class _Messages(logging.Handler):
    """Collects the messages of a logger, which may not propagate."""

    def __init__(self, level):
        super().__init__(level)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _logged(level):
    """The messages that the 'agents' logger logs meanwhile.

    Args:
      level: The lowest level collected, e.g. `logging.WARNING`.

    Yields:
      The list of the messages, which grows as they come.
    """
    handler = _Messages(level)
    logging.getLogger('agents').addHandler(handler)
    try:
        yield handler.messages
    finally:
        logging.getLogger('agents').removeHandler(handler)


@pytest.fixture(name='warnings')
def fixture_warnings():
    """The messages of warnings logged meanwhile."""
    with _logged(logging.WARNING) as messages:
        yield messages


def _resume_graph(logdir, with_state, save_step=None):
    """A model variable and an episode variable kept for resuming.

    Saves the values of step `save_step` with the trainer's saver, or
    restores the newest checkpoint; without `with_state`, the graph of an
    older run that kept no resume state.

    Returns:
      The restored path and the values of both variables.
    """
    with tf.Graph().as_default():
        model = tf.Variable(0.0, name='model')
        with tf.variable_scope('episodes_temporary'):
            episode = tf.Variable(-1.0, name='length')
        if with_state:
            tools.keep_for_resume(episode)
        saver = utility.define_saver(
            exclude=(r'.*_temporary/.*',), include=tools.resume_variables())
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, logdir)
            values = sess.run([model, episode])
            if save_step is not None:
                sess.run([model.assign(1.0), episode.assign(7.0)])
                saver.save(
                    sess, os.path.join(logdir, 'model.ckpt'), save_step)
            return path, values


@pytest.fixture(name='info')
def fixture_info():
    """The 'agents' logger logs INFO meanwhile."""
    logger = logging.getLogger('agents')
    previous = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(previous)


@pytest.mark.usefixtures('info')
def test_saver_keeps_the_resume_state_and_restores_older_checkpoints(
        tmp_path):
    """Checkpoints of older runs, without resume state, still restore.

    The variables they hold are restored, the others keep their initial
    values, and one line says so.
    """
    logdir = str(tmp_path)
    _resume_graph(logdir, with_state=False, save_step=1)
    with _logged(logging.INFO) as messages:
        path, values = _resume_graph(logdir, with_state=True, save_step=2)
    assert os.path.basename(path) == 'model.ckpt-1'
    assert values == [1.0, -1.0]
    assert messages == [
        f'Checkpoint {path} holds no state for an exact resumption (1 '
        'variables such as episodes_temporary/length); they begin from '
        'their initial values.']
    with _logged(logging.INFO) as messages:
        path, values = _resume_graph(logdir, with_state=True)
    assert os.path.basename(path) == 'model.ckpt-2'
    assert values == [1.0, 7.0]
    assert not messages
    # The 2017 saver leaves the state out.
    with tf.Graph().as_default():
        tf.Variable(0.0, name='model')
        with tf.variable_scope('episodes_temporary'):
            tools.keep_for_resume(tf.Variable(-1.0, name='length'))
        saver = utility.define_saver(exclude=(r'.*_temporary/.*',))
        assert not saver.optional
        assert [variable.op.name for variable in saver.required] == [
            'model']


@pytest.mark.parametrize('index, warning', [
    (b'\x80\x81\xfe random bytes', 'is damaged'),
    (b'', 'is damaged'),
    (b'model_checkpoint_path: "model.ckpt-20"\n'
     b'all_model_checkpoint_paths: "model.ckpt-10"\n'
     b'all_model_checkpoint_paths: "model.ckpt-20"\n',
     'names model.ckpt-20 as the latest checkpoint, but model.ckpt-30 is '
     'newer; trying the newest first.'),
], ids=['random_bytes', 'empty', 'stale'])
def test_damaged_or_stale_checkpoint_index_restores_the_newest(
        tmp_path, warnings, index, warning):
    """The folder's newest complete checkpoint wins over its index file."""
    _save_steps(str(tmp_path), (10, 20, 30))
    with open(tmp_path / 'checkpoint', 'wb') as file_:
        file_.write(index)
    assert _restore(str(tmp_path)) == (str(tmp_path / 'model.ckpt-30'), 30.0)
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f'The checkpoint index {tmp_path}/checkpoint ')
    assert warning in warnings[0]


def test_stale_index_naming_a_deleted_checkpoint_says_so(
        tmp_path, warnings):
    """With the newest `.index` deleted, the index names a missing one."""
    _save_steps(str(tmp_path), (32000, 64000, 96000))
    os.remove(tmp_path / 'model.ckpt-96000.index')
    assert utility.list_checkpoints(str(tmp_path), warn=True) == [
        str(tmp_path / 'model.ckpt-64000'),
        str(tmp_path / 'model.ckpt-32000')]
    assert warnings == [
        f'The checkpoint index {tmp_path}/checkpoint names model.ckpt-96000 '
        'as the latest checkpoint, but model.ckpt-96000.index is missing; '
        'trying model.ckpt-64000, the newest found.']
    for name in os.listdir(tmp_path):
        if name.startswith('model.ckpt-'):
            os.remove(tmp_path / name)
    warnings.clear()
    assert not utility.list_checkpoints(str(tmp_path), warn=True)
    assert warnings == [
        f'The checkpoint index {tmp_path}/checkpoint names model.ckpt-96000 '
        'as the latest checkpoint, but model.ckpt-96000.index is missing; '
        'no other checkpoint is in the folder.']


def _fail_meta_graph_writes(monkeypatch):
    """A full disk for the meta graph, which TensorFlow writes last.

    It writes the `checkpoint` index before, naming the new checkpoint.
    """
    write = file_io.write_string_to_file

    def write_string_to_file(filename, file_content):
        if '.meta.tmp' not in filename:
            return write(filename, file_content)
        raise tf.errors.ResourceExhaustedError(
            None, None, f'{filename}; No space left on device')

    monkeypatch.setattr(file_io, 'write_string_to_file', write_string_to_file)


@contextlib.contextmanager
def _run_saver(logdir):
    """A session of one variable restored from `logdir`, with its saver and
    the `RunSaver` over it."""
    with tf.Graph().as_default():
        tf.Variable(0.0)
        saver = utility.define_saver()
        with tf.Session() as sess:
            utility.initialize_variables(sess, saver, logdir)
            yield sess, saver, utility.RunSaver(saver, logdir)


@pytest.mark.parametrize('earlier', [(), (10,)], ids=['first', 'second'])
def test_failed_save_leaves_no_index_entry_naming_it(
        tmp_path, monkeypatch, warnings, earlier):
    """A save that failed after TensorFlow updated the index is forgotten.

    The index names the earlier checkpoints only, or is gone where none
    was saved before, so that the next resume sees what the folder holds.
    """
    _save_steps(str(tmp_path), earlier)
    with _run_saver(str(tmp_path)) as (sess, saver, run_saver):
        with monkeypatch.context() as patch:
            _fail_meta_graph_writes(patch)
            with pytest.raises(utility.CheckpointError) as error:
                run_saver.save(sess, None, 20)
        assert str(error.value) == (
            f'Cannot save checkpoint {tmp_path}/model.ckpt-20: No space '
            'left on device.')
        assert saver.last_checkpoints == [
            str(tmp_path / f'model.ckpt-{step}') for step in earlier]
    assert not [name for name in os.listdir(tmp_path) if '-20' in name]
    if earlier:
        with open(tmp_path / 'checkpoint', encoding='utf-8') as file_:
            assert file_.read() == (
                'model_checkpoint_path: "model.ckpt-10"\n'
                'all_model_checkpoint_paths: "model.ckpt-10"\n')
    else:
        assert not os.path.exists(tmp_path / 'checkpoint')
    assert utility.list_checkpoints(str(tmp_path), warn=True) == [
        str(tmp_path / f'model.ckpt-{step}') for step in earlier]
    assert not warnings


def test_failed_save_on_a_full_disk_leaves_no_temporary_file(
        tmp_path, monkeypatch):
    """A full disk fails every write after creating the file, also the
    rewrite of the index after the failed save."""
    _save_steps(str(tmp_path), [10])
    write = file_io.write_string_to_file

    def write_string_to_file(filename, file_content):
        if '.tmp' not in filename:
            return write(filename, file_content)
        write(filename, '')
        raise tf.errors.ResourceExhaustedError(
            None, None, f'{filename}; No space left on device')

    with _run_saver(str(tmp_path)) as (sess, _, run_saver):
        monkeypatch.setattr(
            file_io, 'write_string_to_file', write_string_to_file)
        with pytest.raises(utility.CheckpointError):
            run_saver.save(sess, None, 20)
    # The index that could not be rewritten is removed (see `_forget`).
    assert sorted(os.listdir(tmp_path)) == [
        'model.ckpt-10.data-00000-of-00001', 'model.ckpt-10.index',
        'model.ckpt-10.meta']


def test_max_to_keep_holds_across_restarts(tmp_path):
    """Checkpoints of earlier runs count against the saver's max_to_keep.

    Seven restarts left one checkpoint each; the eighth run's first save
    leaves the five newest.
    """
    for step in range(1, 8):
        _save_steps(str(tmp_path), [step])
    with tf.Graph().as_default():
        variable = tf.Variable(0.0)
        saver = utility.define_saver()
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, str(tmp_path))
            assert path == str(tmp_path / 'model.ckpt-7')
            utility.RunSaver(saver, str(tmp_path)).save(sess, None, 8)
            assert sess.run(variable) == 7.0
    assert [os.path.basename(path) for path in utility.list_checkpoints(
        str(tmp_path))] == [f'model.ckpt-{step}' for step in (8, 7, 6, 5, 4)]
    with open(tmp_path / 'checkpoint', encoding='utf-8') as file_:
        assert file_.readline() == 'model_checkpoint_path: "model.ckpt-8"\n'


_SAVE_FOREVER = """
import sys
import tensorflow.compat.v1 as tf
from tensorflow.python.lib.io import file_io
with tf.Graph().as_default():
    weights = tf.Variable(tf.zeros([4, 1 << 20]), name='weights')
    value = tf.placeholder(tf.float32, ())
    assign = weights.assign(tf.fill([4, 1 << 20], value))
    saver = tf.train.Saver(max_to_keep=2)
    with tf.Session() as sess:
        for step in range(1, 1000):
            sess.run(assign, {value: float(step)})
            print(step, flush=True)
            saver.save(sess, sys.argv[1] + '/model.ckpt', step)
"""


def test_checkpoint_of_a_killed_save_is_skipped(tmp_path):
    """SIGKILL while saving leaves the previous checkpoint restorable.

    TensorFlow writes each checkpoint file under a temporary name and
    renames it, the index after the data, and replaces the `checkpoint`
    state file atomically, so a checkpoint is either complete or ignored.
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3')
    with subprocess.Popen(
            [sys.executable, '-c', _SAVE_FOREVER, str(tmp_path)],
            stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            for _ in range(3):
                start = time.monotonic()
                step = int(process.stdout.readline())
            # Kill about half way through writing checkpoint `step`.
            time.sleep((time.monotonic() - start) / 2)
        finally:
            process.send_signal(signal.SIGKILL)
            process.stdout.close()
    with tf.Graph().as_default():
        weights = tf.Variable(tf.zeros([4, 1 << 20]), name='weights')
        saver = tf.train.Saver()
        with tf.Session() as sess:
            path = utility.initialize_variables(sess, saver, str(tmp_path))
            # The writer may have gone on while this process slept.
            restored = int(path.rsplit('-', 1)[1])
            assert restored >= step - 1
            assert (sess.run(weights) == restored).all()


def test_auto_mode_keeps_only_the_workers_of_its_choice(
        monkeypatch, by_value):
    """The first use of the batch chooses; the other candidates are closed."""
    del by_value
    before = worker_testing.child_pids()
    chosen = []
    time_candidates = auto_batch_env.time_candidates

    def timed(batch_envs):
        mode, rates = time_candidates(batch_envs)
        chosen.append(mode)
        return mode, rates

    monkeypatch.setattr(auto_batch_env, 'time_candidates', timed)
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(_mock_constructor, 4, 'auto')
        try:
            assert batch_env[0] is not None  # Its first use chooses.
            workers = len(worker_testing.child_pids() - before)
            cpus = len(os.sched_getaffinity(0))
            expected = {'inprocess': 0, 'slices': min(4, cpus)}
            assert workers == expected[chosen[0] if cpus > 1 else 'inprocess']
        finally:
            batch_env.close()
    assert worker_testing.child_pids() <= before


# The 2017 call forms, which research code written for that package uses.


def test_load_config_of_a_new_run_raises_an_ioerror(tmp_path):
    """2017 training scripts start a new run inside `except IOError:`."""
    with pytest.raises(IOError, match='No config.yaml in run folder'):
        utility.load_config(str(tmp_path / 'new-run'))


def test_save_config_sets_the_logdir(tmp_path):
    """2017 scripts read `config.logdir` right after saving."""
    config = tools.AttrDict(env='Pendulum-v1', steps=10)
    returned = utility.save_config(config, str(tmp_path))
    assert returned is config
    assert config.logdir == str(tmp_path)
    assert utility.load_config(str(tmp_path)).logdir == str(tmp_path)
    with pytest.raises(RuntimeError):
        config.steps = 20


def _mock_environment():
    return tools.MockEnvironment(
        observ_shape=(2,), action_shape=(1,), min_duration=3,
        max_duration=3)


def _without_arguments():
    """A 2017 constructor: no seed argument."""
    return _mock_environment()


@pytest.mark.parametrize('call', ['positional', 'keyword'])
def test_define_batch_env_takes_the_2017_arguments(call):
    """A constructor without arguments, and `env_processes`.

    Was `TypeError: <lambda>() takes 0 positional arguments but 1 was given`
    and `unexpected keyword argument 'env_processes'`.
    """
    with tf.Graph().as_default():
        if call == 'positional':
            batch_env = utility.define_batch_env(
                _without_arguments, 2, False)
        else:
            batch_env = utility.define_batch_env(
                _without_arguments, 2, env_processes=True)
        try:
            assert len(batch_env) == 2
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                observ = sess.run(batch_env.reset())
            assert observ.tolist() == [[0.0, 0.0], [0.0, 0.0]]
        finally:
            batch_env.close()


def test_workers_of_a_2017_constructor_do_not_import_tensorflow():
    """The 2017 script's `lambda: _create_environment(config)` holds the
    config, with the algorithm class and TensorFlow's optimizer: once each
    worker imported TensorFlow (84 s to the graph with 10 workers against
    16 s in process)."""
    # pylint: disable-next=import-outside-toplevel
    from agents import algorithms
    config = tools.AttrDict(
        algorithm=algorithms.PPO, optimizer=tf.train.AdamOptimizer,
        max_length=5)
    with tf.Graph().as_default():
        # Sent by value, as a function of the script's `__main__` is.
        batch_env = utility.define_batch_env(
            lambda: tools.wrappers.LimitDuration(worker_testing.ModuleProbe(
                observ_shape=(2,), action_shape=(1,), min_duration=3,
                max_duration=3), config.max_length),
            2, env_processes=True)
    try:
        assert [batch_env[index].imported('tensorflow')
                for index in range(2)] == [False, False]
        assert [batch_env[index].imported('agents.algorithms.ppo.ppo')
                for index in range(2)] == [False, False]
    finally:
        batch_env.close()


def test_define_batch_env_refuses_both_mode_arguments():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=(
                r"^define_batch_env got env_mode='inprocess' and "
                r'env_processes=True; pass one of them\.$')):
            utility.define_batch_env(
                _mock_environment, 1, 'inprocess', env_processes=True)


def test_a_config_with_only_the_2017_keys_builds_ppo():
    """Once `AttrDict has no key 'chunk_length'` in PPO."""
    # pylint: disable-next=import-outside-toplevel
    from agents import algorithms
    # pylint: disable-next=import-outside-toplevel
    from agents.scripts import networks
    config = tools.AttrDict(
        algorithm=algorithms.PPO, num_agents=2, eval_episodes=2,
        use_gpu=False, network=networks.feed_forward_gaussian,
        weight_summaries=dict(all=r'.*'), policy_layers=(8,),
        value_layers=(8,), init_output_factor=0.1, init_std=0.35,
        update_every=2, update_epochs=2, optimizer=tf.train.AdamOptimizer,
        learning_rate=1e-4, discount=0.995, kl_target=1e-2,
        kl_cutoff_factor=2, kl_cutoff_coef=1000, kl_init_penalty=1,
        env='Pendulum-v1', max_length=5, steps=100)
    with tf.Graph().as_default():
        batch_env = utility.define_batch_env(
            _without_arguments, 2, False)
        try:
            graph = utility.define_simulation_graph(
                batch_env, config.algorithm, config)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                done = sess.run(graph.done)
            assert done.tolist() == [False, False]
        finally:
            batch_env.close()
    # The filled copy is PPO's: the researcher's own config is left as it
    # was.
    with pytest.raises(AttributeError):
        config.chunk_length  # pylint: disable=pointless-statement


def test_set_up_logging_lets_a_scripts_info_through(tmp_path):
    """As in 2017: once TensorFlow's logger stopped below ERROR, and a 2017
    script's `tf.logging.info('Score ...')` printed nothing. TensorFlow's
    own lines below ERROR stay out."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    tf_logger = logging.getLogger('tensorflow')
    tf_logger.addHandler(handler)
    try:
        utility.set_up_logging()
        tf.logging.info('Score %s.', -1000.0)
        _save_steps(str(tmp_path), [1])
        # TensorFlow logs 'Restoring parameters from ...' at INFO.
        assert _restore(str(tmp_path))[1] == 1.0
        tf.logging.error('Failed.')
    finally:
        tf_logger.removeHandler(handler)
    assert [record.getMessage() for record in records] == [
        'Score -1000.0.', 'Failed.']
