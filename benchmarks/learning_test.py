"""Tests of the learning benchmark's plots, drawn from stored results.

Run with `python -m pytest -n 0 -q benchmarks/learning_test.py`; the repo's
default test paths hold `agents` only. The plot needs matplotlib (the
`bench` extra).
"""

import json

import numpy as np
import pytest
from scipy import stats

import learning


def _results(seeds, scale):
    """Results of some seeds, four reports each, as `run_seed` gives;
    skewed over seeds, so that their IQM is not their mean."""
    return [
        dict(seed=seed, seconds=4.0, reports=[
            dict(train_steps=250_000 * (index + 1), total_steps=0,
                 seconds=float(index), score=scale * (seed + 1) ** 2 * index)
            for index in range(4)])
        for seed in range(seeds)]


def test_titles_and_legend_labels():
    """One seed is singular; steps read as 250k and 1M on the axis."""
    assert learning.plot_title('ant', 1, 1e6) == (
        'ant: 1 seed, 1,000,000 training steps')
    assert learning.plot_title('ant', 3, 1e6) == (
        'ant: 3 seeds, 1,000,000 training steps')
    # pylint: disable=protected-access
    assert learning._band_label(1) == '1 seed'
    assert learning._band_label(5) == (
        'IQM and 95% bootstrap CI over 5 seeds')
    assert [learning._format_steps(steps, None) for steps in (
        0, 500, 250_000, 1e6, 1.5e6)] == ['0', '500', '250k', '1M', '1.5M']


def test_replot_draws_the_iqm_of_a_stored_json(tmp_path, monkeypatch):
    """The IQM (not the mean) per report, the reference on a line of its
    own, and the legend below the axes, clear of the curves."""
    matplotlib = pytest.importorskip('matplotlib')
    stored = tmp_path / 'learning-ant.json'
    stored.write_text(json.dumps(dict(
        config='ant', target=3000.0, reference='Tianshou 3,258',
        results=_results(4, 100.0))), encoding='utf-8')
    figures = []
    save = matplotlib.figure.Figure.savefig

    def savefig(figure, path, **kwargs):
        figures.append(figure)
        save(figure, path, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, 'savefig', savefig)
    plot = tmp_path / 'plot.png'
    learning.replot(
        str(stored), str(plot), [('with contact forces', _results(1, 1.0))])
    assert plot.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    axes, = figures[0].axes
    assert axes.get_title() == (
        'ant: 4 seeds, 1,000,000 training steps\nreference: Tianshou 3,258')
    legend = axes.get_legend()
    assert [text.get_text() for text in legend.get_texts()] == [
        'ant: IQM and 95% bootstrap CI over 4 seeds',
        'with contact forces: 1 seed', 'target 3,000']
    assert legend.get_window_extent().y1 < axes.get_window_extent().y0
    ours, single = axes.get_lines()[:2]
    scores = 100.0 * np.arange(1, 5)[:, None] ** 2 * np.arange(4)[None, :]
    np.testing.assert_allclose(
        ours.get_ydata(), stats.trim_mean(scores, 0.25, axis=0))
    assert not np.allclose(ours.get_ydata(), scores.mean(0))
    np.testing.assert_allclose(single.get_ydata(), np.arange(4.0))
    np.testing.assert_allclose(
        ours.get_xdata(), [250_000, 500_000, 750_000, 1_000_000])
