"""Tests of what a population's run reports of its members."""

import csv

import numpy as np
import tensorflow.compat.v1 as tf

from agents.training import population_run


class _Session:
    """Runs any fetch to the members' scores."""

    def __init__(self, scores):
        self._scores = np.array(scores, np.float32)

    def run(self, unused_fetches):
        """The scores."""
        return self._scores


def test_progress_line_shows_the_members_iqm_and_range():
    with tf.Graph().as_default():
        reports = population_run.MemberReports(None, [0, 1, 2, 3, 4])
    sess = _Session([-3.0, -1.0, np.nan, -2.0, -10.0])
    # The IQM of four scores cuts one at each end: (-3 - 2) / 2.
    assert reports.describe(sess, 'eval') == (
        'members IQM -2.5 range -10.0 to -1.0 (1 without an episode)')
    assert reports.describe(sess, 'train') is None
    assert reports.describe(_Session([np.nan] * 5), 'eval') == (
        'no member ended an episode')


def test_curves_hold_every_members_evaluations(tmp_path):
    run_dir = tmp_path / '20261127T120000-pendulum'
    with tf.Graph().as_default():
        reports = population_run.MemberReports(str(run_dir), [3, 8])
        scores = reports.scores
        with tf.Session() as sess:
            sess.run(scores.initializer)
            # A member without an evaluation's episode has no point.
            sess.run(scores.assign([-5.0, np.nan]))
            reports.report(sess, 40)
            sess.run(scores.assign([-4.5, -7.0]))
            reports.report(sess, 80)
            reports.finish(sess)
            reports.close()
    with open(run_dir / population_run.CURVES_NAME, encoding='utf-8') as file_:
        rows = list(csv.reader(file_))
    assert rows == [
        ['config', 'seed', 'step', 'score'],
        ['pendulum', '3', '40', '-5.0'], ['pendulum', '3', '80', '-4.5'],
        ['pendulum', '8', '80', '-7.0']]
