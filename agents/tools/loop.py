"""Run simulation phases, such as training and evaluation, in a schedule."""

import collections
import contextlib
import datetime
import logging
import math
import numbers
import os
import time

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import resume_state
from agents.tools import session_callable
from agents.tools import streaming_mean
from agents.tools import summary_errors
from agents.tools import temporary_scope

_Phase = collections.namedtuple(
        'Phase',
        'name, summary_dir, tensors, mean_score, batch, steps, feed, '
        'report_every, log_every, checkpoint_every, caller_thread, made')

_logger = logging.getLogger('agents')
_Callable = session_callable.SessionCallable
_write_error = summary_errors.write_error


class Loop:
    """Alternate phases of simulation steps, logging and checkpointing.

    Each phase runs a simulation operation (usually the outputs of `simulate`)
    for its number of environment steps, then the next phase takes over, in
    the order the phases were added, over and over. Every session run counts
    one step of each environment of the phase's batch (or `run_steps`), and
    adds them to the global step. The schedule is computed from the global step
    alone, so a loop rebuilt on a restored global step resumes in the phase
    and at the step where the checkpoint was taken. Its first run begins
    the turn anew (`reset`) unless the checkpoint holds the loop's state for
    an exact resumption (see `tools.resume_state`): whether the turn had
    begun, and the running mean scores. Phase lengths should be
    multiples of their batch sizes; otherwise a phase's last run overshoots
    into the next phase, which then runs correspondingly shorter.

    The loop shows (in its progress lines and as the step of its summaries)
    the global step, or with `step_phases` the steps of some phases alone,
    such as training steps, with the steps of the others beside them; its
    checkpoints keep the global step.

    Phase steps count the environment steps a phase made over all its turns.
    The intervals `report_every`, `log_every` and `checkpoint_every` fire on
    the run during which a phase's step count reaches a multiple of them.

    The per-run switches `log`, `report` and `reset`, and the tensors of a
    phase's `feed`, are either placeholders, fed on every run, or variables,
    which the loop sets inside the graph: each run ends by assigning them
    the values of the next run, computed from the global step, and `run`
    sets them once before its first run. Variables spare the session the
    feeds, about 0.1 ms per tensor and run, which matters at thousands of
    runs per minute; the loop creates variables for the switches it is not
    given.

    Phases that run the same `done`, `score` and `summary` tensors over the
    same batch (as training and evaluation of one simulation do) share one
    session callable, which finds the phase from the global step inside the
    graph: the session optimizes the graph once (Grappler takes about as
    long as the first run of a phase) instead of once per phase.
    """

    def __init__(
            self, logdir, step=None, log=None, report=None, reset=None,
            step_phases=None):
        """Create a loop without phases.

        Args:
            logdir: Folder for summaries (in a subfolder per phase) and
                checkpoints, or None to write nothing.
            step: Integer variable of the global step; None gets or creates
                the graph's global step.
            log: Scalar bool placeholder or variable, true on runs that
                should compute summaries; None creates a variable.
            report: Scalar bool placeholder or variable, true on runs that
                report the mean score; None creates a variable.
            reset: Scalar bool placeholder or variable, true on the first run
                of each turn of a phase, so that all episodes begin anew;
                None creates a variable.
            step_phases: None, or the names of the phases whose steps make
                the step that the loop shows (in its progress lines and as
                the step of its summaries), such as only the training
                phase's; the steps of the other phases show beside it, by
                name. None shows the global step, the steps of all phases.
        """
        self._logdir = logdir
        self._step_phases = (
            None if step_phases is None else tuple(step_phases))
        if step is None:
            step = tf.train.get_or_create_global_step()
        self._step = step
        with temporary_scope.temporary_scope('loop') as scope:
            self._scope = scope
            self._log = _switch(log, 'should_log')
            self._report = _switch(report, 'do_report')
            self._reset = _switch(reset, 'force_reset')
            # Whether the next run continues a turn that earlier runs began;
            # a loop restored without it begins the turn anew.
            self._in_turn = tf.Variable(
                False, trainable=False, name='in_turn')
        resume_state.keep_for_resume(self._in_turn)
        self._phases = []
        self._writers = {}
        self._first_switches = None
        # Per phase: the outputs of its runs and the switches after them.
        self._ops = []
        self._next_switches = []

    @property
    def step(self):
        """Global step variable."""
        return self._step

    @property
    def log(self):
        """Bool placeholder or variable, true where summaries are computed."""
        return self._log

    @property
    def report(self):
        """Bool placeholder or variable, true where the score is reported."""
        return self._report

    @property
    def reset(self):
        """Bool placeholder or variable, true on a turn's first run."""
        return self._reset

    def add_phase(
            self, name, done, score, summary, steps, report_every=None,
            log_every=None, checkpoint_every=None, feed=None,
            caller_thread=False, run_steps=None, made_steps=None):
        """Add a phase to the end of the schedule.

        Args:
            name: Name of the phase, also its summary subfolder.
            done: Bool tensor of which episodes ended in a run, shape [batch]
                or scalar.
            score: Float tensor of the episodes' scores, shaped like `done`.
            summary: String tensor of the summary of a run.
            steps: Environment steps of each turn of the phase.
            report_every: Phase steps between reports of the mean score of
                the episodes that ended since the last report; None never
                reports.
            log_every: Phase steps between runs with summaries; None never
                computes them.
            checkpoint_every: Phase steps between checkpoints; None never
                saves.
            feed: Dict from further placeholders or variables to their
                values on the phase's runs; the loop's own `log`, `report`
                and `reset` override it. A variable that a phase leaves out
                keeps its value on that phase's runs.
            caller_thread: Whether the phase's runs execute their ops in the
                calling thread rather than TensorFlow's inter-op thread pool
                (`RunOptions.inter_op_thread_pool = -1`). A small step graph
                runs faster so, without the hand-offs between threads (and
                the Python thread state that the environment's
                `numpy_function` needs in a pool thread); a large update
                may run slower, without parallel ops (intra-op threads
                remain). The training script runs both of its phases so.
            run_steps: Environment steps of a run of many steps (see
                `tools.compiled_rollout`); None: one per entry of `done`.
            made_steps: Integer tensor of the steps a run made, at most
                `run_steps`, for runs that may stop early; intervals fire
                on the run whose `run_steps` would reach them.

        Raises:
            ValueError: When the name is empty or taken, the steps or
                intervals are not positive integers, or `done` and `score`
                are not scalars or vectors of the same static shape.
        """
        if not name or not isinstance(name, str):
            raise ValueError(
                    f'Expected a non-empty string as phase name, got {name!r}.')
        if any(phase.name == name for phase in self._phases):
            raise ValueError(f'There is already a phase named {name!r}.')
        steps = _positive_int(steps, 'steps')
        report_every = _optional_positive_int(report_every, 'report_every')
        log_every = _optional_positive_int(log_every, 'log_every')
        checkpoint_every = _optional_positive_int(
                checkpoint_every, 'checkpoint_every')
        done = tf.convert_to_tensor(done, tf.bool)
        score = tf.convert_to_tensor(score, tf.float32)
        summary = tf.convert_to_tensor(summary, tf.string)
        if (done.shape.ndims not in (0, 1) or not done.shape.is_fully_defined()
                or done.shape != score.shape):
            raise ValueError(
                    "Expected 'done' and 'score' of the same known shape, "
                    'either scalars or vectors over the batch, got '
                    f'{done.shape} and {score.shape}.')
        batch = _optional_positive_int(run_steps, 'run_steps') or (
            1 if done.shape.ndims == 0 else done.shape.as_list()[0])
        # The writers start with `run`, so that a loop that never runs (of
        # a resume that fails, say) writes no event files.
        summary_dir = os.path.join(self._logdir, name) if self._logdir else None
        with temporary_scope.reenter(self._scope):
            mean_score = streaming_mean.StreamingMean(
                    (), tf.float32, 'mean_score')
        resume_state.keep_for_resume(mean_score.variables)
        self._phases.append(_Phase(
                name, summary_dir, (done, score, summary), mean_score, batch,
                steps,
                _by_reference(feed or {}), report_every, log_every,
                checkpoint_every, bool(caller_thread), made_steps))

    def run(self, sess, saver, max_step=None, stop=None):
        """Run the phases in turn, yielding the mean score at each report.

        Each report also logs one progress line to the 'agents' logger:
        the global step, the phase, the mean score, the steps per second
        since the last report, the time elapsed and, from the second report
        on, the time left at the mean speed since the first report (the
        time before it holds the graph's start-up).

        Args:
            sess: Session to run the phases in.
            saver: Saver for checkpoints, or None to save none.
            max_step: Global step at which to stop; None runs forever.
            stop: Callable without arguments, asked before every session run;
                when it returns true, the loop ends there. Signal handlers
                that only set a flag can stop the loop this way, instead of
                raising in the middle of TensorFlow's code.

        Raises:
            RuntimeError: When no phase was added.

        Yields:
            Mean score of the episodes that ended during the reporting phase
            since its last report; NaN when none ended.
        """
        if not self._phases:
            raise RuntimeError('Add a phase to the loop before running it.')
        global_step = int(sess.run(self._step))
        # The ops of the runs and the switches, built on the first run.
        if len(self._ops) != len(self._phases):
            with self._step.graph.as_default():
                self._first_switches = self._define_switches(
                    self._step,
                    first_run=tf.logical_not(self._in_turn.read_value()))
                self._ops, self._next_switches = self._define_runs()
        sess.run(self._first_switches)
        for phase in self._phases:
            if phase.summary_dir is not None:
                self._writer(phase)
        callables, made = [], {}
        for phase, op, switches in zip(
                self._phases, self._ops, self._next_switches):
            if id(op) not in made:
                made[id(op)] = _Callable(
                    sess, op[:3], switches, self._feeds(phase),
                    phase.caller_thread)
            callables.append(made[id(op)])
        start_time = last_time = time.monotonic()
        last_step = global_step
        # The time and step of the first report: the time before it holds
        # the graph's start-up (its compilation, say), so the remaining time
        # is estimated from the steps since.
        first_report = None
        previous_turn = None
        if sess.run(self._in_turn):
            # A restored turn goes on.
            index, epoch, _ = self._find_current_phase(global_step)
            previous_turn = (epoch, self._phases[index].name)
        try:
            while max_step is None or global_step < max_step:
                if stop is not None and stop():
                    break
                index, epoch, steps_in = self._find_current_phase(global_step)
                phase = self._phases[index]
                phase_step = epoch * phase.steps + steps_in
                turn = (epoch, phase.name)
                first_run = turn != previous_turn
                previous_turn = turn
                if first_run:
                    _logger.debug(
                            'Phase %s at phase step %d, global step %d.',
                            phase.name, phase_step, global_step)
                should_log = phase.summary_dir is not None and _fires(
                        phase_step, phase.batch, phase.log_every)
                should_report = _fires(
                        phase_step, phase.batch, phase.report_every)
                values = dict(phase.feed)
                values[self._log.ref()] = should_log
                values[self._report.ref()] = should_report
                values[self._reset.ref()] = first_run
                summary, mean_score, global_step = callables[index](values)
                global_step = int(global_step)
                if summary and phase.summary_dir is not None:
                    self._write(phase, summary, self.shown_step(global_step))
                if _fires(phase_step, phase.batch, phase.checkpoint_every):
                    self._store_checkpoint(sess, saver, global_step)
                if should_report:
                    now = time.monotonic()
                    speed = None
                    if now > last_time:
                        speed = (global_step - last_step) / (now - last_time)
                    rate = None
                    if first_report is None:
                        first_report = now, global_step
                    elif now > first_report[0]:
                        rate = (global_step - first_report[1]) / (
                            now - first_report[0])
                    self._log_progress(
                            phase.name, global_step, mean_score, max_step,
                            speed, now - start_time, rate)
                    last_time, last_step = now, global_step
                    if phase.summary_dir is not None:
                        self._flush(phase)
                    yield float(mean_score)
        except BaseException:
            # Without hiding the error by another of the writers.
            for phase in self._phases:
                with contextlib.suppress(OSError):
                    self._flush(phase)
            raise
        for phase in self._phases:
            self._flush(phase)

    def shown_step(self, global_step):
        """The step that the loop shows at a global step.

        Args:
            global_step: Integer global step.

        Returns:
            The steps of the phases of `step_phases` up to the global step;
            the global step where the loop shows it.
        """
        return self._phase_steps(global_step)[0]

    def _phase_steps(self, global_step):
        """The shown step and the steps of each other phase, by name."""
        if self._step_phases is None:
            return global_step, {}
        counts = [phase.name in self._step_phases for phase in self._phases]
        steps = phase_steps_at(
            global_step, [phase.steps for phase in self._phases])
        shown = sum(
            count for count, counted in zip(steps, counts) if counted)
        others = {
            phase.name: count for phase, count, counted in zip(
                self._phases, steps, counts) if not counted}
        return shown, others

    def _writer(self, phase):
        """The summary writer of a phase, created on first use."""
        writer = self._writers.get(phase.name)
        if writer is None:
            try:
                writer = tf.summary.FileWriter(
                        phase.summary_dir, self._step.graph)
            except (RuntimeError, OSError, tf.errors.OpError) as error:
                raise _write_error(phase.summary_dir, error) from error
            self._writers[phase.name] = writer
        return writer

    def _write(self, phase, summary, global_step):
        try:
            self._writer(phase).add_summary(summary, global_step)
        except (RuntimeError, tf.errors.OpError) as error:
            raise _write_error(phase.summary_dir, error) from error

    def _flush(self, phase):
        writer = self._writers.get(phase.name)
        if writer is None:
            return
        try:
            writer.flush()
        except (RuntimeError, tf.errors.OpError) as error:
            raise _write_error(phase.summary_dir, error) from error

    def _define_runs(self):
        """The outputs of each phase's runs and the switches after them.

        Returns:
            Lists over the phases of the outputs (see `_define_step`) and of
            the ops that set the switches; phases that can share their runs
            (see `_can_share`) hold the same objects.
        """
        phases = self._phases
        if self._can_share():
            with tf.name_scope('loop_shared'):
                index = _locate(
                    tf.cast(self._step.read_value(), tf.int64), phases).index
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
        """Whether all phases can run as one session callable.

        They can when they step the same tensors over the same batch, in the
        same thread, and feed the same placeholders.
        """
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
        """The outputs of a run: summary, reported score, global step.

        Args:
            done: Bool tensor of the episodes that ended in the run.
            score: Float tensor of the episodes' scores.
            summary: String tensor of the run's summary.
            batch: Environment steps of a run, an int or integer tensor.
            mean_scores: The `StreamingMean` of each phase that runs the
                outputs; one phase's alone where `index` is None.
            index: None, or int32 tensor of the phase of the run, whose mean
                receives the scores and reports.

        Returns:
            Tuple of the summary, the reported mean score (zero on runs
            without a report), the global step after the run, and the same
            step once the run has computed everything else.
        """
        if done.shape.ndims == 0:
            done, score = done[None], score[None]
        # The ops are built on the loop's first run, after the session ran:
        # `control_dependencies` marks the ops it is given with an attribute,
        # which TensorFlow warns about on ops a session ran, so it is given
        # new ones.
        done, score, summary = (
            tf.identity(tensor) for tensor in (done, score, summary))
        submits = []
        with tf.control_dependencies([done, score, summary]):
            for position, mean_score in enumerate(mean_scores):
                ended = done if index is None else tf.logical_and(
                    done, tf.equal(index, position))
                submits.append(mean_score.submit(
                    tf.gather(score, tf.where(ended)[:, 0])))
        if index is None:
            clear = mean_scores[0].clear
        else:
            def clear():
                return tf.switch_case(
                    index, [mean_score.clear for mean_score in mean_scores])
        with tf.control_dependencies(submits):
            # The mean is only read on reports; other runs return zero.
            reported_score = tf.cond(self._report, clear, float)
            next_step = self._step.assign_add(
                    tf.cast(batch, self._step.dtype.base_dtype))
        with tf.control_dependencies([reported_score, next_step]):
            outputs = tf.identity(summary), reported_score, next_step
        # The global step once the run has computed everything else, for
        # the switches of the next run: they may be set only then.
        with tf.control_dependencies(outputs):
            return outputs + (tf.identity(next_step),)

    def _feeds(self, phase):
        """The placeholders that the runs of a phase feed."""
        switches = [self._log.ref(), self._report.ref(), self._reset.ref()]
        keys = switches + [key for key in phase.feed if key not in switches]
        return [key.deref() for key in keys if not _is_variable(key.deref())]

    def _define_next_switches(self, end_step, batch):
        """Set the switches for the next run, once a run ended.

        Args:
            end_step: The global step once a run has computed everything
                else (the last output of `_define_step`).
            batch: Environment steps of that run, an int or integer tensor.
        """
        with tf.name_scope('next_switches'):
            # Data dependent on the end of the run, see `_define_step`.
            next_step = tf.cast(end_step, tf.int64)
            current = _locate(
                next_step - tf.cast(batch, tf.int64), self._phases)
            following = _locate(next_step, self._phases)
            first_run = tf.logical_or(
                tf.not_equal(current.epoch, following.epoch),
                tf.not_equal(current.index, following.index))
            return tf.group(
                self._define_switches(next_step, first_run, following),
                self._in_turn.assign(tf.logical_not(first_run)))

    def _define_switches(self, global_step, first_run, location=None):
        """Assign the variable switches their values at a global step.

        The same schedule as `run` computes in Python, as graph ops.

        Args:
            global_step: Integer tensor of the global step of the run.
            first_run: Bool, or bool tensor, whether the run begins a turn.
            location: The `_Location` of the global step, if known.

        Returns:
            Operation; a no-op when all switches are placeholders.
        """
        phases = self._phases
        if location is None:
            location = _locate(tf.cast(global_step, tf.int64), phases)
        batch = _lookup([phase.batch for phase in phases], location.index)
        log_every = [
            phase.log_every if phase.summary_dir is not None else None
            for phase in phases]
        values = {
            self._log.ref(): _fires_in_graph(
                location.phase_step, batch, log_every, location.index),
            self._report.ref(): _fires_in_graph(
                location.phase_step, batch,
                [phase.report_every for phase in phases], location.index),
            self._reset.ref(): first_run,
        }
        keys = []
        for phase in phases:
            keys += [key for key in phase.feed if key not in keys]
        for key in keys:
            if _is_variable(key.deref()) and key not in values:
                values[key] = _phase_value(key, phases, location.index)
        assigns = [
            key.deref().assign(value) for key, value in values.items()
            if _is_variable(key.deref())]
        return tf.group(*assigns)

    def _find_current_phase(self, global_step):
        epoch_size = sum(phase.steps for phase in self._phases)
        epoch, steps_in = divmod(global_step, epoch_size)
        for index, phase in enumerate(self._phases):
            if steps_in < phase.steps:
                return index, epoch, steps_in
            steps_in -= phase.steps
        raise AssertionError('The phases cover every step of an epoch.')

    def _store_checkpoint(self, sess, saver, global_step):
        if not self._logdir or saver is None:
            return
        tf.io.gfile.makedirs(self._logdir)
        filename = os.path.join(self._logdir, 'model.ckpt')
        saver.save(sess, filename, global_step)

    def _log_progress(
            self, name, global_step, mean_score, max_step, speed, elapsed,
            rate):
        """Log a report; its ETA once `rate` (steps per second) is known."""
        shown, others = self._phase_steps(global_step)
        if self._step_phases is None:
            message = f'Global step {global_step} ({name}): '
        else:
            message = f'Step {shown} ({name}): '
        message += f'mean score {mean_score:.3f}, '
        for other, steps in others.items():
            message += f'{other} steps {steps}, '
        if speed is None:
            message += 'steps/s n/a, '
        else:
            message += f'{speed:.1f} steps/s, '
        message += f'elapsed {_format_seconds(elapsed)}'
        if max_step is not None:
            remaining = max(0, max_step - global_step)
            if not remaining:
                message += f', ETA {_format_seconds(0)}'
            elif rate:
                message += f', ETA {_format_seconds(remaining / rate)}'
        _logger.info('%s.', message)


_Location = collections.namedtuple('Location', 'epoch, index, phase_step')


def phase_steps_at(global_step, steps):
    """The steps each phase made up to a global step.

    Phases take turns in their order, each for its steps, as in `Loop`.

    Args:
        global_step: Integer global step, the steps of all phases.
        steps: The steps of each turn of each phase.

    Returns:
        List of the steps of each phase.
    """
    epoch, within = divmod(int(global_step), sum(steps))
    made = []
    for turn in steps:
        made.append(epoch * turn + min(within, turn))
        within = max(0, within - turn)
    return made


def _switch(tensor, name):
    """The given switch, or a new bool variable that the loop sets."""
    if tensor is None:
        return tf.Variable(False, trainable=False, name=name)
    return tensor


def _is_variable(tensor):
    return isinstance(tensor, tf.compat.v2.Variable)


def _locate(global_step, phases):
    """Epoch, phase index and phase step of an int64 global step tensor."""
    sizes = np.array([phase.steps for phase in phases], np.int64)
    ends = np.cumsum(sizes)
    epoch, steps_in = global_step // ends[-1], global_step % ends[-1]
    index = tf.reduce_sum(tf.cast(steps_in >= ends[:-1], tf.int32))
    phase_step = (
        epoch * tf.gather(sizes, index) + steps_in -
        tf.gather(ends - sizes, index))
    return _Location(epoch, index, phase_step)


def _lookup(values, index):
    """The int64 value of the phase at an index tensor."""
    return tf.gather(np.array(values, np.int64), index)


def _fires_in_graph(phase_step, batch, intervals, index):
    """`_fires` as graph ops; intervals of None never fire."""
    every = _lookup([interval or 1 for interval in intervals], index)
    enabled = tf.gather([bool(interval) for interval in intervals], index)
    reached = (phase_step + batch) // every > phase_step // every
    return tf.logical_and(enabled, reached)


def _by_reference(feed):
    """The dict keyed by references, which hash outside of graph mode."""
    return {tensor.ref(): value for tensor, value in feed.items()}


def _phase_value(key, phases, index):
    """A variable's value in the phase at an index, or its current value.

    Args:
        key: Reference of the variable, a key of the phases' feeds.
        phases: The phases.
        index: Int32 tensor of the phase's index.

    Returns:
        Tensor of the value.
    """
    variable = key.deref()
    dtype = variable.dtype.base_dtype.as_numpy_dtype
    shape = variable.shape.as_list()
    given = [key in phase.feed for phase in phases]
    table = np.stack([
        np.asarray(phase.feed[key], dtype) if present
        else np.zeros(shape, dtype)
        for phase, present in zip(phases, given)])
    return tf.where_v2(
        tf.gather(given, index), tf.gather(table, index),
        variable.read_value())


def _fires(phase_step, batch, every):
    """Whether a run over `batch` steps from `phase_step` reaches a multiple."""
    if not every:
        return False
    return (phase_step + batch) // every > phase_step // every


def _positive_int(value, name):
    valid = (
            isinstance(value, numbers.Real) and not isinstance(value, bool)
            and math.isfinite(value) and 1 <= value == int(value))
    if not valid:
        raise ValueError(
                f'Expected {name} to be a positive integer, got {value!r}.')
    return int(value)


def _optional_positive_int(value, name):
    return None if value is None else _positive_int(value, name)


def _format_seconds(seconds):
    return str(datetime.timedelta(seconds=int(round(seconds))))
