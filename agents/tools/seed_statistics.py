"""Scores over seeds as RL papers report them: the interquartile mean with a
stratified bootstrap percentile interval (Agarwal et al. 2021), in NumPy."""

import csv
import io
import math

import numpy as np

from agents.tools import atomic_file

CONFIDENCE = 0.95
RESAMPLES = 10000
SEED = 0
CSV_HEADER = ('config', 'seed', 'step', 'score')
SUMMARY_HEADER = ('seeds', 'mean', 'median', 'IQM', f'IQM {CONFIDENCE:.0%} CI')


def interquartile_mean(scores, axis=None):
    """`scipy.stats.trim_mean(scores, 0.25, axis)`: cuts n // 4 of each end,
    an array over an `axis`, a float where None pools all; a ValueError
    without scores."""
    scores = np.asarray(scores, dtype=np.float64)
    if axis is None:
        scores, axis = scores.reshape(-1), 0
    count = scores.shape[axis]
    if count == 0:
        raise ValueError(
            'interquartile_mean got no scores; expected at least one.')
    cut = count // 4
    kept = np.take(
        np.sort(scores, axis=axis), np.arange(cut, count - cut), axis=axis)
    result = np.mean(kept, axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def bootstrap_interval(
        strata, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """Stratified bootstrap percentile interval `(low, high)` of the IQM.

    Each resample draws, within every stratum, as many scores as it has. A
    ValueError on no strata, an empty or not 1-D stratum, or a confidence
    or number of resamples out of range.

    Args:
      strata: Sequence of 1-D array-likes, the scores of each stratum (a
          config or task, one score per seed), pooled for the IQM.
      confidence: Probability the interval covers, strictly between 0 and 1.
      resamples: Number of bootstrap resamples, at least 1.
      seed: Seed of the NumPy generator that draws the resamples.
    """
    strata = _check_strata(strata)
    if not 0 < confidence < 1:
        raise ValueError(
            f'confidence is {confidence!r}; expected a number strictly '
            'between 0 and 1.')
    if int(resamples) != resamples or resamples < 1:
        raise ValueError(
            f'resamples is {resamples!r}; expected a whole number >= 1.')
    generator, resamples = np.random.default_rng(seed), int(resamples)
    resampled = [
        scores[generator.integers(0, len(scores), (resamples, len(scores)))]
        for scores in strata]
    values = interquartile_mean(np.concatenate(resampled, axis=-1), axis=-1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high)


def seed_summary(
        scores, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """The dict of `seeds` (their number), `mean`, `median`, `iqm`,
    `iqm_low`, `iqm_high` and `confidence` of 1-D scores, one per seed; the
    IQM's interval as `bootstrap_interval` draws it with the arguments."""
    scores, = _check_strata([scores])
    low, high = bootstrap_interval([scores], confidence, resamples, seed)
    return dict(
        seeds=len(scores), mean=float(np.mean(scores)),
        median=float(np.median(scores)), iqm=interquartile_mean(scores),
        iqm_low=low, iqm_high=high, confidence=confidence)


def curve_band(curves, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """Float arrays `(iqm, low, high)`: each step's IQM of the scores
    `curves` `[seeds, steps]` and its interval (`bootstrap_interval` of the
    step, with the arguments); a ValueError unless `curves` is 2-D with at
    least one seed and step."""
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim != 2 or 0 in curves.shape:
        raise ValueError(
            f'curves has shape {curves.shape}; expected [seeds, steps] with '
            'at least one seed and one step.')
    bounds = np.array([
        bootstrap_interval([column], confidence, resamples, seed)
        for column in curves.T])
    return interquartile_mean(curves, axis=0), bounds[:, 0], bounds[:, 1]


def summary_cells(summary, digits=1):
    """Text cells of a `seed_summary` (None: '0' and dashes) under
    `SUMMARY_HEADER`, the scores with `digits` decimals."""
    if summary is None:
        return ('0',) + ('-',) * (len(SUMMARY_HEADER) - 1)

    def number(key):
        return f'{summary[key]:,.{digits}f}'
    return (
        str(summary['seeds']), number('mean'), number('median'),
        number('iqm'), f"[{number('iqm_low')}, {number('iqm_high')}]")


def summary_table(summaries, label='config', digits=1):
    """Lines of a markdown table of `(name, seed_summary or None)` pairs."""
    lines = [
        '| ' + ' | '.join((label,) + SUMMARY_HEADER) + ' |',
        '| --- |' + ' ---: |' * len(SUMMARY_HEADER)]
    for name, summary in summaries:
        cells = (str(name),) + summary_cells(summary, digits)
        lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def write_curves_csv(path, rows):
    """Write `(config, seed, step, score)` rows as CSV, atomically; a
    ValueError where a row does not have four values."""
    rows = list(rows)
    for row in rows:
        if len(row) != len(CSV_HEADER):
            raise ValueError(
                f'Curve row {tuple(row)!r} has {len(row)} values; expected '
                f"{len(CSV_HEADER)}: {', '.join(CSV_HEADER)}.")
    text = io.StringIO()
    csv.writer(text, lineterminator='\n').writerows([CSV_HEADER] + [
        (config, int(seed), int(step), repr(float(score)))
        for config, seed, step, score in rows])
    atomic_file.write_atomic(path, text.getvalue())


def _check_strata(strata):
    """Strata as a list of 1-D float arrays, each with at least one score."""
    strata = [np.asarray(scores, dtype=np.float64) for scores in strata]
    if not strata:
        raise ValueError('Got no strata of scores; expected at least one.')
    for index, scores in enumerate(strata):
        if scores.ndim != 1 or not scores.size:
            raise ValueError(
                f'Stratum {index} of the scores has shape {scores.shape}; '
                'expected a 1-D array of at least one score.')
        if not np.all(np.isfinite(scores)):
            raise ValueError(
                f'Stratum {index} of the scores holds '
                f'{[float(x) for x in scores if not math.isfinite(x)]}; '
                'expected finite numbers.')
    return strata
