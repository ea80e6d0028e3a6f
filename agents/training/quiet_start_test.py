"""Tests of TensorFlow's quiet start in the scripts."""

import json
import os
import subprocess
import sys

import pytest

from agents.training import quiet_start

_NOISE = [
    'WARNING: All log messages before absl::InitializeLog() is called are '
    'written to STDERR',
    'I0000 00:00:1795439404.279804   20947 port.cc:153] oneDNN custom '
    'operations are on.',
    'I0000 00:00:1795439404.350952   20947 cpu_feature_guard.cc:227] This '
    'TensorFlow binary is optimized',
    'To enable the following instructions: AVX2 AVX512F FMA, in other '
    'operations, rebuild TensorFlow with the appropriate compiler flags.',
    'E0000 00:00:1795439410.903012   20947 cuda_platform.cc:52] failed call '
    'to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR '
    '(303)',
    'I0000 00:00:1795439410.911192   20947 mlir_graph_optimization_pass.cc:'
    '437] MLIR V1 optimization pass is not enabled',
]
_KEPT = [
    'E0000 00:00:1795439410.903012   20947 kernel.cc:52] Out of memory',
    'Error: Unknown config.',
    '12:00:00 INFO Step 3200 (eval): mean score -1288.6',
]

_WRITE = """
import os
import sys
from agents.training import quiet_start
with quiet_start.filter_stderr():
    os.write(2, sys.argv[1].encode())
"""


def test_filter_stderr_drops_the_start_up_lines_of_file_descriptor_2():
    text = '\n'.join(_NOISE[:3] + _KEPT[:1] + _NOISE[3:] + _KEPT[1:]) + '\n'
    result = subprocess.run(
        [sys.executable, '-c', _WRITE, text], capture_output=True, text=True,
        check=True)
    assert result.stderr.splitlines() == _KEPT


_QUIET = """
import os
import sys
from agents.training import quiet_start
quiet_start.quiet_tensorflow()
print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'), 'tensorflow' in sys.modules,
      'keras' in sys.modules)
"""


def _run_quiet(env, code=_QUIET):
    return subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        check=True, env=env)


@pytest.fixture(scope='module', name='started_quietly')
def _started_quietly():
    """A Python that quieted TensorFlow without a level of the user's and
    then printed its environment."""
    env = dict(os.environ)
    env.pop('TF_CPP_MIN_LOG_LEVEL', None)
    return _run_quiet(
        env, _QUIET + 'import json\nprint(json.dumps(dict(os.environ)))')


def test_the_users_log_level_wins(started_quietly):
    result = _run_quiet(dict(os.environ, TF_CPP_MIN_LOG_LEVEL='0'))
    assert result.stdout.split() == ['0', 'True', 'False']
    # Without one, the level that quiets the start-up.
    result = started_quietly
    assert result.stdout.splitlines()[0].split() == ['2', 'True', 'False']
    assert not [line for line in result.stderr.splitlines()
                if quiet_start.is_noise(line)]
    assert result.stderr == ''


def test_a_child_that_inherits_the_level_set_here_starts_quietly(
        started_quietly):
    """Once the seeds that benchmarks/learning.py spawns printed the start-up
    lines: they inherit the level their parent set, which read as the
    user's."""
    inherited = json.loads(started_quietly.stdout.splitlines()[1])
    result = _run_quiet(inherited)
    assert result.stdout.split() == ['2', 'True', 'False']
    assert result.stderr == ''
