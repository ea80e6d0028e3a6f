"""Statistics of scores over seeds, as reinforcement-learning papers report.

Scores of a few seeds are summarised by their mean, their median and their
interquartile mean (IQM) with a 95% stratified bootstrap confidence interval
(Agarwal et al. 2021, "Deep Reinforcement Learning at the Edge of the
Statistical Precipice", the `rliable` package). Curves over seeds are written
as CSV (`config,seed,step,score`) so that others can re-plot them.

The interquartile mean is `scipy.stats.trim_mean(scores, 0.25)`, as
`rliable` computes it: the scores are sorted, `floor(n / 4)` of them are cut
from each end and the rest are averaged. So with 3 seeds nothing is cut (the
IQM is the mean), with 5 to 7 seeds one is cut from each end, with 10 seeds
two. Scores of several strata (configs or tasks, each with its seeds) are
pooled into one set before the cut.

The interval is the percentile interval of the statistic over bootstrap
resamples. A resample draws, within every stratum separately, as many scores
as the stratum has, with replacement (the stratified bootstrap: every
resample keeps the number of seeds of each config). The indices come from a
seeded NumPy `Generator`, drawn stratum after stratum as `integers(0, n,
(resamples, n))`, which is what `scipy.stats.bootstrap` does with several
independent samples; with the same generator, the intervals are the same.

This module needs NumPy only: no TensorFlow, no SciPy.
"""

import csv
import io
import math

import numpy as np

from agents.tools import atomic_file

CONFIDENCE = 0.95
RESAMPLES = 10000
SEED = 0
CSV_HEADER = ('config', 'seed', 'step', 'score')
SUMMARY_HEADER = (
    'seeds', 'mean', 'median', 'IQM', f'IQM {CONFIDENCE:.0%} CI')


def interquartile_mean(scores, axis=None):
    """Mean of the scores left after cutting a quarter from each end.

    The same as `scipy.stats.trim_mean(scores, 0.25, axis)`: `floor(n / 4)`
    of the sorted scores are cut from each end, where `n` is their number
    along `axis`, so fewer than 4 scores keep all of them.

    Args:
      scores: Array-like of numbers.
      axis: Axis to reduce; None flattens the scores first.

    Raises:
      ValueError: When there are no scores to average.

    Returns:
      The interquartile mean: a float when `axis` is None, else an array
      without that axis.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if axis is None:
        scores, axis = scores.reshape(-1), 0
    count = scores.shape[axis]
    if count == 0:
        raise ValueError(
            'interquartile_mean got no scores; expected at least one.')
    cut = count // 4
    ordered = np.sort(scores, axis=axis)
    kept = np.take(ordered, np.arange(cut, count - cut), axis=axis)
    result = np.mean(kept, axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def bootstrap_interval(
        strata, statistic=interquartile_mean, confidence=CONFIDENCE,
        resamples=RESAMPLES, seed=SEED):
    """Stratified bootstrap percentile confidence interval of a statistic.

    Args:
      strata: Sequence of 1-D array-likes, the scores of each stratum (a
          config or task, one score per seed); they may differ in length.
          Scores of different tasks should be on one scale (e.g.
          normalised) before they are pooled.
      statistic: Function of an array of pooled scores and `axis`, like
          `interquartile_mean` or `np.mean`, reducing that axis.
      confidence: Probability the interval covers, strictly between 0 and 1.
      resamples: Number of bootstrap resamples, at least 1.
      seed: Seed of the NumPy generator that draws the resamples.

    Raises:
      ValueError: On no strata, an empty stratum, a stratum that is not
          1-D, or a confidence or number of resamples out of range.

    Returns:
      Tuple of floats `(low, high)`.
    """
    strata = _check_strata(strata)
    if not 0 < confidence < 1:
        raise ValueError(
            f'confidence is {confidence!r}; expected a number strictly '
            'between 0 and 1.')
    if int(resamples) != resamples or resamples < 1:
        raise ValueError(
            f'resamples is {resamples!r}; expected a whole number >= 1.')
    resamples = int(resamples)
    generator = np.random.default_rng(seed)
    resampled = []
    for scores in strata:
        indices = generator.integers(
            0, len(scores), (resamples, len(scores)))
        resampled.append(scores[indices])
    values = np.asarray(
        statistic(np.concatenate(resampled, axis=-1), axis=-1))
    alpha = (1 - confidence) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high)


def seed_summary(
        scores, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """Mean, median and IQM with its bootstrap interval of scores over seeds.

    Args:
      scores: 1-D array-like, one score per seed, or a sequence of such
          (strata; the rows of a 2-D array), pooled for every statistic
          and resampled stratum by stratum for the interval.
      confidence: Probability the interval covers.
      resamples: Number of bootstrap resamples.
      seed: Seed of the resampling.

    Raises:
      ValueError: As `bootstrap_interval`.

    Returns:
      Dict with `seeds` (number of scores), `mean`, `median`, `iqm`,
      `iqm_low`, `iqm_high` (the interval) and `confidence`, as floats.
    """
    strata = _check_strata([scores] if _is_flat(scores) else list(scores))
    pooled = np.concatenate(strata)
    low, high = bootstrap_interval(
        strata, interquartile_mean, confidence, resamples, seed)
    return dict(
        seeds=len(pooled), mean=float(np.mean(pooled)),
        median=float(np.median(pooled)),
        iqm=interquartile_mean(pooled), iqm_low=low, iqm_high=high,
        confidence=confidence)


def curve_band(
        curves, confidence=CONFIDENCE, resamples=RESAMPLES, seed=SEED):
    """IQM and its bootstrap interval at every step of curves over seeds.

    Every step is resampled with the same seed, so the band of a step does
    not depend on how many steps there are.

    Args:
      curves: 2-D array-like `[seeds, steps]` of scores, the seeds' curves
          aligned step by step.
      confidence: Probability the interval covers.
      resamples: Number of bootstrap resamples per step.
      seed: Seed of the resampling.

    Raises:
      ValueError: When `curves` is not 2-D with at least one seed and step.

    Returns:
      Tuple of three float arrays `(iqm, low, high)` of length `steps`.
    """
    curves = np.asarray(curves, dtype=np.float64)
    if curves.ndim != 2 or 0 in curves.shape:
        raise ValueError(
            f'curves has shape {curves.shape}; expected [seeds, steps] with '
            'at least one seed and one step.')
    iqm = interquartile_mean(curves, axis=0)
    bounds = np.array([
        bootstrap_interval([column], interquartile_mean, confidence,
                           resamples, seed)
        for column in curves.T])
    return iqm, bounds[:, 0], bounds[:, 1]


def summary_cells(summary, digits=1):
    """Text cells of a `seed_summary` under `SUMMARY_HEADER`.

    Args:
      summary: Dict from `seed_summary`, or None where there are no scores
          (e.g. no run of a config finished).
      digits: Decimals of the scores.

    Returns:
      Tuple of strings: seeds, mean, median, IQM and the interval as
      `[low, high]`; `'0'` and dashes for None.
    """
    if summary is None:
        return ('0',) + ('-',) * (len(SUMMARY_HEADER) - 1)

    def number(value):
        return f'{value:,.{digits}f}'
    return (
        str(summary['seeds']), number(summary['mean']),
        number(summary['median']), number(summary['iqm']),
        f"[{number(summary['iqm_low'])}, {number(summary['iqm_high'])}]")


def summary_table(summaries, label='config', digits=1):
    """Lines of a markdown table with one row per config.

    Args:
      summaries: Sequence of `(name, summary)` pairs, `summary` from
          `seed_summary` or None.
      label: Header of the name column.
      digits: Decimals of the scores.

    Returns:
      List of lines: the header, the alignment row and one row per config.
    """
    header = (label,) + SUMMARY_HEADER
    lines = [
        '| ' + ' | '.join(header) + ' |',
        '| --- |' + ' ---: |' * len(SUMMARY_HEADER)]
    for name, summary in summaries:
        cells = (str(name),) + summary_cells(summary, digits)
        lines.append('| ' + ' | '.join(cells) + ' |')
    return lines


def write_curves_csv(path, rows):
    """Write curves as CSV with the columns `config,seed,step,score`.

    The file is written to a temporary name beside `path` and renamed into
    place, so that readers see a complete file.

    Args:
      path: Destination file.
      rows: Iterable of `(config, seed, step, score)`: a config name, an
          integer seed, an integer step and a number.

    Raises:
      ValueError: When a row does not have four values.
    """
    rows = list(rows)
    for row in rows:
        if len(row) != len(CSV_HEADER):
            raise ValueError(
                f'Curve row {tuple(row)!r} has {len(row)} values; expected '
                f"{len(CSV_HEADER)}: {', '.join(CSV_HEADER)}.")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator='\n')
    writer.writerow(CSV_HEADER)
    for config, seed, step, score in rows:
        writer.writerow((config, int(seed), int(step), repr(float(score))))
    atomic_file.write_atomic(path, text.getvalue())


def read_curves_csv(path):
    """Read curves written by `write_curves_csv`.

    Args:
      path: CSV file with the header `config,seed,step,score`.

    Raises:
      ValueError: When the header differs.

    Returns:
      List of `(config, seed, step, score)` tuples with an int seed and
      step and a float score.
    """
    with open(path, encoding='utf-8', newline='') as file_:
        reader = csv.reader(file_)
        header = tuple(next(reader, ()))
        if header != CSV_HEADER:
            raise ValueError(
                f'{path} starts with {",".join(header)!r}; expected the '
                f'header {",".join(CSV_HEADER)!r}.')
        return [
            (config, int(seed), int(step), float(score))
            for config, seed, step, score in reader]


def _is_flat(scores):
    """Whether scores are one stratum of numbers rather than strata."""
    if isinstance(scores, np.ndarray):
        return scores.ndim <= 1
    return not any(np.ndim(item) for item in scores)


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
