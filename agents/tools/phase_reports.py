"""The summaries and progress lines of the phases of a `Loop`."""

import contextlib
import datetime
import logging
import time

import tensorflow.compat.v1 as tf

from agents.tools import phase_schedule

_logger = logging.getLogger('agents')


class PhaseReports:
    """The summary writers of a loop's `phases` (a list, later additions
    count too) for event files of `graph`, and its progress lines, showing
    the steps of the `step_phases` (names), with None the global step."""

    def __init__(self, phases, step_phases, graph):
        self._phases = phases
        self._step_phases = step_phases
        self._graph = graph
        self._writers = {}
        self._start = self._last_time = self._last_step = self._first = None

    def start(self, global_step):
        """Open the writers and start the clocks of the progress lines."""
        for phase in self._phases:
            if phase.summary_dir and phase.name not in self._writers:
                with _write_errors(phase.summary_dir, OSError):
                    self._writers[phase.name] = tf.summary.FileWriter(
                        phase.summary_dir, self._graph)
        self._start = self._last_time = time.monotonic()
        self._last_step = global_step
        self._first = None

    def shown_steps(self, global_step):
        """The shown step and the steps of each other phase, by name."""
        if self._step_phases is None:
            return global_step, {}
        steps = zip(self._phases, phase_schedule.phase_steps_at(
            global_step, [phase.steps for phase in self._phases]))
        shown, others = 0, {}
        for phase, count in steps:
            if phase.name in self._step_phases:
                shown += count
            else:
                others[phase.name] = count
        return shown, others

    def write(self, phase, summary, global_step):
        """Write a summary of a phase at the shown step of a global step."""
        with _write_errors(phase.summary_dir):
            self._writers[phase.name].add_summary(
                summary, self.shown_steps(global_step)[0])

    def flush(self, phase):
        """Flush the writer of a phase, if it has one."""
        if phase.name in self._writers:
            with _write_errors(phase.summary_dir):
                self._writers[phase.name].flush()

    def report(self, phase, global_step, mean_score, max_step, detail=None):
        """Log the progress line of a report, with the text `detail` after
        the mean score where given, and flush the phase's writer. The time
        left is at the speed since the first report (not the start-up)."""
        now = time.monotonic()
        speed = rate = None
        if now > self._last_time:
            speed = (global_step - self._last_step) / (now - self._last_time)
        if self._first is None:
            self._first = now, global_step
        elif now > self._first[0]:
            rate = (global_step - self._first[1]) / (now - self._first[0])
        self._last_time, self._last_step = now, global_step
        shown, others = self.shown_steps(global_step)
        where = (f'Global step {global_step}' if self._step_phases is None
                 else f'Step {shown}')
        parts = [f'{where} ({phase.name}): mean score {mean_score:.3f}']
        parts += [detail] if detail else []
        parts += [f'{other} steps {steps}' for other, steps in others.items()]
        parts.append(
            'steps/s n/a' if speed is None else f'{speed:.1f} steps/s')
        parts.append(f'elapsed {_format_seconds(now - self._start)}')
        remaining = None if max_step is None else max(0, max_step - global_step)
        if remaining == 0 or (remaining and rate):
            parts.append(f'ETA {_format_seconds(remaining / (rate or 1))}')
        _logger.info('%s.', ', '.join(parts))
        self.flush(phase)


@contextlib.contextmanager
def _write_errors(directory, *more_types):
    """Raise a writer's errors ('PATH; CAUSE', then lines) as one line."""
    try:
        yield
    except (RuntimeError, tf.errors.OpError, *more_types) as error:
        lines = str(error).strip().splitlines()
        first = lines[0].strip() if lines else type(error).__name__
        path, separator, cause = first.rpartition('; ')
        if not separator:
            path, cause = directory, first
        raise OSError(f'Cannot write {path}: {cause}.') from error


def _format_seconds(seconds):
    """'H:MM:SS' of a number of seconds."""
    return str(datetime.timedelta(seconds=int(round(seconds))))
