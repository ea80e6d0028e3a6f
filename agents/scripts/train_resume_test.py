"""End-to-end test: a seeded in-graph run resumes exactly after SIGTERM.

A run on the in-graph pendulum (`--env_mode=graph`, compiled collection
and evaluation) that SIGTERM stops twice and that resumes each time from
its checkpoint evaluates to the same scores, bit for bit, as the same run
straight through: its checkpoints keep the running episodes, the loop's
state and the task's random counters, and the update's shuffles are keyed
by the update's number (see `tools.resume_state`). The script runs in
subprocesses, as in `train_signals_test`. Python environments resumed:
`train_resume_python_test`.
"""

import os
import re
import signal

from agents.training import checkpoints
from agents.training import xla_cache
from agents.scripts.train_reliability_test import _Script
from agents.scripts.train_reliability_test import _new_run_folder
from agents.scripts.train_reliability_test import _saved_checkpoints
from agents.scripts.train_reliability_test import _summary_values

# Training phases of 15 batch steps and episodes of 20: interruptions
# between phases stop the training episodes half way. 100 phases, so that
# the run goes on for seconds after the first evaluations (a phase takes
# about 25 ms once compiled), and the signal reaches it before its end.
_PHASES = 100
_SETTINGS = dict(steps=30 * _PHASES, eval_every=30, seed=0)
_REPORT = r'INFO Step (\d+) \(eval\): mean score '


def _start(logdir):
    # The runs share XLA's cache: all but the first two load their programs.
    return _Script(
        f'--logdir={logdir}', '--timestamp=S', '--env_mode=graph',
        environ={xla_cache.VARIABLE: str(logdir.parent / 'xla')})


def _interrupt_after_reports(logdir, run_dir, reports):
    """Resume the run, SIGTERM it after a number of its reports.

    Returns:
        The step of the checkpoint it saved and the seconds to its exit.
    """
    script = _start(logdir)
    try:
        for _ in range(reports):
            reported = int(re.search(_REPORT, script.wait_for(_REPORT)).group(
                1))
        script.process.send_signal(signal.SIGTERM)
        code, seconds = script.finish()
    finally:
        script.kill()
    assert code == 143 and seconds < 15, '\n'.join(script.lines)
    assert script.lines[-1] == (
        f'Interrupted by SIGTERM; resume with --logdir={logdir} '
        '--timestamp=S.')
    # The checkpoint of the last completed call: at or after the report.
    saved, = _saved_checkpoints(script.lines)
    assert checkpoints.list_checkpoints(run_dir)[0] == saved
    step = int(saved.rsplit('-', 1)[1])
    assert reported <= step < 70 * _PHASES, saved
    return step, seconds


def _eval_scores(run_dir):
    return _summary_values(os.path.join(run_dir, 'eval'), 'mean_score')


def test_run_stopped_twice_by_sigterm_ends_as_one_run_straight_through(
        tmp_path):
    straight_logdir, stopped_logdir = tmp_path / 'straight', tmp_path / 'stop'
    straight_dir = _new_run_folder(str(straight_logdir), 'S', **_SETTINGS)
    stopped_dir = _new_run_folder(str(stopped_logdir), 'S', **_SETTINGS)
    # Side by side: most of each run is starting and compiling.
    straight = _start(straight_logdir)
    try:
        first, _ = _interrupt_after_reports(stopped_logdir, stopped_dir, 1)
        second, _ = _interrupt_after_reports(stopped_logdir, stopped_dir, 3)
        assert second > first
        last = _start(stopped_logdir)
        try:
            restored = last.wait_for('INFO Restored checkpoint')
            code, _ = last.finish()
        finally:
            last.kill()
        assert restored.endswith(f'model.ckpt-{second}.'), restored
        assert code == 0, '\n'.join(last.lines)
        code, _ = straight.finish()
        assert code == 0, '\n'.join(straight.lines)
    finally:
        straight.kill()
    scores = _eval_scores(straight_dir)
    # One evaluation per phase, none repeated or lost by the resumptions.
    assert len(scores) == _PHASES
    assert _eval_scores(stopped_dir) == scores
