"""Tests for the phase schedule, intervals and resumption of Loop."""

# These tests reach private names of the module they test.
# pylint: disable=protected-access

import collections
import logging
import math
import os
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import batch_env
from agents.tools import in_graph_batch_env
from agents.tools import loop as loop_module
from agents.tools import phase_reports
from agents.tools import phase_schedule
from agents.testing import mock_algorithm
from agents.testing import mock_environment
from agents.tools.simulate import simulate

Run = collections.namedtuple('Run', 'phase, step, reset, log, report, extra')


def _define_phase(loop, name, batch, runs, extra=None):
    """Phase tensors that record each run; every episode ends each run.

    The score of agent `i` is the global step before the run plus `i`.
    """
    extra = tf.constant(0) if extra is None else extra

    def step(global_step, reset, log, report, extra):
        runs.append(Run(
                name, int(global_step), bool(reset), bool(log), bool(report),
                int(extra)))
        score = global_step + np.arange(batch, dtype=np.float32)
        return np.ones(batch, bool), score.astype(np.float32)

    done, score = tf.numpy_function(
            step, [loop.step, loop.reset, loop.log, loop.report, extra],
            [tf.bool, tf.float32])
    done.set_shape((batch,))
    score.set_shape((batch,))
    summary = tf.cond(
            loop.log, lambda: tf.summary.scalar(name, tf.reduce_mean(score)),
            str)
    return done, score, summary


def _define_loop(logdir, runs, switches='variables', step_phases=None):
    """Phases 'train' (8 steps, batch 2) and 'eval' (3 steps, batch 1).

    With `switches='placeholders'` the loop feeds its switches and the phase
    value on every run; with 'variables' it sets them inside the graph.
    """
    if switches == 'placeholders':
        loop = loop_module.Loop(
                logdir, None, *[tf.placeholder(tf.bool, ()) for _ in range(3)],
                step_phases=step_phases)
        is_training = tf.placeholder(tf.int32, ())
    else:
        loop = loop_module.Loop(logdir, step_phases=step_phases)
        is_training = tf.Variable(0, trainable=False, name='is_training')
    loop.add_phase(
            'train', *_define_phase(loop, 'train', 2, runs, is_training),
            steps=8, report_every=8, log_every=4, checkpoint_every=6,
            feed={is_training: 1})
    loop.add_phase(
            'eval', *_define_phase(loop, 'eval', 1, runs, is_training),
            steps=3, report_every=3, log_every=2,
            feed={is_training: 2})
    return loop


def _event_steps(logdir, tag):
    """Global steps of the summaries with a tag in a folder's event files."""
    steps = []
    for filename in sorted(os.listdir(logdir)):
        path = os.path.join(logdir, filename)
        for event in tf.train.summary_iterator(path):
            if any(value.tag == tag for value in event.summary.value):
                steps.append(event.step)
    return steps


def _define_saver(resume_state=False):
    """Saver that leaves out temporary variables, as the scripts do; with
    `resume_state`, it keeps `tools.resume_variables()` too."""
    return tf.train.Saver(
            [var for var in tf.global_variables()
             if '_temporary' not in var.name] +
            (tools.resume_variables() if resume_state else []),
            max_to_keep=10)


def _run_restarted(logdir, first_runs, second_runs, **options):
    """Run a loop to step 15, then a loop of a new graph restored from its
    last checkpoint on to step 22.

    Args:
      logdir: Folder of the checkpoints.
      first_runs: List that records the runs of the first loop.
      second_runs: List that records the runs of the second loop.
      **options: `switches` of `_define_loop`, `resume_state` of
          `_define_saver`.

    Returns:
      The scores of the second loop.
    """
    switches = options.get('switches', 'variables')
    resume_state = options.get('resume_state', False)
    with tf.Graph().as_default():
        loop = _define_loop(logdir, first_runs, switches)
        saver = _define_saver(resume_state)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert list(loop.run(sess, saver, max_step=15)) == [3.5, 9.0]
    with tf.Graph().as_default():
        loop = _define_loop(logdir, second_runs, switches)
        saver = _define_saver(resume_state)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, tf.train.latest_checkpoint(logdir))
            assert sess.run(loop.step) == 15
            return list(loop.run(sess, saver, max_step=22))


def _checkpoint_steps(logdir):
    state = tf.train.get_checkpoint_state(logdir)
    return [int(path.rsplit('-', 1)[1])
            for path in state.all_model_checkpoint_paths]


@pytest.mark.parametrize('switches', ['variables', 'placeholders'])
def test_phases_alternate_with_their_steps(switches):
    """Phases take turns by environment steps; each turn starts with reset."""
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(None, runs, switches)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            list(loop.run(sess, None, max_step=33))
            assert sess.run(loop.step) == 33
    schedule = [(run.phase, run.step, run.reset, run.extra) for run in runs]
    assert schedule == [
            ('train', 0, True, 1), ('train', 2, False, 1),
            ('train', 4, False, 1), ('train', 6, False, 1),
            ('eval', 8, True, 2), ('eval', 9, False, 2),
            ('eval', 10, False, 2),
            ('train', 11, True, 1), ('train', 13, False, 1),
            ('train', 15, False, 1), ('train', 17, False, 1),
            ('eval', 19, True, 2), ('eval', 20, False, 2),
            ('eval', 21, False, 2),
            ('train', 22, True, 1), ('train', 24, False, 1),
            ('train', 26, False, 1), ('train', 28, False, 1),
            ('eval', 30, True, 2), ('eval', 31, False, 2),
            ('eval', 32, False, 2)]


@pytest.fixture(name='made')
def _made_callables(monkeypatch):
    """The session callables that loops make during the test."""
    made = []
    original = loop_module._callable

    def counted(*args, **kwargs):
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(loop_module, '_callable', counted)
    return made


@pytest.mark.parametrize('switches', ['variables', 'placeholders'])
def test_phases_of_the_same_tensors_share_one_callable(made, switches):
    """Phases that run the same tensors over the same batch run as one
    session callable; each phase's mean still holds its own episodes only,
    also over turns between its reports."""
    runs = []
    with tf.Graph().as_default():
        if switches == 'placeholders':
            switches = [tf.placeholder(tf.bool, ()) for _ in range(3)]
            loop = loop_module.Loop(None, None, *switches)
            phase = tf.placeholder(tf.int32, ())
        else:
            loop = loop_module.Loop(None)
            phase = tf.Variable(0, trainable=False)
        tensors = _define_phase(loop, 'both', 2, runs, phase)
        loop.add_phase('train', *tensors, steps=8, report_every=8,
                       feed={phase: 1})
        loop.add_phase('eval', *tensors, steps=4, report_every=8,
                       feed={phase: 2})
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, None, max_step=36))
    assert len(made) == 1
    assert [(run.step, run.reset, run.extra) for run in runs] == [
            (0, True, 1), (2, False, 1), (4, False, 1), (6, False, 1),
            (8, True, 2), (10, False, 2),
            (12, True, 1), (14, False, 1), (16, False, 1), (18, False, 1),
            (20, True, 2), (22, False, 2),
            (24, True, 1), (26, False, 1), (28, False, 1), (30, False, 1),
            (32, True, 2), (34, False, 2)]
    # Scores are the global step plus the agent's index. Train reports its
    # turns (steps 0-7, 12-19, 24-31); eval every second turn (8-11 and
    # 20-23), between which the train turn's episodes stay out of its mean.
    assert scores == [3.5, 15.5, 15.5, 27.5]


def test_phases_of_different_tensors_run_as_callables_of_their_own(made):
    """Phases of different tensors make a callable each."""
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(None, runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert list(loop.run(sess, None, max_step=11)) == [3.5, 9.0]
    assert len(made) == 2


def test_run_outside_of_the_graph_context():
    """The loop runs, and builds its switch ops, without its graph being
    the default, as when a caller iterates it elsewhere."""
    runs = []
    with tf.Graph().as_default() as graph:
        loop = _define_loop(None, runs)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    try:
        sess.run(init)
        assert list(loop.run(sess, None, max_step=11)) == [3.5, 9.0]
    finally:
        sess.close()
    assert [(run.phase, run.step, run.reset, run.extra) for run in runs] == [
            ('train', 0, True, 1), ('train', 2, False, 1),
            ('train', 4, False, 1), ('train', 6, False, 1),
            ('eval', 8, True, 2), ('eval', 9, False, 2),
            ('eval', 10, False, 2)]


@pytest.mark.parametrize('switches', ['variables', 'placeholders'])
def test_intervals_and_reported_scores(tmp_path, switches):
    """Log, report and checkpoint intervals fire on the right runs."""
    logdir = str(tmp_path)
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(logdir, runs, switches)
        saver = _define_saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, saver, max_step=22))
    # Train reports after phase steps 8 and 16, eval after 3 and 6.
    assert scores == [3.5, 9.0, 14.5, 20.0]
    logged = [run.step for run in runs if run.log]
    reported = [run.step for run in runs if run.report]
    assert logged == [2, 6, 9, 13, 17, 19, 21]
    assert reported == [6, 10, 17, 21]
    # Summaries and checkpoints carry the global step after their run.
    assert _event_steps(os.path.join(logdir, 'train'), 'train') == [
            4, 8, 15, 19]
    assert _event_steps(os.path.join(logdir, 'eval'), 'eval') == [10, 20, 22]
    assert _checkpoint_steps(logdir) == [6, 15]
    assert os.path.exists(os.path.join(logdir, 'model.ckpt-15.index'))


def test_step_phases_show_their_steps_and_the_others_beside(
        tmp_path, caplog):
    """With `step_phases`, progress lines and summaries show the training
    steps, the evaluation steps beside them; checkpoints keep the global
    step."""
    logdir = str(tmp_path)
    with tf.Graph().as_default():
        loop = _define_loop(logdir, [], step_phases=('train',))
        saver = _define_saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with caplog.at_level(logging.INFO, logger='agents'):
                list(loop.run(sess, saver, max_step=22))
    assert [record.getMessage().split(', ')[:2] for record in caplog.records
            ] == [
                ['Step 8 (train): mean score 3.500', 'eval steps 0'],
                ['Step 8 (eval): mean score 9.000', 'eval steps 3'],
                ['Step 16 (train): mean score 14.500', 'eval steps 3'],
                ['Step 16 (eval): mean score 20.000', 'eval steps 6']]
    # Those of `test_intervals_and_reported_scores`, at the global steps
    # 4, 8, 15, 19 and 10, 20, 22.
    assert _event_steps(os.path.join(logdir, 'train'), 'train') == [
            4, 8, 12, 16]
    assert _event_steps(os.path.join(logdir, 'eval'), 'eval') == [8, 16, 16]
    assert _checkpoint_steps(logdir) == [6, 15]
    assert [loop.shown_step(step) for step in (0, 7, 8, 11, 12, 22)] == [
            0, 7, 8, 8, 9, 16]
    assert phase_schedule.phase_steps_at(20, [8, 3]) == [16, 4]


def test_runs_of_many_steps_count_them():
    """A phase whose runs make `run_steps` steps each (a compiled rollout
    of 3 steps of a batch of 2) advances the global step by them, and its
    report falls on the run that reaches its interval."""
    runs = []
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        loop.add_phase(
                'train', *_define_phase(loop, 'train', 2, runs), steps=4)
        loop.add_phase(
                'eval', *_define_phase(loop, 'eval', 2, runs), steps=12,
                report_every=12, run_steps=6)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, None, max_step=32))
    assert [(run.phase, run.step, run.reset, run.report) for run in runs] == [
            ('train', 0, True, False), ('train', 2, False, False),
            ('eval', 4, True, False), ('eval', 10, False, True),
            ('train', 16, True, False), ('train', 18, False, False),
            ('eval', 20, True, False), ('eval', 26, False, True)]
    # The mean of the eval runs' scores: global steps 4, 5, 10 and 11.
    assert scores == [7.5, 23.5]


def test_without_logdir_nothing_is_logged(tmp_path):
    """Without a log folder, no run computes summaries or saves."""
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(None, runs)
        saver = _define_saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, saver, max_step=22))
    assert scores == [3.5, 9.0, 14.5, 20.0]
    assert not any(run.log for run in runs)
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize('switches', ['variables', 'placeholders'])
def test_rebuilt_loop_resumes_from_checkpoint(tmp_path, switches):
    """A new graph restored from a checkpoint continues the schedule."""
    first_runs, second_runs = [], []
    scores = _run_restarted(
        str(tmp_path), first_runs, second_runs, switches=switches)
    assert [(run.phase, run.step) for run in first_runs][-1] == ('train', 13)
    assert second_runs == [
            Run('train', 15, True, False, False, 1),
            Run('train', 17, False, True, True, 1),
            Run('eval', 19, True, True, False, 2),
            Run('eval', 20, False, False, False, 2),
            Run('eval', 21, False, True, True, 2)]
    # The train report only covers the episodes since the restart.
    assert scores == [(15 + 16 + 17 + 18) / 4, 20.0]


def test_loop_restored_with_its_resume_state_goes_on_with_the_turn(
        tmp_path):
    """A checkpoint with `tools.resume_variables()` continues the turn.

    The first run after the restart does not begin the turn anew, and the
    report covers the episodes before the restart too, as a loop that ran
    straight through reports.
    """
    straight_runs, first_runs, second_runs = [], [], []
    with tf.Graph().as_default():
        loop = _define_loop(str(tmp_path / 'straight'), straight_runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            straight = list(loop.run(sess, None, max_step=22))
    scores = _run_restarted(
        str(tmp_path / 'restarted'), first_runs, second_runs,
        resume_state=True)
    assert second_runs[0] == Run('train', 15, False, False, False, 1)
    assert second_runs == straight_runs[-len(second_runs):]
    # The train report covers the runs of the turn from step 11 on.
    assert scores == straight[-2:] == [(11 + 12 + 17 + 18) * 2 / 8, 20.0]


def test_progress_line(monkeypatch, caplog):
    """Each report logs step, phase, score, speed, elapsed time and ETA."""

    class FakeTime:
        """Clock that advances by fixed amounts on each reading."""

        def __init__(self, times):
            self._times = iter(times)

        def monotonic(self):
            """Return the next time."""
            return next(self._times)

    monkeypatch.setattr(
            phase_reports, 'time',
            FakeTime([100.0, 104.0, 104.0, 109.0, 110.0]))
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(None, runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with caplog.at_level(logging.INFO, logger='agents'):
                list(loop.run(sess, None, max_step=22))
    assert [record.name for record in caplog.records] == ['agents'] * 4
    # No ETA on the first report, whose time holds the start-up (once ETA
    # 0:19:52 on the first line of a run of 27 s); then at the speed since.
    assert [record.getMessage() for record in caplog.records] == [
            'Global step 8 (train): mean score 3.500, 2.0 steps/s, elapsed '
            '0:00:04.',
            'Global step 11 (eval): mean score 9.000, steps/s n/a, elapsed '
            '0:00:04.',
            'Global step 19 (train): mean score 14.500, 1.6 steps/s, '
            'elapsed 0:00:09, ETA 0:00:01.',
            'Global step 22 (eval): mean score 20.000, 3.0 steps/s, '
            'elapsed 0:00:10, ETA 0:00:00.']


def test_report_without_episodes_yields_nan():
    """A report without finished episodes yields NaN."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        loop.add_phase(
                'train', tf.constant([False]), tf.constant([1.0]), '', 2,
                report_every=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, None, max_step=4))
    assert len(scores) == 2
    assert all(math.isnan(score) for score in scores)


def test_scalar_done_and_score():
    """An unbatched phase counts one step per run."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        loop.add_phase(
                'train', tf.constant(True), tf.constant(2.5), '', 3,
                report_every=3)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert list(loop.run(sess, None, max_step=6)) == [2.5, 2.5]
            assert sess.run(loop.step) == 6


def test_default_step_and_switches():
    """Missing tensors are created: the global step and bool variables."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        assert loop.step is tf.train.get_global_step()
        for variable in (loop.log, loop.report, loop.reset):
            assert isinstance(variable, tf.compat.v2.Variable)
            assert variable.dtype == tf.bool
            assert variable.shape.ndims == 0
            assert not variable.trainable
            assert variable.name.startswith('loop_temporary/')
        step = tf.Variable(0, name='my_step')
        log = tf.placeholder(tf.bool, ())
        loop = loop_module.Loop(None, step, log=log)
        assert loop.step is step
        assert loop.log is log


def test_overshooting_phases_and_a_phase_without_its_variable():
    """Switch variables follow phases whose length is not a multiple of the
    batch, and a variable that a phase leaves out keeps its value there."""
    runs = []
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        extra = tf.Variable(0, trainable=False)
        loop.add_phase(
                'train', *_define_phase(loop, 'train', 2, runs, extra),
                steps=5, report_every=3, feed={extra: 7})
        loop.add_phase(
                'eval', *_define_phase(loop, 'eval', 2, runs, extra),
                steps=2, report_every=2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            list(loop.run(sess, None, max_step=16))
    assert [(run.phase, run.step, run.reset, run.report, run.extra)
            for run in runs] == [
            ('train', 0, True, False, 7), ('train', 2, False, True, 7),
            ('train', 4, False, True, 7), ('eval', 6, True, True, 7),
            ('train', 8, True, False, 7), ('train', 10, False, True, 7),
            ('eval', 12, True, True, 7), ('train', 14, True, True, 7)]


def test_caller_thread_phase_runs_its_ops_in_the_calling_thread():
    """A phase with `caller_thread` runs its ops in the thread of `run`;
    the others in TensorFlow's thread pool."""
    threads = []

    def step(phase):
        threads.append((phase.decode(), threading.get_ident()))
        return np.ones(1, bool), np.zeros(1, np.float32)

    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        for name, steps in (('train', 3), ('eval', 2)):
            done, score = tf.numpy_function(
                    step, [tf.constant(name)], [tf.bool, tf.float32])
            done.set_shape((1,))
            score.set_shape((1,))
            loop.add_phase(
                    name, done, score, tf.constant(''), steps,
                    caller_thread=name == 'eval')
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            list(loop.run(sess, None, max_step=10))
    caller = threading.get_ident()
    assert [phase for phase, _ in threads] == ['train'] * 3 + ['eval'] * 2 + [
            'train'] * 3 + ['eval'] * 2
    assert all((ident == caller) == (phase == 'eval')
               for phase, ident in threads), threads


def test_run_without_phases():
    """Running a loop without phases is an error."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(RuntimeError) as error:
                next(loop.run(sess, None))
    assert str(error.value) == 'Add a phase to the loop before running it.'


@pytest.mark.parametrize('kwargs, message', [
        (dict(name=''), "Expected a non-empty string as phase name, got ''."),
        (dict(name='train'), "There is already a phase named 'train'."),
        (dict(steps=0), 'Expected steps to be a positive integer, got 0.'),
        (dict(steps=2.5), 'Expected steps to be a positive integer, got 2.5.'),
        (dict(log_every=-1),
         'Expected log_every to be a positive integer, got -1.'),
        (dict(report_every=float('nan')),
         'Expected report_every to be a positive integer, got nan.'),
        (dict(checkpoint_every=True),
         'Expected checkpoint_every to be a positive integer, got True.'),
        (dict(run_steps=0),
         'Expected run_steps to be a positive integer, got 0.'),
        (dict(done=(2, 2), score=(2, 2)),
         "Expected 'done' and 'score' of the same known shape, either "
         'scalars or vectors over the batch, got (2, 2) and (2, 2).'),
        (dict(score=(3,)),
         "Expected 'done' and 'score' of the same known shape, either "
         'scalars or vectors over the batch, got (2,) and (3,).'),
])
def test_add_phase_errors(kwargs, message):
    """Bad phase arguments are rejected with their value."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        loop.add_phase('train', tf.zeros(2, tf.bool), tf.zeros(2), '', 2)
        arguments = dict(name='eval', done=(2,), score=(2,), steps=2)
        arguments.update(kwargs)
        arguments['done'] = tf.zeros(arguments['done'], tf.bool)
        arguments['score'] = tf.zeros(arguments['score'])
        with pytest.raises(ValueError) as error:
            loop.add_phase(summary='', **arguments)
    assert str(error.value) == message


def test_unknown_batch_size():
    """Phases need a static batch size to count their steps."""
    with tf.Graph().as_default():
        loop = loop_module.Loop(None)
        done = tf.placeholder(tf.bool, (None,))
        score = tf.placeholder(tf.float32, (None,))
        with pytest.raises(ValueError) as error:
            loop.add_phase('train', done, score, '', 2)
    assert str(error.value) == (
            "Expected 'done' and 'score' of the same known shape, either "
            'scalars or vectors over the batch, got (None,) and (None,).')


def test_simulation_phases():
    """Loop drives simulate on mock environments with exact scores."""
    envs = [mock_environment.MockEnvironment(durations=(duration,))
            for duration in (2, 3)]
    with tf.Graph().as_default():
        env = in_graph_batch_env.InGraphBatchEnv(
                batch_env.BatchEnv(envs, True))
        loop = loop_module.Loop(None)
        algo = mock_algorithm.MockAlgorithm(env)
        done, score, summary = simulate(
                env, algo, loop.log, loop.reset)
        loop.add_phase('train', done, score, summary, 12, report_every=12)
        loop.add_phase('eval', done, score, summary, 6, report_every=6)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, None, max_step=36))
    # Each train turn makes 6 steps per environment: 3 episodes of 2 steps
    # and 2 of 3 steps. Each eval turn makes 3: one episode of each length,
    # and the reset at the next train turn cuts short the started episode.
    assert scores == pytest.approx([21 / 5, 9 / 2] * 2)
    assert envs[0].steps == [2, 2, 2, 2, 1] * 2
    assert envs[1].steps == [3] * 6


def test_stop_ends_the_loop_before_the_next_run():
    """`stop` is asked before every run; the loop ends where it says so."""
    runs = []
    asked = []

    def stop():
        asked.append(len(runs))
        return len(runs) == 5

    with tf.Graph().as_default():
        loop = _define_loop(None, runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            scores = list(loop.run(sess, None, max_step=33, stop=stop))
            assert sess.run(loop.step) == 9
    assert asked == [0, 1, 2, 3, 4, 5]
    assert [(run.phase, run.step) for run in runs] == [
            ('train', 0), ('train', 2), ('train', 4), ('train', 6),
            ('eval', 8)]
    assert scores == [3.5]


def test_event_files_appear_with_the_first_run(tmp_path):
    """A loop that never runs, say of a resume that failed, writes nothing."""
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(str(tmp_path), runs)
        assert not os.listdir(tmp_path)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            list(loop.run(sess, None, max_step=2))
    assert sorted(os.listdir(tmp_path)) == ['eval', 'train']


class FullDiskWriter:
    """Summary writer whose events meet a full disk, as TensorFlow's do."""

    def __init__(self, logdir, unused_graph=None):
        self._path = os.path.join(logdir, 'events.out.tfevents.1.host')

    def add_summary(self, unused_summary, unused_step):
        """Fail the way a writer whose thread met a full disk fails."""
        raise RuntimeError(
                f'{self._path}; No space left on device\n\tFailed to flush 3 '
                f'events to {self._path}')

    def flush(self):
        """Fail again."""
        self.add_summary(None, None)


def test_summary_write_error_is_one_line(tmp_path, monkeypatch):
    """A writer's error names the file and the cause, nothing more."""
    monkeypatch.setattr(loop_module.tf.summary, 'FileWriter', FullDiskWriter)
    runs = []
    with tf.Graph().as_default():
        loop = _define_loop(str(tmp_path), runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(OSError) as error:
                list(loop.run(sess, None, max_step=33))
    path = tmp_path / 'train' / 'events.out.tfevents.1.host'
    assert str(error.value) == (
            f'Cannot write {path}: No space left on device.')


def test_run_changes_no_operation_the_session_ran():
    """Once TensorFlow's warning that an operation 'was changed by setting
    attribute after it was run by a session', per phase and run."""
    runs = []
    with tf.Graph().as_default() as graph:
        loop = _define_loop(None, runs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = {node.name: node for node in graph.as_graph_def().node}
            list(loop.run(sess, None, max_step=11))
            after = {node.name: node for node in graph.as_graph_def().node}
    changed = [name for name, node in before.items() if after[name] != node]
    assert changed == []
