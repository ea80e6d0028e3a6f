"""Tests of the statistics over seeds."""

import os

import numpy as np
import pytest
from scipy import stats

from agents.tools import seed_statistics

SCORES = np.array([-160.2, -148.9, -151.0, -300.5, -149.7, -145.3, -152.8,
                   -147.1, -155.6, -149.0])


@pytest.mark.parametrize('scores, expected', [
    ([7.0], 7.0),
    ([1.0, 2.0, 3.0], 2.0),  # Fewer than 4 scores: nothing is cut.
    ([4.0, 1.0, 3.0, 2.0], 2.5),  # Cut 1 each end: mean of 2 and 3.
    ([10.0, 1.0, 2.0, 3.0, 100.0], 5.0),  # Mean of 2, 3 and 10.
    ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 60.0], 3.0),  # n=7: cut 1 each end.
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 1000.0], 5.5),  # Cut 2.
])
def test_interquartile_mean_hand_computed(scores, expected):
    """floor(n / 4) sorted scores are cut from each end."""
    assert seed_statistics.interquartile_mean(scores) == expected


def test_interquartile_mean_matches_scipy_trim_mean():
    """Same as scipy.stats.trim_mean(x, 0.25) for 1 to 12 scores."""
    generator = np.random.default_rng(5)
    for count in range(1, 13):
        scores = generator.normal(size=count)
        assert seed_statistics.interquartile_mean(scores) == pytest.approx(
            stats.trim_mean(scores, 0.25), abs=1e-12)


def test_interquartile_mean_along_axis():
    """An axis reduces columns; None pools everything."""
    curves = [[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [100.0, 40.0]]
    np.testing.assert_array_equal(
        seed_statistics.interquartile_mean(curves, axis=0), [2.5, 25.0])
    assert seed_statistics.interquartile_mean(curves) == pytest.approx(
        stats.trim_mean(np.ravel(curves), 0.25))
    with pytest.raises(ValueError) as error:
        seed_statistics.interquartile_mean([])
    assert str(error.value) == (
        'interquartile_mean got no scores; expected at least one.')


def test_bootstrap_interval_equals_scipy_percentile_bootstrap():
    """One stratum: scipy.stats.bootstrap's percentile interval exactly."""
    ours = seed_statistics.bootstrap_interval(
        [SCORES], resamples=2000, seed=3)
    theirs = stats.bootstrap(
        (SCORES,), seed_statistics.interquartile_mean, vectorized=True,
        method='percentile', n_resamples=2000, confidence_level=0.95,
        rng=np.random.default_rng(3)).confidence_interval
    np.testing.assert_allclose(ours, (theirs.low, theirs.high), rtol=1e-12)
    assert ours[0] < seed_statistics.interquartile_mean(SCORES) < ours[1]


def test_stratified_interval_equals_scipy_with_independent_samples():
    """Strata resample apart, as scipy's bootstrap of several samples."""
    first, second = SCORES[:6], SCORES[6:] + 50.0

    def pooled_iqm(*samples, axis):
        return seed_statistics.interquartile_mean(
            np.concatenate(samples, axis=axis), axis=axis)

    ours = seed_statistics.bootstrap_interval(
        [first, second], confidence=0.9, resamples=1000, seed=11)
    theirs = stats.bootstrap(
        (first, second), pooled_iqm, vectorized=True, paired=False,
        method='percentile', n_resamples=1000, confidence_level=0.9,
        rng=np.random.default_rng(11)).confidence_interval
    np.testing.assert_allclose(ours, (theirs.low, theirs.high), rtol=1e-12)


def test_bootstrap_interval_degenerate_and_repeatable():
    """One seed or equal scores give a point; a seed repeats the interval."""
    assert seed_statistics.bootstrap_interval([[4.0]]) == (4.0, 4.0)
    assert seed_statistics.bootstrap_interval([[2.0, 2.0, 2.0]]) == (
        2.0, 2.0)
    assert seed_statistics.bootstrap_interval(
        [SCORES], seed=1) == seed_statistics.bootstrap_interval(
            [SCORES], seed=1)
    assert seed_statistics.bootstrap_interval(
        [SCORES], resamples=50, seed=1) != seed_statistics.bootstrap_interval(
            [SCORES], resamples=50, seed=2)


@pytest.mark.parametrize('strata, options, message', [
    ([], {}, 'Got no strata of scores; expected at least one.'),
    ([[1.0], []], {}, 'Stratum 1 of the scores has shape (0,); expected a '
     '1-D array of at least one score.'),
    ([[[1.0]]], {}, 'Stratum 0 of the scores has shape (1, 1); expected a '
     '1-D array of at least one score.'),
    ([[1.0, float('nan')]], {}, 'Stratum 0 of the scores holds [nan]; '
     'expected finite numbers.'),
    ([[1.0]], dict(confidence=1.0), 'confidence is 1.0; expected a number '
     'strictly between 0 and 1.'),
    ([[1.0]], dict(resamples=0), 'resamples is 0; expected a whole number '
     '>= 1.'),
    ([[1.0]], dict(resamples=2.5), 'resamples is 2.5; expected a whole '
     'number >= 1.'),
])
def test_bootstrap_interval_bad_input(strata, options, message):
    """Bad input raises one line naming the value."""
    with pytest.raises(ValueError) as error:
        seed_statistics.bootstrap_interval(strata, **options)
    assert str(error.value) == message


def test_seed_summary_of_one_config():
    """Mean, median, IQM and its interval of the scores of a config."""
    summary = seed_statistics.seed_summary(SCORES, resamples=2000, seed=3)
    low, high = seed_statistics.bootstrap_interval(
        [SCORES], resamples=2000, seed=3)
    assert summary == dict(
        seeds=10, mean=pytest.approx(-166.01), median=-150.35,
        iqm=pytest.approx((-148.9 - 151.0 - 149.7 - 152.8 - 149.0 - 155.6)
                          / 6),
        iqm_low=low, iqm_high=high, confidence=0.95)
    assert low < summary['iqm'] < high


def test_curve_band_per_step():
    """Each step gets the IQM and interval of its column."""
    curves = np.array([[0.0, 10.0, 20.0], [1.0, 12.0, 20.0],
                       [2.0, 11.0, 20.0], [9.0, 30.0, 20.0]])
    iqm, low, high = seed_statistics.curve_band(
        curves, resamples=300, seed=2)
    np.testing.assert_array_equal(iqm, [1.5, 11.5, 20.0])
    for step in range(3):
        assert (low[step], high[step]) == seed_statistics.bootstrap_interval(
            [curves[:, step]], resamples=300, seed=2)
    assert (low[2], high[2]) == (20.0, 20.0)
    with pytest.raises(ValueError) as error:
        seed_statistics.curve_band([1.0, 2.0])
    assert str(error.value) == (
        'curves has shape (2,); expected [seeds, steps] with at least one '
        'seed and one step.')


def test_summary_table_lines():
    """A markdown table, one row per config."""
    summary = dict(seeds=10, mean=-166.01, median=-150.35, iqm=-151.1667,
                   iqm_low=-153.94, iqm_high=-148.3, confidence=0.95)
    big = dict(seeds=3, mean=4812.55, median=5001.0, iqm=4812.55,
               iqm_low=4400.0, iqm_high=5105.04, confidence=0.95)
    assert seed_statistics.summary_table(
        [('pendulum', summary), ('cheetah', big)]) == [
            '| config | seeds | mean | median | IQM | IQM 95% CI |',
            '| --- | ---: | ---: | ---: | ---: | ---: |',
            '| pendulum | 10 | -166.0 | -150.3 | -151.2 | [-153.9, -148.3] |',
            '| cheetah | 3 | 4,812.6 | 5,001.0 | 4,812.6 | [4,400.0, '
            '5,105.0] |']
    assert seed_statistics.summary_cells(summary, digits=2) == (
        '10', '-166.01', '-150.35', '-151.17', '[-153.94, -148.30]')
    assert seed_statistics.summary_cells(None) == ('0', '-', '-', '-', '-')
    assert seed_statistics.summary_table([('failed', None)])[2] == (
        '| failed | 0 | - | - | - | - |')


def test_curves_csv_round_trip(tmp_path):
    """Rows are written under the header exactly."""
    path = str(tmp_path / 'curves.csv')
    rows = [('pendulum', 0, 4000, -1200.25), ('pendulum', 1, 4000, -0.1),
            ('a,b', 2, 8000, 1e-17)]
    seed_statistics.write_curves_csv(path, rows)
    with open(path, encoding='utf-8') as file_:
        assert file_.read() == (
            'config,seed,step,score\n'
            'pendulum,0,4000,-1200.25\n'
            'pendulum,1,4000,-0.1\n'
            '"a,b",2,8000,1e-17\n')
    assert os.listdir(tmp_path) == ['curves.csv']


def test_curves_csv_bad_row(tmp_path):
    """A short row writes nothing."""
    path = str(tmp_path / 'curves.csv')
    with pytest.raises(ValueError) as error:
        seed_statistics.write_curves_csv(
            path, [('pendulum', 0, 4000, 1.0), ('pendulum', 0, 1.0)])
    assert str(error.value) == (
        "Curve row ('pendulum', 0, 1.0) has 3 values; expected 4: config, "
        'seed, step, score.')
    assert not os.listdir(tmp_path)
