"""Tests of the env mode 'graph': the standard wrappers as graph ops."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.training import config_io
from agents.scripts import configs
from agents.environments import env_construction
from agents.environments import env_modes
from agents.environments import graph_env
from agents.environments import in_graph_task
from agents.scripts import tasks


def _config(name='pendulum', **overrides):
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.update(logdir=None, **overrides)
    return config


@pytest.mark.parametrize('name, normalize', [
    ('pendulum', True), ('pendulum', False), ('cartpole', True),
    ('cartpole', False)])
def test_standard_task_steps_as_the_wrapped_gymnasium_env(name, normalize):
    """Same state and action: the same observations and rewards as the
    Python environment behind the standard wrappers, and the same spaces."""
    config = _config(name, normalize_ranges=normalize)
    env = env_construction.create_environment(config)
    task = in_graph_task.StandardTask(environments.TASKS[config.env], config)
    assert task.observation_space == env.observation_space
    assert task.action_space == env.action_space
    rng = np.random.default_rng(0)
    for _ in range(200):
        if name == 'pendulum':
            state = rng.uniform([-4, -8], [4, 8]).astype(np.float32)
            # Beyond the bounds too, which the wrappers clip.
            action = rng.uniform(-3, 3, [1]).astype(np.float32)
        else:
            state = rng.uniform(-0.2, 0.2, [4]).astype(np.float32)
            action = np.int32(rng.integers(2))
        env.reset(seed=0)
        env.unwrapped.state = np.asarray(state, np.float64)
        expected_observ, expected_reward, _, _, _ = env.step(action)
        _, observ, reward, _ = task.step(state[None], action[None])
        np.testing.assert_allclose(
            observ.numpy()[0], expected_observ, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(
            reward.numpy()[0], expected_reward, rtol=1e-5, atol=1e-5)
        next_state, _, _, _ = task.step(state[None], action[None])
        np.testing.assert_array_equal(
            task.observe(next_state).numpy(), observ.numpy())


def test_standard_task_maps_with_the_wrappers_affine_maps():
    """Exactly the float32 maps of `RangeNormalize` and `ClipAction`."""
    rng = np.random.default_rng(1)
    config = _config()
    task = in_graph_task.StandardTask(environments.CartPole, config)
    scale, _, _, _ = tools.space_wrappers.range_scales(
        task.task.observation_space, task.task.action_space, None, None)
    state = rng.normal(size=[64, 4]).astype(np.float32)
    # The infinite dimensions pass unchanged, the finite ones are mapped.
    np.testing.assert_array_equal(
        task.observe(state).numpy(),
        scale.normalize(task.task.observe(state).numpy()))
    task = in_graph_task.StandardTask(environments.Pendulum, config)
    _, scale, _, _ = tools.space_wrappers.range_scales(
        task.task.observation_space, task.task.action_space, None, None)
    state = rng.normal(size=[64, 2]).astype(np.float32)
    action = rng.uniform(-1.5, 1.5, [64, 1]).astype(np.float32)
    expected = task.task.step(
        state, scale.denormalize(np.clip(action, -1, 1)))[0]
    np.testing.assert_array_equal(
        task.step(state, action)[0].numpy(), expected.numpy())


@pytest.mark.parametrize('max_length, expected', [
    (50, 50), (200, 200), (1000, 200), (None, 200)])
def test_max_length_is_the_configs_within_the_registry_limit(
        max_length, expected):
    config = _config(max_length=max_length)
    with tf.Graph().as_default():
        batch = graph_env.define_in_graph_batch(config, 0, 'graph')
        assert batch.max_length == expected


def test_the_graph_batch_takes_seed_length_and_agents():
    graph = tf.Graph()
    with graph.as_default():
        config = _config(max_length=50, num_agents=3)
        batch = graph_env.define_in_graph_batch(config, 17, 'graph')
        assert len(batch) == 3 and batch.max_length == 50
        assert isinstance(batch.task, in_graph_task.StandardTask)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(batch.seed) == 17


@pytest.mark.parametrize('env, name', [
    ('HalfCheetah-v5', "'HalfCheetah-v5'"),
    (tasks.pendulum_without_velocity, 'pendulum_without_velocity')])
def test_graph_mode_for_an_env_without_a_task_names_those_with_one(
        env, name):
    config = _config(env=env)
    with pytest.raises(config_io.ConfigError) as error:
        graph_env.resolve_env_mode(config, 'graph')
    assert str(error.value) == (
        f'--env_mode=graph: the config env {name} has no in-graph task; '
        'tasks with one: Acrobot-v1, CartPole-v1, MountainCar-v0, '
        'MountainCarContinuous-v0, Pendulum-v1.')


@pytest.mark.parametrize('env, mode, expected', [
    ('Pendulum-v1', 'auto', 'graph'), ('CartPole-v1', 'graph', 'graph'),
    ('Pendulum-v1', 'inprocess', 'inprocess'),
    ('HalfCheetah-v5', 'auto', 'auto')])
def test_resolve_env_mode_of_a_new_run(env, mode, expected):
    config = _config(env=env)
    assert graph_env.resolve_env_mode(config, mode) == expected


@pytest.mark.parametrize('env, mode, saved, expected', [
    ('Pendulum-v1', 'auto', ('python', 'slices', 'ckpt'), 'slices'),
    ('Pendulum-v1', 'auto', ('python', None, 'ckpt'), 'auto'),
    ('HalfCheetah-v5', 'auto', ('python', 'inprocess', 'ckpt'), 'inprocess'),
    ('Pendulum-v1', 'auto', ('graph', None, 'ckpt'), 'graph'),
    ('Pendulum-v1', 'inprocess', ('python', 'slices', 'ckpt'), 'inprocess')])
def test_resolve_env_mode_of_a_resumed_run(env, mode, saved, expected):
    """'auto' resumes in the mode the checkpoint recorded, else where the
    checkpoint's kind of batch allows; a mode given stays."""
    config = _config(env=env)
    saved = graph_env.SavedEnv(*saved)
    assert graph_env.resolve_env_mode(config, mode, saved) == expected


def test_resuming_with_the_other_kind_of_batch_names_the_checkpoint():
    config = _config()
    with config.unlocked:
        config.logdir = 'run'
    with pytest.raises(config_io.ConfigError) as error:
        graph_env.resolve_env_mode(
            config, 'graph', graph_env.SavedEnv('python', None, 'run/ckpt'))
    assert str(error.value) == (
        'Cannot resume run with --env_mode=graph: checkpoint run/ckpt holds '
        'no in-graph task state (task/*), it was trained on Python '
        'environments; resume with --env_mode=auto or a Python env mode.')


def test_create_batch_env_refuses_the_graph_mode():
    with pytest.raises(config_io.ConfigError) as error:
        env_modes.create_batch_env(None, 2, 'graph')
    assert str(error.value) == (
        '--env_mode=graph builds no Python environments; expected a Python '
        'env mode (the in-graph task of a config comes from '
        'define_in_graph_batch).')


def test_auto_logs_that_it_picked_the_graph_mode(caplog):
    with caplog.at_level('INFO', logger='agents'):
        assert graph_env.resolve_env_mode(_config(), 'auto') == 'graph'
    assert [record.getMessage() for record in caplog.records] == [
        'Env mode auto: Pendulum-v1 has an in-graph task; using graph.']


def test_graph_is_a_mode_and_its_help_lists_the_tasks():
    assert env_modes.check_env_mode('graph') == 'graph'
    assert env_modes.mode_names()[-1] == 'graph'
    assert env_modes.MODES['graph'].in_graph
    assert not any(
        mode.in_graph for name, mode in env_modes.MODES.items()
        if name != 'graph')
    assert (
        f"graph: the task as TensorFlow operations in the graph where it has "
        f"an in-graph version ({', '.join(environments.TASKS)})."
        in env_modes.flag_help())


def test_one_call_resolves_auto_and_defines_both_batches_of_a_run():
    graph = tf.Graph()
    with graph.as_default():
        config = _config(num_agents=3, eval_episodes=5, seed=17)
        env_mode, train_batch, eval_batch = graph_env.define_run_batches(
            config, 'auto')
        assert env_mode == 'graph'
        assert (len(train_batch), len(eval_batch)) == (3, 5)
        assert {variable.name.split('/')[0]
                for variable in tf.global_variables()} == {
                    'environments', 'eval_environments'}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            seeds = sess.run([train_batch.seed, eval_batch.seed])
    derived = np.random.SeedSequence(17).spawn(2)[1].generate_state(1)[0]
    assert seeds == [17, derived] and seeds[1] != 17
    assert env_modes.task_seed(None, True) is None


def test_one_call_defines_no_evaluation_batch_unless_asked():
    with tf.Graph().as_default():
        env_mode, train, evaluation = graph_env.define_run_batches(
            _config(num_agents=2), 'graph', False)
    assert (env_mode, len(train), evaluation) == ('graph', 2, None)
