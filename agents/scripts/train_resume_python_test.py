"""End-to-end test: seeded runs on Python environments resume exactly.

Gymnasium environments in process (`inprocess`) and in `slices` keep their
state in the checkpoints (physics, random generators, time limits): a run
whose generator is closed twice and that resumes each time scores as the
same run straight through. Apart from `train_resume_test`, so that
`--dist loadfile` can run the two on both workers.
"""

from concurrent import futures
import io
import logging
import multiprocessing
import os

import pytest

from agents.training import trainer
from agents.scripts.train_reliability_test import _tiny_config


def _closed_and_resumed(config, env_mode, stops):
    """Scores of a run whose generator is closed after some of its reports
    and resumed from its checkpoint, each time, then trained to its end.

    The resumptions name no env mode ('auto'), as the resume hint of the
    script has none.
    """
    scores = []
    for index, stop in enumerate(stops):
        run = trainer.train(config, 'auto' if index else env_mode)
        for score in run:
            scores.append(score)
            if len(scores) == stop:
                break
        run.close()
    return scores + list(trainer.train(config, 'auto'))


def _straight_and_resumed(name, env_modes, logdir):
    """The scores of a run straight through, in process, and for each of
    `env_modes` the scores of the same run stopped twice and resumed, and
    the log of the resumptions."""
    settings = dict(steps=120, eval_every=30, max_length=20)
    straight = list(trainer.train(
        _tiny_config(name, **settings), 'inprocess'))
    logger = logging.getLogger('agents')
    logger.setLevel(logging.INFO)
    resumed = {}
    for env_mode in env_modes:
        config = _tiny_config(
            name, logdir=os.path.join(logdir, env_mode), **settings)
        log = io.StringIO()
        handler = logging.StreamHandler(log)
        logger.addHandler(handler)
        scores = _closed_and_resumed(config, env_mode, (1, 3))
        logger.removeHandler(handler)
        resumed[env_mode] = scores, log.getvalue()
    return straight, resumed


# Resumed in process: cheetah, whose MuJoCo state holds more than
# Pendulum's (`env_state_test` restores both); in slices: Pendulum.
_CASES = {'pendulum': ('slices',), 'cheetah': ('inprocess',)}


@pytest.fixture(scope='module', name='runs')
def _runs_fixture(tmp_path_factory):
    """`_straight_and_resumed` of each case, one after another in one
    fresh process (one import of TensorFlow for both)."""
    # oneDNN's results depend on the order its ops ran in the process (one
    # ulp after a change of graph order, or in a cheetah run after a
    # pendulum run): off, before TensorFlow loads.
    with futures.ProcessPoolExecutor(
            1, multiprocessing.get_context('spawn'),
            initializer=os.putenv,
            initargs=('TF_ENABLE_ONEDNN_OPTS', '0')) as pool:
        return {
            name: pool.submit(
                _straight_and_resumed, name, env_modes,
                str(tmp_path_factory.mktemp(name))).result()
            for name, env_modes in _CASES.items()}


@pytest.mark.parametrize('name', list(_CASES), ids=[
    f'{name}-{"-".join(env_modes)}' for name, env_modes in _CASES.items()])
def test_python_run_resumed_ends_as_one_run_straight_through(runs, name):
    """Python environments in process or in slices continue where the
    checkpoint left them: physics, random generators and time limits, so
    that a seeded run stopped twice (training episodes of 20 steps cross
    phases of 15) and resumed scores as one run straight through (in
    process: slices score as it)."""
    straight, resumed = runs[name]
    env_modes = _CASES[name]
    assert len(straight) == 4
    assert sorted(resumed) == sorted(env_modes)
    for env_mode, (scores, log) in resumed.items():
        assert scores == straight, env_mode
        assert log.count('Restored checkpoint') == 2
        # Not the in-graph task, which auto picks for pendulum, nor a
        # faster mode for cheetah.
        assert log.count(
            f'Env mode auto: the run resumes in {env_mode}, the mode it '
            'trained in.') == 2
        assert 'Resumed with new episodes' not in log
