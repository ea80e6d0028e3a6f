"""A training script written for the 2017 package trains and resumes.

The script is the one `docs/coming-from-2017.md` shows: the 2017
`train.py` with its config, ported only from gym to gymnasium and to
`tensorflow.compat.v1`. It calls `utility.load_config` inside `except
IOError:`, `save_config` and then reads `config.logdir`,
`define_batch_env` with a constructor without arguments and
`env_processes`, `define_simulation_graph` with a config of the 2017 keys
only, and `define_saver` with the 2017 exclude pattern.

Its config here is one in the manner of PyBullet's 2017 configs: its
environment is registered in old gym's registry by an import of the
script (`import pybullet_envs` there), made through a compatibility
wrapper (shimmy's there) as a `functools.partial`, and it holds keys that
nothing reads now.
"""

import os
import re
import subprocess
import sys

import psutil

from agents.testing import worker_testing

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


# Added to the script after its configs: one in the manner of PyBullet's.
_OLD_GYM_CONFIG = """
import functools

import old_gym_compat
import old_gym_tasks  # Registers OldGymPendulum-v0 in old gym's registry.


def pendulum_old_gym():
  return dict(
      pendulum(), update_epochs_policy=64, update_epochs_value=64,
      env=functools.partial(old_gym_compat.make, 'OldGymPendulum-v0'))

"""


def _run(tmp_path, *flags):
    environ = dict(os.environ, PYTHONPATH=_ROOT)
    # As a user's would be: TensorFlow's warnings show.
    environ.pop('TF_CPP_MIN_LOG_LEVEL', None)
    result = subprocess.run(
        [sys.executable, str(tmp_path / 'train_2017.py'),
         f'--logdir={tmp_path / "logs"}', '--config=pendulum_old_gym',
         '--timestamp=t', *flags],
        cwd=tmp_path, env=environ, capture_output=True, text=True,
        timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [(int(step), phase, score)
               for step, phase, score in _STEP.findall(result.stderr)]
    return reports, result.stderr


def test_2017_script_trains_and_resumes(tmp_path):
    """Once `NameNotFound: Environment 'OldGymPendulum' doesn't exist` in
    the workers, `Cannot store functools.partial(...)`, and per worker a
    warning of gymnasium's and one of TensorFlow's."""
    worker_testing.write_old_gym(tmp_path)
    script = _script().replace(
        '\n\ndef _create_environment',
        _OLD_GYM_CONFIG + '\ndef _create_environment')
    (tmp_path / 'train_2017.py').write_text(script)
    before = set(psutil.Process().children(recursive=True))
    # In worker processes, as the 2017 default `--env_processes` has it.
    reports, stderr = _run(tmp_path)
    steps = [step for step, _, _ in reports]
    # Phases of 100 steps, train and eval in turn, to 2,000 steps.
    assert steps == list(range(100, 2001, 100))
    assert [phase for _, phase, _ in reports] == ['train', 'eval'] * 10
    # The script's own `tf.logging.info('Score ...')`, as in 2017.
    scores = re.findall(r'^INFO:tensorflow:Score (\S+)\.$', stderr, re.M)
    assert [f'{float(score):.3f}' for score in scores] == [
        score for _, _, score in reports]
    assert re.findall(r'^.* WARNING (.*)$', stderr, re.M) == [
        'Config keys of the 2017 package that nothing reads now: '
        'update_epochs_policy, update_epochs_value; set update_epochs '
        'instead.']
    for noise in ('additional_wrappers', 'was changed by setting attribute'):
        assert noise not in stderr
    run_dir = tmp_path / 'logs' / 't-pendulum_old_gym'
    config_text = (run_dir / 'config.yaml').read_text()
    assert f'logdir: {run_dir}\n' in config_text
    assert 'function: !callable old_gym_compat:make\n' in config_text
    assert (run_dir / 'model.ckpt-2000.index').exists()
    # The researcher extends the run; the script resumes from step 2000.
    (run_dir / 'config.yaml').write_text(
        config_text.replace('steps: 1000\n', 'steps: 1500\n'))
    reports, _ = _run(tmp_path, '--noenv_processes')
    assert [step for step, _, _ in reports] == list(range(2100, 3001, 100))
    assert set(psutil.Process().children(recursive=True)) <= before
