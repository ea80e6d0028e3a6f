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


def test_progress_line_and_table_per_variant(caplog):
    settings = [(('learning_rate', '1e-3'),)] * 2 + [
        (('learning_rate', '0.01'),)] * 2
    with tf.Graph().as_default():
        reports = population_run.MemberReports(None, [3, 8, 3, 8], settings)
    sess = _Session([-3.0, -1.0, np.nan, np.nan])
    assert reports.describe(sess, 'eval') == (
        'learning_rate=1e-3: members IQM -2.0 range -3.0 to -1.0; '
        'learning_rate=0.01: no member ended an episode')
    with caplog.at_level('INFO', logger='agents'):
        results = reports.finish(sess)
    assert [row['member'] for row in results['members']] == [
        'learning_rate=1e-3/seed-3', 'learning_rate=1e-3/seed-8',
        'learning_rate=0.01/seed-3', 'learning_rate=0.01/seed-8']
    assert [(row['variant'], row['final'] and row['final']['iqm'])
            for row in results['variants']] == [
                ('learning_rate=1e-3', -2.0), ('learning_rate=0.01', None)]
    lines = [record.getMessage() for record in caplog.records]
    assert lines[4:] == [
        '| variant | seeds | mean | median | IQM | IQM 95% CI |',
        '| --- | ---: | ---: | ---: | ---: | ---: |',
        '| learning_rate=1e-3 | 2 | -2.0 | -2.0 | -2.0 | [-3.0, -1.0] |',
        '| learning_rate=0.01 | 0 | - | - | - | - |']


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
