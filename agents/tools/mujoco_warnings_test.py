"""Tests of MuJoCo's warnings once."""

import os
import subprocess
import sys

from agents.tools import mujoco_warnings

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# Builds HalfCheetah three times, as a batch builds its environments, then
# in a worker process, as the trainer does before its workers do, and
# prints what reached the log.
_BUILD_THREE = """
import functools
import logging
from agents.environments import env_construction
from agents.tools import attr_dict
from agents.tools import external_process
logging.basicConfig(format='%(levelname)s %(message)s')
config = attr_dict.AttrDict(env='HalfCheetah-v5', max_length=10)
for _ in range(3):
    env_construction.create_environment(config, batch_wrappers=True).close()
env = external_process.ExternalProcess(functools.partial(
    env_construction.create_environment, config, batch_wrappers=True),
    main_module=False)
env.reset()
env.close()
"""


def test_settotalmass_warning_is_one_line(tmp_path):
    """Once once per process: from the trainer and each of its workers."""
    result = subprocess.run(
        [sys.executable, '-c', _BUILD_THREE], cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=_ROOT),
        capture_output=True, text=True, check=True)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [
        'WARNING MuJoCo warning (shown once): compiler '
        "attribute 'settotalmass' is deprecated and will be removed in a "
        'future release: scale the masses and densities in the model, or '
        'call mj_setTotalmass and mj_setConst on the compiled model']
    assert result.stdout == ''
    # MuJoCo's own handler would have appended it here.
    assert not (tmp_path / 'MUJOCO_LOG.TXT').exists()


def test_other_environments_do_not_import_mujoco():
    script = (
        'import sys\n'
        'from agents.tools import mujoco_warnings\n'
        "print(mujoco_warnings.install('CartPole-v1'), "
        "'mujoco' in sys.modules)\n")
    result = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True,
        check=True)
    assert result.stdout == 'False False\n'


def test_unknown_ids_and_constructors_are_not_mujoco():
    # pylint: disable=protected-access
    assert not mujoco_warnings._uses_mujoco('NoSuchEnv-v0')
    assert not mujoco_warnings._uses_mujoco(object)
    assert mujoco_warnings._uses_mujoco('Walker2d-v5')
