"""A training script written for the 2017 package trains and resumes.

The script is the one `docs/coming-from-2017.md` shows: the 2017
`train.py` with its config, ported only from gym to gymnasium and to
`tensorflow.compat.v1`. It calls `utility.load_config` inside `except
IOError:`, `save_config` and then reads `config.logdir`,
`define_batch_env` with a constructor without arguments and
`env_processes`, `define_simulation_graph` with a config of the 2017 keys
only, and `define_saver` with the 2017 exclude pattern.
"""

import os
import re
import subprocess
import sys

import psutil

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_STEP = re.compile(r'Global step (\d+) \((train|eval)\): mean score (\S+),')


def _script():
    with open(os.path.join(_ROOT, 'docs', 'coming-from-2017.md'),
              encoding='utf-8') as file_:
        text = file_.read()
    return re.search(
        r'<!-- snippet: train-2017 -->\n```python\n(.*?)```', text,
        re.DOTALL).group(1)


def _run(tmp_path, *flags):
    environ = dict(os.environ, PYTHONPATH=_ROOT)
    result = subprocess.run(
        [sys.executable, str(tmp_path / 'train_2017.py'),
         f'--logdir={tmp_path / "logs"}', '--config=pendulum',
         '--timestamp=t', *flags],
        cwd=tmp_path, env=environ, capture_output=True, text=True,
        timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return [(int(step), phase, score)
            for step, phase, score in _STEP.findall(result.stderr)]


def test_2017_script_trains_and_resumes(tmp_path):
    (tmp_path / 'train_2017.py').write_text(_script())
    before = set(psutil.Process().children(recursive=True))
    # In worker processes, as the 2017 default `--env_processes` has it.
    reports = _run(tmp_path)
    steps = [step for step, _, _ in reports]
    # Phases of 100 steps, train and eval in turn, to 2,000 steps.
    assert steps == list(range(100, 2001, 100))
    assert [phase for _, phase, _ in reports] == ['train', 'eval'] * 10
    run_dir = tmp_path / 'logs' / 't-pendulum'
    config_text = (run_dir / 'config.yaml').read_text()
    assert f'logdir: {run_dir}\n' in config_text
    assert (run_dir / 'model.ckpt-2000.index').exists()
    # The researcher extends the run; the script resumes from step 2000.
    (run_dir / 'config.yaml').write_text(
        config_text.replace('steps: 1000\n', 'steps: 1500\n'))
    reports = _run(tmp_path, '--noenv_processes')
    assert [step for step, _, _ in reports] == list(range(2100, 3001, 100))
    assert set(psutil.Process().children(recursive=True)) <= before


def test_2017_unittest_command_passes():
    """The 2017 README's test command: unittest runs what it can."""
    result = subprocess.run(
        [sys.executable, '-m', 'unittest', 'discover', '-p', '*_test.py'],
        cwd=_ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert re.search(r'^OK( \(skipped=\d+\))?$', result.stderr, re.MULTILINE)
