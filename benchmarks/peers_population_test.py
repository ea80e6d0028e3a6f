"""Tests of the population benchmark's parts that train nothing.

Run with `python -m pytest -q benchmarks/peers_population_test.py`; the
repo's default test paths hold `agents` only.
"""

import os
import subprocess
import sys

from absl import app
import pytest

import peers_population

# What `python -m agents.scripts.train --helpfull` prints, shortened: the
# script's own section by path, a library module of ours, absl's.
_HELP = """Train a reinforcement learning agent in the TensorFlow graph.

flags:

/repo/agents/scripts/train.py:
  --config: Configuration function.
  --seed: Seed of TensorFlow, NumPy and the environments (overrides the
    config).
    (an integer)
{extra}
absl.app:
  -?,--[no]help: show this help
    (default: 'false')
{library}
absl.logging:
  --[no]alsologtostderr: also log to stderr?
"""


def _help(extra='', library=''):
    return _HELP.format(extra=extra, library=library)


def test_seeds_flag_writes_ranges_where_it_can():
    assert peers_population.seeds_flag(list(range(16))) == '0-15'
    assert peers_population.seeds_flag([3, 4]) == '3-4'
    assert peers_population.seeds_flag([0, 3, 7]) == '0,3,7'
    assert peers_population.seeds_flag([1, 0]) == '1,0'
    assert peers_population.seeds_flag([5]) == '5'


def test_population_command():
    assert peers_population.population_command(
        'python', 'pendulum', [0, 1], 3200, ['compile_update=true']) == [
            'python', '-m', 'agents.scripts.train', '--config=pendulum',
            '--seeds=0-1', '--set=steps=3200', '--set=compile_update=true']


def test_defines_flag_reads_our_sections_only():
    assert not peers_population.defines_flag(_help(), 'seeds')
    assert peers_population.defines_flag(
        _help(extra='  --seeds: Seeds of a population.'), 'seeds')
    # A module of ours that train.py imports may define it.
    assert peers_population.defines_flag(_help(
        library='agents.training.shared_flags:\n  --seeds: Seeds.'), 'seeds')
    # A library's flag of the same name does not count.
    assert not peers_population.defines_flag(_help(
        library='tensorflow.python.foo:\n  --seeds: Not ours.'), 'seeds')
    # Nor does a flag whose name only starts with it.
    assert not peers_population.defines_flag(
        _help(extra='  --seeds_file: A file.'), 'seeds')


def test_defines_flag_refuses_output_without_train_flags():
    with pytest.raises(ValueError) as error:
        peers_population.defines_flag(
            'Traceback (most recent call last):\nImportError: no module\n',
            'seeds')
    assert str(error.value) == (
        'agents.scripts.train --helpfull listed no flags of train.py: '
        'ImportError: no module')


def test_refusal_is_one_line_naming_the_other_sides():
    line = peers_population.refusal(['ours_sequential', 'rejax_vmap'])
    assert line == (
        'Error: ours_population needs `python -m agents.scripts.train '
        "--seeds`, which this checkout's train.py does not define yet; "
        'leave it out with --systems=ours_sequential,rejax_vmap.')
    assert '\n' not in line
    assert peers_population.refusal([]).endswith(
        '--systems=ours_sequential,sb3_same,rejax_vmap.')


def test_ours_population_is_refused_in_one_line_without_the_flag():
    """End to end against this checkout's train.py (imports TensorFlow
    twice); skipped once train.py defines `--seeds`."""
    if peers_population.train_has_population():
        pytest.skip('train.py defines --seeds; ours_population runs.')
    done = subprocess.run(
        [sys.executable, peers_population.__file__,
         '--systems=ours_population,sb3_same', '--seeds=0-1',
         '--steps=3000'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        check=False, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert done.returncode == 2
    assert done.stdout == ''
    assert done.stderr.splitlines() == [
        peers_population.refusal(['sb3_same'])]


def test_check_sides():
    assert peers_population.check_sides(
        ['sb3_same', 'rejax_vmap'], 2) == ['sb3_same', 'rejax_vmap']
    with pytest.raises(app.UsageError) as error:
        peers_population.check_sides(['ours', 'sb3_same'], 2)
    assert str(error.value) == (
        "Unknown side 'ours'; expected ours_population, ours_sequential, "
        'sb3_same, rejax_vmap.')
    with pytest.raises(app.UsageError) as error:
        peers_population.check_sides(['sb3_same', 'sb3_same'], 2)
    assert str(error.value) == (
        '--systems: a side given twice in sb3_same,sb3_same.')
    with pytest.raises(app.UsageError) as error:
        peers_population.check_sides([], 2)
    assert str(error.value) == (
        '--systems: no sides; expected some of ours_population, '
        'ours_sequential, sb3_same, rejax_vmap.')
    with pytest.raises(app.UsageError) as error:
        peers_population.check_sides(['sb3_same'], 0)
    assert str(error.value) == '--parallel=0; expected at least 1 process.'


def _numbers(seconds, compile_seconds=None, steps=160_000):
    return dict(seconds=seconds, compile_seconds=compile_seconds,
                cpu_seconds=2 * seconds, steps_per_second=steps / seconds)


def test_format_table_with_ratios_and_targets():
    sides = dict(
        ours_population=_numbers(20.0),
        ours_sequential=_numbers(80.0),
        sb3_same=_numbers(100.0),
        rejax_vmap=_numbers(25.0, compile_seconds=7.25))
    assert peers_population.format_table(
        'Pendulum-v1', list(range(16)), 150_400, sides,
        'python benchmarks/peers_population.py --seeds=0-15') == '\n'.join([
            '### Pendulum-v1: 16 seeds (0-15) x 150,400 training steps',
            '',
            '    python benchmarks/peers_population.py --seeds=0-15',
            '',
            '| side | wall-clock s | of it compile s | CPU s | env steps/s, '
            'all seeds | ours_population / side, wall-clock | target |',
            '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
            '| ours_population | 20.0 | - | 40 | 8,000 | 1.00 | - |',
            '| ours_sequential | 80.0 | - | 160 | 2,000 | 0.25 | <= 0.5 |',
            '| sb3_same | 100.0 | - | 200 | 1,600 | 0.20 | <= 0.3 |',
            '| rejax_vmap | 25.0 | 7.2 | 50 | 6,400 | 0.80 | <= 0.8 |'])


def test_format_table_without_the_population_has_no_ratios():
    table = peers_population.format_table(
        'Pendulum-v1', [0, 3], 3200, dict(sb3_same=_numbers(10.0)), 'cmd')
    assert table.splitlines()[0] == (
        '### Pendulum-v1: 2 seeds (0,3) x 3,200 training steps')
    assert table.splitlines()[-1] == (
        '| sb3_same | 10.0 | - | 20 | 16,000 | - | <= 0.3 |')


@pytest.fixture(name='parsed_flags')
def _parsed_flags():
    """The benchmark's flags parsed from an empty command line, restored
    afterwards."""
    flags = peers_population.FLAGS
    flags(['peers_population.py'])
    yield flags
    flags.unparse_flags()


def test_shared_evaluation_period_is_rejax_period_on_pendulum(parsed_flags):
    """rejax's update on Pendulum is 1,600 steps, our evaluation period
    2,000: both sides evaluate every 3,200 steps; with that period set
    and whole periods of steps, both train 150,400 steps and evaluate 47
    times."""
    assert peers_population.shared_evaluation_period(
        'Pendulum-v1', 0, 150000) == 3200
    parsed_flags.ours_set = ['eval_every=3200']
    ours = peers_population.peers.make_spec('ours', 'Pendulum-v1', 0, 150400)
    theirs = peers_population.rejax_vmap_spec('Pendulum-v1', [0, 1],
                                              ours['steps'])
    assert (ours['steps'], ours['eval_every']) == (150400, 3200)
    assert (theirs['steps'], theirs['eval_every']) == (150400, 3200)
