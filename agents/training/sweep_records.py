"""The record of a sweep's run in its folder, and the sweep's results table."""

import itertools
import json
import os

from agents.tools import seed_statistics

# The record of a run in its folder, updated at every report.
RECORD_NAME = 'run.json'


def new_record(run):
    """The record (a dict) of a `Run` that has not started yet."""
    return dict(
        run=run.name, group=run.group, config=run.config_name, seed=run.seed,
        setting=dict(run.setting), status='pending', reports=[], steps=0,
        wall_clock=0.0, attempts=[], error=None)


def read_record(run_dir):
    """The record of a run folder; None where missing or damaged."""
    path = os.path.join(run_dir, RECORD_NAME)
    try:
        with open(path, encoding='utf-8') as file_:
            record = json.load(file_)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def final_and_best(record):
    """The final and the best score of a run record (None where none)."""
    scores = [score for _, score in record['reports'] if score is not None]
    final = record['reports'][-1][1] if record['reports'] else None
    return final, (max(scores) if scores else None)


def summarize(timestamp, sweep_dir, runs, records):
    """The results of a sweep: its name and folder, `runs` (a row per `Run`
    with its record in `records` by name) and `groups` (per config and
    setting, the `seed_statistics.seed_summary` of the final scores)."""
    rows = []
    for run in runs:
        record = _record_of(run, records)
        final, best = final_and_best(record)
        rows.append(dict(
            {key: value for key, value in record.items() if key != 'reports'},
            final_score=final, best_score=best,
            attempts=len(record['attempts'])))
    groups = []
    for group, members in itertools.groupby(rows, lambda row: row['group']):
        members = list(members)
        finished = [row for row in members if row['status'] == 'finished']
        scores = [
            row['final_score'] for row in finished
            if row['final_score'] is not None]
        groups.append(dict(
            group=group, config=members[0]['config'],
            setting=members[0]['setting'], runs=len(members),
            finished=len(finished),
            final=seed_statistics.seed_summary(scores) if scores else None))
    return dict(sweep=timestamp, sweep_dir=sweep_dir, runs=rows, groups=groups)


def curve_rows(runs, records):
    """Tuples `(group, seed, step, score)` of every scored report."""
    return [
        (run.group, run.seed, step, score)
        for run in runs for step, score in _record_of(run, records)['reports']
        if score is not None]


def _record_of(run, records):
    """The run's record in `records`, or that of a run not started."""
    return records.get(run.name) or new_record(run)


def format_table(results):
    """Lines of text of `summarize`'s results: the runs, then the configs."""
    run_rows = [(
        row['run'], row['status'], format_score(row['final_score']),
        format_score(row['best_score']), f'{row["steps"]:,}',
        f'{row["wall_clock"]:.0f} s') for row in results['runs']]
    lines = _columns(
        ('run', 'status', 'final', 'best', 'steps', 'wall-clock'), run_rows,
        right=(2, 3, 4, 5))
    for row in results['runs']:
        if row['error']:
            lines.append(f'  {row["run"]}: {row["error"]}')
    group_rows = [
        (row['group'], f'{row["finished"]}/{row["runs"]}') +
        seed_statistics.summary_cells(row['final'])
        for row in results['groups']]
    header = ('config', 'finished') + seed_statistics.SUMMARY_HEADER
    lines.append('')
    lines += _columns(header, group_rows, right=range(1, len(header)))
    return lines


def _columns(header, rows, right=()):
    """Align rows of text under a header."""
    widths = [max(len(str(cell)) for cell in column)
              for column in zip(header, *rows)]
    lines = []
    for row in (header,) + tuple(rows):
        cells = [
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(row, widths))]
        lines.append('  '.join(cells).rstrip())
    return lines


def format_score(score):
    """A score as text with one decimal, or - for None."""
    return '-' if score is None else f'{score:.1f}'
