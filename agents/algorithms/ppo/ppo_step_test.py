"""Tests of PPO's one step under its drivers: the one-step path of
`tools.simulate` and the collection of many steps per call.

On in-graph tasks (compiled with XLA) and on gymnasium and EnvPool
environments behind the numpy_function bridge (a plain graph loop), with
feed-forward and recurrent networks.
"""

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.algorithms.ppo import ppo
from agents.environments import in_graph_task
from agents.scripts import configs
from agents.environments import graph_env
from agents.scripts import networks
from agents.tools import envpool_batch_env

_AGENTS = 4

_RECURRENT = dict(
    network=networks.recurrent_gaussian, recurrent_value=True,
    chunk_length=10)


def _config(**overrides):
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(
            num_agents=_AGENTS, update_every=_AGENTS, max_length=10,
            policy_layers=(8,), value_layers=(8,), update_epochs=2,
            batch_size=2, steps=1000, seed=3,
            # The compiled update has tests of its own.
            compile_update=False)
        config.update(overrides)
    return config


def _has_envpool():
    try:
        envpool_batch_env.import_envpool()
    except ImportError:
        return False
    return True


def _batch(config, task):
    """An in-graph task, or the config's environments in an env mode."""
    if isinstance(task, str):
        return graph_env.define_in_graph_batch(config, 11, task)
    return in_graph_task.InGraphTaskBatch(
        task, _AGENTS, seed=11, max_length=config.max_length)


def _build(config, task, compiled, log=False, num_steps=None):
    """PPO on a batch; the op of one run (of up to `num_steps` batch steps,
    by default `max_length`) and the run's summary."""
    batch = _batch(config, task)
    step = tf.train.get_or_create_global_step()
    algo = ppo.PPO(
        batch, step, tf.Variable(True, trainable=False),
        tf.Variable(log, trainable=False), config)
    if compiled:
        made, done, score, summary = algo.collect(
            num_steps or config.max_length, tf.constant(1000))
    else:
        made = tf.constant(1)
        done, score, summary = tools.simulate(  # pylint: disable=not-callable
            batch, algo, log=log)
    with tf.control_dependencies([done, score, summary]):
        advance = step.assign_add(tf.cast(made * _AGENTS, tf.int64))
    # The scores of the episodes that ended in the run.
    scores = tf.boolean_mask(score, done)
    return algo, advance, scores


def _session():
    """A session without Grappler: it would optimize the graph again for
    each new set of fetches, a quarter of these tests' time; both paths
    compared run without it."""
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.Session(config=config)


def _driver_state(name):
    """Whether a variable is the scores and lengths that the one-step
    driver (`tools.simulate`) or `collect` keeps, which the other lacks."""
    return 'simulate_temporary' in name or 'collect_temporary' in name


def _state_after(config, task, compiled, batch_steps, num_steps=None):
    """The checkpointed variables and PPO's buffers after some steps.

    Returns:
      The batch steps of every run, the number of updates, the variables'
      values by name, the scores of the episodes that ended, in order, and
      the number of runs that trained and left episodes in the memory
      (those a compiled run stored after its update).
    """
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        algo, advance, scores = _build(
            config, task, compiled, num_steps=num_steps)
        # pylint: disable=protected-access
        watched = [
            variable for variable in tf.global_variables()
            if not _driver_state(variable.name)]
        try:
            with _session() as sess:
                sess.run(tf.global_variables_initializer())
                made, ended, stored_after_update = [], [], 0
                updates = 0
                while sum(made) < batch_steps:
                    step, run_scores = sess.run((advance, scores))
                    made.append(step // _AGENTS - sum(made))
                    ended += list(run_scores)
                    trained, rows = sess.run(
                        (algo._num_updates, algo._memory_index))
                    stored_after_update += int(trained > updates and rows)
                    updates = trained
                return made, updates, {
                    variable.name: value for variable, value in zip(
                        watched, sess.run(watched))}, ended, (
                            stored_after_update)
        finally:
            algo._batch_env.close()


def _run_both_paths(config, task, batch_steps, num_steps=None):
    """Run `collect` for `batch_steps`, then the one-step path for the
    steps it made, and assert that both leave the same state (to float
    tolerance: XLA rounds some functions otherwise) after as many updates.

    Returns:
      The batch steps of every run of `collect`, the number of updates, the
      scores of `collect` and of the one-step path, and the number of runs
      that stored episodes after their update (see `_state_after`).
    """
    made, updates, collected, scores, stored_after_update = _state_after(
        config, task, True, batch_steps, num_steps=num_steps)
    _, one_step_updates, expected, one_step_scores, _ = _state_after(
        config, task, False, sum(made))
    assert updates == one_step_updates
    assert sorted(collected) == sorted(expected)
    for name, value in expected.items():
        if np.asarray(value).dtype.kind == 'f':
            np.testing.assert_allclose(
                collected[name], value, rtol=1e-3, atol=1e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(collected[name], value, name)
    return made, updates, scores, one_step_scores, stored_after_update


@pytest.mark.parametrize('task, overrides, batch_steps', [
    # Episodes of 10 steps, all ending together: an update every 10 steps.
    (environments.Pendulum, {}, 30),
    (environments.Pendulum, dict(reward_normalization='reward'), 30),
    # A recurrent policy and value, whose state the loop carries.
    (environments.Pendulum, _RECURRENT, 30),
    # Episodes that terminate at different steps; more end at once than
    # the memory holds.
    (environments.CartPole, dict(
        max_length=40, network=networks.feed_forward_categorical,
        update_every=3), 60),
])
def test_compiled_collection_equals_the_one_step_path(
        task, overrides, batch_steps):
    """The same seed gives the same episodes, normalizers, memory and
    weights, to float tolerance (XLA rounds some functions otherwise), and
    a compiled run stops where the memory filled to update."""
    made, updates, _, _, _ = _run_both_paths(
        _config(**overrides), task, batch_steps)
    assert updates >= 2
    if task is environments.Pendulum:
        # Runs of one episode each: the memory fills at its end.
        assert made[:2] == [10, 10]


class _Float64Pendulum(gym.ActionWrapper):
    """Pendulum-v1 taking float64 actions, as EnvPool's MuJoCo tasks do."""

    def __init__(self):
        super().__init__(gym.make('Pendulum-v1'))
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float64)

    def action(self, action):
        """The action as Pendulum takes it."""
        return np.asarray(action, np.float32)


@pytest.mark.parametrize('env_mode, env', [
    ('inprocess', 'Pendulum-v1'),
    ('inprocess', _RECURRENT),
    # Actions wider than the policy's.
    ('inprocess', _Float64Pendulum),
    pytest.param('envpool', 'Pendulum-v1', marks=pytest.mark.skipif(
        not _has_envpool(), reason='EnvPool is not installed')),
])
def test_bridge_collection_equals_the_one_step_path(env_mode, env):
    """Pendulum-v1 in Python (gymnasium) or C (EnvPool) through the
    numpy_function bridge: runs of 4 steps, shorter than the episodes of
    10, give the one-step path's episodes, memory, weights and scores."""
    config = _config(
        **(env if isinstance(env, dict) else dict(env=env)))
    made, updates, scores, one_step_scores, _ = _run_both_paths(
        config, env_mode, 30, num_steps=4)
    assert updates == 3
    # Runs stop at the step that fills the memory, at the episodes' end.
    assert made == [4, 4, 2] * 3
    assert len(scores) == 3 * _AGENTS
    np.testing.assert_allclose(scores, one_step_scores, rtol=1e-5)


# CartPole with episodes that end at different steps, often in a step whose
# rollouts fill the memory.
_CARTPOLE_ROLLOUTS = dict(
    max_length=40, network=networks.feed_forward_categorical,
    update_every=3, rollout_length=7)


@pytest.mark.parametrize('task, overrides, batch_steps', [
    # Rollouts of 4 steps in episodes of 10: segments of 4, 4 and 2 steps,
    # and counts that go on across episodes.
    (environments.Pendulum, dict(rollout_length=4), 30),
    # More rollouts and episodes end at once than the memory holds.
    (environments.CartPole, _CARTPOLE_ROLLOUTS, 40),
    # A memory full by its steps.
    (environments.CartPole, dict(
        _CARTPOLE_ROLLOUTS, rollout_length=6, update_steps=15), 40),
])
def test_compiled_rollouts_equal_the_one_step_path(
        task, overrides, batch_steps):
    """With `rollout_length`, the compiled collection hands over rollouts
    and stores episodes as `experience` and `end_episode` do: the same
    memory, weights, rollout counts and scores. Where the rollouts of a
    step fill the memory, the update runs before the step's ended
    episodes go into it, as on the one-step path."""
    made, updates, scores, one_step_scores, stored_after_update = (
        _run_both_paths(_config(**overrides), task, batch_steps))
    assert updates >= 3
    # A run reports the episodes that ended in it in agent order.
    np.testing.assert_allclose(
        sorted(scores), sorted(one_step_scores), rtol=1e-5)
    if task is environments.Pendulum:
        # Full at the rollouts of steps 4 and 8 and the episodes' end at
        # step 10; then at the rollouts of 2 steps that follow.
        assert made[:4] == [4, 4, 2, 2]
        assert stored_after_update == 0
    else:
        assert stored_after_update >= 1


@pytest.mark.parametrize('env_mode, overrides', [
    ('inprocess', dict(env='Pendulum-v1', rollout_length=4)),
    ('inprocess', dict(
        _CARTPOLE_ROLLOUTS, env='CartPole-v1', rollout_length=5,
        update_every=2)),
    pytest.param(
        'envpool', dict(env='Pendulum-v1', rollout_length=4),
        marks=pytest.mark.skipif(
            not _has_envpool(), reason='EnvPool is not installed')),
])
def test_bridge_rollouts_equal_the_one_step_path(env_mode, overrides):
    """Rollouts on environments behind the numpy_function bridge, in runs
    of 3 steps, shorter than the rollouts."""
    made, updates, scores, one_step_scores, stored_after_update = (
        _run_both_paths(_config(**overrides), env_mode, 30, num_steps=3))
    assert updates >= 3
    np.testing.assert_allclose(
        sorted(scores), sorted(one_step_scores), rtol=1e-5)
    if overrides['env'] == 'Pendulum-v1':
        assert made[:5] == [3, 1, 3, 1, 2]
    else:
        assert stored_after_update >= 1


class _FailingPendulum(gym.Wrapper):
    """Pendulum-v1 whose third step fails as `fault` says."""

    fault = None

    def __init__(self):
        super().__init__(gym.make('Pendulum-v1'))
        self._steps = 0

    def step(self, action):
        """Step, raising or returning NaN on the third step."""
        self._steps += 1
        observ, reward, terminated, truncated, info = self.env.step(action)
        if self._steps == 3 and self.fault == 'raise':
            raise RuntimeError('simulator exploded')
        if self._steps == 3 and self.fault == 'nan_observ':
            observ = observ * np.nan
        return observ, reward, terminated, truncated, info


def _assert_fails_and_writes_nothing(sess, advance, error, message):
    """Running `advance` raises `error` with `message` in its text, and no
    variable changes."""
    variables = tf.global_variables()
    before = sess.run(variables)
    with pytest.raises(error) as info:
        sess.run(advance)
    assert message in str(info.value)
    for variable, old, new in zip(variables, before, sess.run(variables)):
        np.testing.assert_array_equal(old, new, variable.name)


@pytest.mark.parametrize('fault, message', [
    ('raise', 'Environment 0 of the batch failed: simulator exploded'),
    ('nan_observ', 'observ : Tensor had NaN values'),
])
def test_bridge_faults_fail_the_call_and_write_nothing(
        monkeypatch, fault, message):
    """An environment that raises or returns NaN amid a run fails the
    session run as the one-step path's step does, and no variable
    changes; the batch keeps the exception of the environment."""
    monkeypatch.setattr(_FailingPendulum, 'fault', fault)
    config = _config(env=_FailingPendulum)
    with tf.Graph().as_default():
        algo, advance, unused_scores = _build(config, 'inprocess', True)
        batch_env = algo._batch_env  # pylint: disable=protected-access
        try:
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                _assert_fails_and_writes_nothing(
                    sess, advance, tf.errors.OpError, message)
            if fault == 'raise':
                assert 'simulator exploded' in str(batch_env.error)
            else:
                assert batch_env.error is None
        finally:
            batch_env.close()


def test_which_configs_compile():
    with tf.Graph().as_default():
        config = _config()
        algo, _, _ = _build(config, environments.Pendulum, False)
        assert algo.compiles_collection(algo._batch_env)  # pylint: disable=protected-access
        assert not algo.compiles_collection(object())
    with tf.Graph().as_default():
        config = _config(rollout_length=5)
        algo, _, _ = _build(config, environments.Pendulum, False)
        assert algo.compiles_collection(algo._batch_env)  # pylint: disable=protected-access


def test_non_finite_actions_fail_the_call_and_write_nothing():
    """A NaN action inside the compiled call fails the session run with the
    one-step path's error, and no variable changes."""
    # pylint: disable=import-outside-toplevel
    from agents.scripts import train_reliability_test
    config = _config(network=train_reliability_test.nan_action_network)
    with tf.Graph().as_default():
        unused_algo, advance, unused_summary = _build(
            config, environments.Pendulum, True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _assert_fails_and_writes_nothing(
                sess, advance, tf.errors.InvalidArgumentError,
                'action : Tensor had NaN values')


def test_training_stops_in_one_line_on_a_nan_action():
    """End to end on the in-graph task, as on the one-step path."""
    # pylint: disable=import-outside-toplevel
    from agents.scripts import train
    from agents.scripts import train_reliability_test
    from agents.scripts import utility
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(
            network=train_reliability_test.nan_action_network, steps=400,
            eval_every=400, eval_episodes=2, logdir=None, seed=0)
    with pytest.raises(utility.TrainingError) as info:
        list(train.train(config, 'graph'))
    assert str(info.value) == (
        "Training stopped at global step 0: 'action' had NaN values; "
        'expected finite numbers.')
