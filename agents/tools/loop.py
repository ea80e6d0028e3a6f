"""Run simulation phases, such as training and evaluation, in a schedule."""

import collections
import contextlib
import functools
import logging
import math
import numbers
import os

import tensorflow.compat.v1 as tf

from agents.tools import forwarding
from agents.tools import phase_reports
from agents.tools import phase_schedule as schedule
from agents.tools import resume_state
from agents.tools import streaming_mean
from agents.tools import temporary_scope

_Phase = collections.namedtuple(
        'Phase',
        'name, summary_dir, tensors, mean_score, batch, steps, feed, '
        'report_every, log_every, checkpoint_every, caller_thread, made')

_logger = logging.getLogger('agents')


class Loop:
    """Alternate phases of simulation steps, logging and checkpointing.

    The schedule follows from the global step alone, so a loop rebuilt on a
    restored step resumes where the checkpoint was taken. The switches and
    a phase's `feed` are placeholders fed on each run, or variables that
    the loop sets in the graph.

    Args:
        logdir: Folder for summaries (a subfolder per phase) and
            checkpoints, or None to write nothing.
        step: Integer global step variable; None gets or creates it.
        log: Bool switch (placeholder or variable) of the runs that
            compute summaries; None creates a variable.
        report: Bool switch of the runs that report the mean score.
        reset: Bool switch of the first run of a phase's turn.
        step_phases: Names of the phases whose steps progress lines and
            summaries show, the others' beside them; None: the global step.
    """

    def __init__(
            self, logdir, step=None, log=None, report=None, reset=None,
            step_phases=None):
        self._logdir = logdir
        self._step = (
            tf.train.get_or_create_global_step() if step is None else step)
        with temporary_scope.temporary_scope('loop') as scope:
            self._scope = scope
            self._log = _switch(log, 'should_log')
            self._report = _switch(report, 'do_report')
            self._reset = _switch(reset, 'force_reset')
            # Whether the next run continues a turn that earlier runs began;
            # a loop restored without it begins the turn anew.
            self._in_turn = tf.Variable(False, trainable=False, name='in_turn')
        resume_state.keep_for_resume(self._in_turn)
        self._phases = []
        self._reports = phase_reports.PhaseReports(
            self._phases, None if step_phases is None else tuple(step_phases),
            self._step.graph)
        self._first_switches = None
        # Per phase: the outputs of its runs and the switches after them.
        self._ops = []
        self._next_switches = []

    step = forwarding.read_only('step', 'Global step variable.')
    log = forwarding.read_only(
        'log', 'Bool placeholder or variable, true where summaries are '
        'computed.')
    report = forwarding.read_only(
        'report', 'Bool placeholder or variable, true where the score is '
        'reported.')
    reset = forwarding.read_only(
        'reset', "Bool placeholder or variable, true on a turn's first run.")

    def add_phase(
            self, name, done, score, summary, steps, report_every=None,
            log_every=None, checkpoint_every=None, feed=None,
            caller_thread=False, run_steps=None, made_steps=None):
        """Add a phase to the end of the schedule.

        The intervals `*_every` count the phase's own steps over all its turns
        and fire on the run that reaches a multiple; None never. A ValueError
        on an empty or taken name, steps or intervals that are not positive
        integers, or `done` and `score` that are not scalars or vectors of the
        same static shape.

        Args:
            name: Name of the phase, also its summary subfolder.
            done: Bool tensor, shape [batch] or scalar, of the episodes that
                ended in a run; `score` holds their scores.
            steps: Environment steps of each turn of the phase.
            feed: Dict from further placeholders or variables to their values
                on the phase's runs; a variable left out keeps its value.
            caller_thread: Whether the runs execute their ops in the calling
                thread, not TensorFlow's inter-op pool (faster for a small step
                graph).
            run_steps: Environment steps of a run of many steps (see
                `tools.compiled_rollout`); None: one per entry of `done`.
            made_steps: Integer tensor of the steps a run made, for runs that
                may stop before `run_steps`.
        """
        if not name or not isinstance(name, str):
            raise ValueError(
                    f'Expected a non-empty string as phase name, got {name!r}.')
        if any(phase.name == name for phase in self._phases):
            raise ValueError(f'There is already a phase named {name!r}.')
        steps = _positive_int(steps, 'steps')
        report_every, log_every, checkpoint_every = (
            _positive_int(value, key, optional=True) for key, value in (
                ('report_every', report_every), ('log_every', log_every),
                ('checkpoint_every', checkpoint_every)))
        done = tf.convert_to_tensor(done, tf.bool)
        score = tf.convert_to_tensor(score, tf.float32)
        summary = tf.convert_to_tensor(summary, tf.string)
        if (done.shape.ndims not in (0, 1) or not done.shape.is_fully_defined()
                or done.shape != score.shape):
            raise ValueError(
                    "Expected 'done' and 'score' of the same known shape, "
                    'either scalars or vectors over the batch, got '
                    f'{done.shape} and {score.shape}.')
        batch = _positive_int(run_steps, 'run_steps', optional=True) or (
            1 if done.shape.ndims == 0 else done.shape.as_list()[0])
        # Writers start in `run`: a loop that never runs writes no events.
        summary_dir = os.path.join(self._logdir, name) if self._logdir else None
        with temporary_scope.reenter(self._scope):
            mean_score = streaming_mean.StreamingMean(
                    (), tf.float32, 'mean_score')
        resume_state.keep_for_resume(mean_score.variables)
        feed = {tensor.ref(): value for tensor, value in (feed or {}).items()}
        self._phases.append(_Phase(
                name, summary_dir, (done, score, summary), mean_score, batch,
                steps, feed, report_every, log_every, checkpoint_every,
                bool(caller_thread), made_steps))

    def run(self, sess, saver, max_step=None, stop=None, describe=None):
        """Run the phases in turn, yielding at each report the mean score of
        the episodes that ended in the reporting phase since its last report
        (NaN when none ended), and logging a progress line to the 'agents'
        logger. A RuntimeError when no phase was added.

        Args:
            saver: Saver for checkpoints, or None to save none.
            max_step: Global step at which to stop; None runs forever.
            stop: Callable asked before every run, which ends the loop by
                returning true (signal handlers need only set a flag).
            describe: Callable `(sess, phase_name)` of the text (or None)
                that a report's progress line shows after the mean score.
        """
        if not self._phases:
            raise RuntimeError('Add a phase to the loop before running it.')
        global_step = int(sess.run(self._step))
        callables = self._make_callables(sess)
        self._reports.start(global_step)
        turn = None
        if sess.run(self._in_turn):  # A restored turn goes on.
            turn = self._find_current_phase(global_step)[:2]
        try:
            while max_step is None or global_step < max_step:
                if stop is not None and stop():
                    break
                index, epoch, steps_in = self._find_current_phase(global_step)
                phase = self._phases[index]
                phase_step = epoch * phase.steps + steps_in
                first_run, turn = turn != (index, epoch), (index, epoch)
                if first_run:
                    _logger.debug(
                            'Phase %s at phase step %d, global step %d.',
                            phase.name, phase_step, global_step)
                should_report = schedule.fires(
                    phase_step, phase.batch, phase.report_every)
                values = dict(phase.feed)
                values[self._log.ref()] = phase.summary_dir is not None and (
                    schedule.fires(phase_step, phase.batch, phase.log_every))
                values[self._report.ref()] = should_report
                values[self._reset.ref()] = first_run
                summary, mean_score, global_step = callables[index](values)
                global_step = int(global_step)
                if summary and phase.summary_dir is not None:
                    self._reports.write(phase, summary, global_step)
                if saver is not None and self._logdir and schedule.fires(
                        phase_step, phase.batch, phase.checkpoint_every):
                    tf.io.gfile.makedirs(self._logdir)
                    saver.save(sess, os.path.join(
                        self._logdir, 'model.ckpt'), global_step)
                if should_report:
                    self._reports.report(
                        phase, global_step, mean_score, max_step,
                        describe and describe(sess, phase.name))
                    yield float(mean_score)
        except BaseException:
            # Without hiding the error by another of the writers.
            for phase in self._phases:
                with contextlib.suppress(OSError):
                    self._reports.flush(phase)
            raise
        for phase in self._phases:
            self._reports.flush(phase)

    def shown_step(self, global_step):
        """The step shown at a global step: that of the `step_phases`."""
        return self._reports.shown_steps(global_step)[0]

    def _make_callables(self, sess):
        """Set the first switches; a session callable per phase."""
        # The ops are built on the first run, once the phases are known.
        if len(self._ops) != len(self._phases):
            with self._step.graph.as_default():
                self._first_switches = self._define_switches(
                    self._step,
                    first_run=tf.logical_not(self._in_turn.read_value()))
                self._ops, self._next_switches = self._define_runs()
        sess.run(self._first_switches)
        made = {}
        for phase, op, switches in zip(
                self._phases, self._ops, self._next_switches):
            if id(op) not in made:
                made[id(op)] = _callable(
                    sess, op[:3], switches, self._feeds(phase),
                    phase.caller_thread)
        return [made[id(op)] for op in self._ops]

    def _define_runs(self):
        """The outputs of each phase's runs and the switches after them."""
        phases = self._phases
        if self._can_share():
            with tf.name_scope('loop_shared'):
                index = self._locate(self._step.read_value()).index
                outputs = self._define_step(
                    *phases[0].tensors, phases[0].batch,
                    [phase.mean_score for phase in phases], index)
                switches = self._define_next_switches(
                    outputs[3], phases[0].batch)
            return [outputs] * len(phases), [switches] * len(phases)
        ops, next_switches = [], []
        for index, phase in enumerate(phases):
            made = phase.batch if phase.made is None else phase.made
            with tf.name_scope(f'loop_{index}'):
                ops.append(self._define_step(
                    *phase.tensors, made, [phase.mean_score]))
                next_switches.append(
                    self._define_next_switches(ops[-1][3], made))
        return ops, next_switches

    def _can_share(self):
        """Whether all phases can run as one session callable."""
        first = self._phases[0]

        def placeholders(phase):
            return [tensor.ref() for tensor in self._feeds(phase)]

        return all(
            all(mine is theirs
                for mine, theirs in zip(phase.tensors, first.tensors))
            and phase.batch == first.batch
            and phase.made is None and first.made is None
            and phase.caller_thread == first.caller_thread
            and placeholders(phase) == placeholders(first)
            for phase in self._phases[1:])

    def _define_step(
            self, done, score, summary, batch, mean_scores, index=None):
        """A run's summary, reported score, global step, and that step once
        all else ran; scores go to `mean_scores[index]` (None: the only)."""
        if done.shape.ndims == 0:
            done, score = done[None], score[None]
        # `control_dependencies` marks the ops it is given, which TensorFlow
        # warns about on ops a session ran: it is given new ones.
        done, score, summary = (
            tf.identity(tensor) for tensor in (done, score, summary))
        submits = []
        with tf.control_dependencies([done, score, summary]):
            for position, mean_score in enumerate(mean_scores):
                ended = done if index is None else tf.logical_and(
                    done, tf.equal(index, position))
                submits.append(mean_score.submit(
                    tf.gather(score, tf.where(ended)[:, 0])))
        clear = mean_scores[0].clear if index is None else functools.partial(
            tf.switch_case, index,
            [mean_score.clear for mean_score in mean_scores])
        with tf.control_dependencies(submits):
            # The mean is only read on reports; other runs return zero.
            reported_score = tf.cond(self._report, clear, float)
            next_step = self._step.assign_add(
                    tf.cast(batch, self._step.dtype.base_dtype))
        with tf.control_dependencies([reported_score, next_step]):
            outputs = tf.identity(summary), reported_score, next_step
        # The switches of the next run may be set only after all of this.
        with tf.control_dependencies(outputs):
            return outputs + (tf.identity(next_step),)

    def _feeds(self, phase):
        """The placeholders that the runs of a phase feed."""
        switches = [self._log.ref(), self._report.ref(), self._reset.ref()]
        keys = switches + [key for key in phase.feed if key not in switches]
        return [key.deref() for key in keys if not _is_variable(key.deref())]

    def _define_next_switches(self, end_step, batch):
        """Set the switches for the next run once a run of `batch` ended."""
        with tf.name_scope('next_switches'):
            # Data dependent on the end of the run, see `_define_step`.
            next_step = tf.cast(end_step, tf.int64)
            current = self._locate(next_step - tf.cast(batch, tf.int64))
            following = self._locate(next_step)
            first_run = tf.logical_or(
                tf.not_equal(current.epoch, following.epoch),
                tf.not_equal(current.index, following.index))
            return tf.group(
                self._define_switches(next_step, first_run, following),
                self._in_turn.assign(tf.logical_not(first_run)))

    def _define_switches(self, global_step, first_run, location=None):
        """Assign the variable switches their values at a global step."""
        phases = self._phases
        if location is None:
            location = self._locate(global_step)
        batch = schedule.lookup(
            [phase.batch for phase in phases], location.index)
        log_every = [
            phase.log_every if phase.summary_dir is not None else None
            for phase in phases]
        values = {
            self._log.ref(): schedule.fires_in_graph(
                location.phase_step, batch, log_every, location.index),
            self._report.ref(): schedule.fires_in_graph(
                location.phase_step, batch,
                [phase.report_every for phase in phases], location.index),
            self._reset.ref(): first_run,
        }
        for key in (key for phase in phases for key in phase.feed):
            if _is_variable(key.deref()) and key not in values:
                values[key] = schedule.phase_value(
                    key, [phase.feed for phase in phases], location.index)
        assigns = [
            key.deref().assign(value) for key, value in values.items()
            if _is_variable(key.deref())]
        return tf.group(*assigns)

    def _find_current_phase(self, global_step):
        return schedule.find_phase(
            global_step, [phase.steps for phase in self._phases])

    def _locate(self, global_step):
        return schedule.locate(
            tf.cast(global_step, tf.int64),
            [phase.steps for phase in self._phases])


def _callable(sess, fetches, target, placeholders, caller_thread):
    """A session call of fixed fetches, fed `values[tensor.ref()]`."""
    # Any feed list, also an empty one, takes the slow path of `Session.run`;
    # only None makes the fast callable.
    call = sess.make_callable(
        (fetches, target), placeholders or None, accept_options=caller_thread)
    options = dict(options=tf.RunOptions(inter_op_thread_pool=-1)) if (
        caller_thread) else {}

    def run(values):
        fetched, _ = call(
            *[values[tensor.ref()] for tensor in placeholders], **options)
        return fetched

    return run


def _switch(tensor, name):
    """The given switch, or a new bool variable that the loop sets."""
    return tensor if tensor is not None else tf.Variable(
        False, trainable=False, name=name)


def _is_variable(tensor):
    return isinstance(tensor, tf.compat.v2.Variable)


def _positive_int(value, name, optional=False):
    if optional and value is None:
        return None
    valid = (
            isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and 1 <= value == int(value))
    if not valid:
        raise ValueError(
                f'Expected {name} to be a positive integer, got {value!r}.')
    return int(value)
