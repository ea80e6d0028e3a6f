"""Tests of the in-graph tasks: InGraphTaskBatch under tools.simulate and
across checkpoints, and the helpers of tasks."""

import os

import gymnasium as gym
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import environments
from agents.environments import in_graph_task
from agents.testing import mock_algorithm
from agents.tools.simulate import simulate


def _session():
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess


def test_registry_maps_gymnasium_ids_to_tasks():
    assert sorted(environments.TASKS) == [
            'Acrobot-v1', 'CartPole-v1', 'MountainCar-v0',
            'MountainCarContinuous-v0', 'Pendulum-v1']
    for env_id, task_class in environments.TASKS.items():
        assert task_class.env_id == env_id
        assert issubclass(task_class, environments.Task)


def test_variables_and_which_checkpoints_keep():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.Pendulum, 3, seed=1)
        names = [var.name for var in tf.global_variables()]
        assert names == [
                'task/seed:0', 'task/counter:0', 'task/state:0',
                'task/steps:0', 'task/observ:0', 'task/done:0',
                'task_temporary/action:0', 'task_temporary/reward:0',
                'task_temporary/truncated:0']
        assert not tf.trainable_variables()
        assert batch.observ.shape.as_list() == [3, 3]
        assert batch.action.shape.as_list() == [3, 1]
        assert batch.action.dtype.base_dtype == tf.float32
        assert batch.state.shape.as_list() == [3, 2]
        assert len(batch) == 3
        assert batch.max_length == 200
        assert batch.observation_space == gym.make(
                'Pendulum-v1').observation_space
        assert batch.error is None
        with _session() as sess:
            assert sess.run(batch.done).tolist() == [True] * 3
            assert sess.run(batch.restarts) == 0
            assert sess.run(batch.seed) == 1


def test_discrete_actions_are_int32_scalars():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.CartPole(), 2, seed=0)
        assert batch.action.shape.as_list() == [2]
        assert batch.action.dtype.base_dtype == tf.int32


@pytest.mark.parametrize('kwargs, message', [
        (dict(task='Pendulum-v1'),
         "task must be an agents.environments.Task, got 'Pendulum-v1'."),
        (dict(num_envs=0), 'num_envs must be an int >= 1, got 0.'),
        (dict(num_envs=2.0), 'num_envs must be an int >= 1, got 2.0.'),
        (dict(seed='1'), "seed must be None or an int64, got '1'."),
        (dict(seed=2 ** 63), f'seed must be None or an int64, got {2**63}.'),
        (dict(max_length=0),
         'max_length must be None or an int >= 1, got 0.'),
])
def test_bad_arguments(kwargs, message):
    arguments = dict(task=environments.Pendulum, num_envs=2, seed=0)
    arguments.update(kwargs)
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as info:
            in_graph_task.InGraphTaskBatch(**arguments)
    assert str(info.value) == message


def test_bad_actions():
    with tf.Graph().as_default():
        pendulum = in_graph_task.InGraphTaskBatch(
                environments.Pendulum, 2, seed=0)
        cartpole = in_graph_task.InGraphTaskBatch(
                environments.CartPole, 2, seed=0)
        with pytest.raises(TypeError) as info:
            cartpole.simulate(tf.zeros([2]))
        assert str(info.value) == (
                'Expected actions of dtype int32 but got float32.')
        with pytest.raises(ValueError) as info:
            pendulum.simulate(tf.zeros([3, 1]))
        assert str(info.value) == (
                'Expected actions of shape (2, 1) but got (3, 1).')
        nan = pendulum.simulate([[0.0], [np.nan]])
        outside = cartpole.simulate([1, 2])
        with _session() as sess:
            sess.run([pendulum.reset(), cartpole.reset()])
            observ = sess.run(pendulum.observ)
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(nan)
            assert 'action : Tensor had NaN values' in info.value.message
            np.testing.assert_array_equal(sess.run(pendulum.observ), observ)
            with pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(outside)
            assert (
                    'Expected actions in [0, 2) of the action space '
                    'Discrete(2) but got] [1 2]') in info.value.message
            assert sess.run(cartpole.steps).tolist() == [0, 0]


def test_simulate_ends_episodes_at_max_length():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.Pendulum, 2, seed=0, max_length=3)
        algo = mock_algorithm.MockAlgorithm(batch, action=0.5)
        done, _, _ = simulate(batch, algo, log=False)
        with _session() as sess:
            dones = [sess.run(done).tolist() for _ in range(7)]
            truncated = sess.run(batch.truncated).tolist()
    assert dones == [[False, False], [False, False], [True, True]] * 2 + [
            [False, False]]
    assert truncated == [False, False]
    both = [0, 1]
    step = [('perform', both), ('experience', both)]
    assert algo.calls == (
            [('begin_episode', both)] + step * 3 + [('end_episode', both)] +
            [('begin_episode', both)] + step * 3 + [('end_episode', both)] +
            [('begin_episode', both)] + step)
    for transition in algo.transitions:
        assert transition.action.tolist() == [[0.5], [0.5]]
        assert transition.reward.dtype == np.float32
        np.testing.assert_allclose(
                transition.nextob[:, 0] ** 2 + transition.nextob[:, 1] ** 2,
                [1.0, 1.0], rtol=1e-6)


def test_simulate_truncates_at_registry_limit():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.Pendulum, 2, seed=0)
        algo = mock_algorithm.MockAlgorithm(batch, record=False)
        done, _, _ = simulate(batch, algo, log=False)
        with _session() as sess:
            ends = []
            for index in range(401):
                if sess.run(done).any():
                    ends.append((index + 1, sess.run(batch.truncated)))
    assert [(step, flags.tolist()) for step, flags in ends] == [
            (200, [True, True]), (400, [True, True])]


def test_cartpole_terminations_follow_gymnasium():
    """Episodes under a constant push end where gymnasium's end."""
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.CartPole, 3, seed=2)
        algo = mock_algorithm.MockAlgorithm(batch, action=1)
        done, _, _ = simulate(batch, algo, log=False)
        with _session() as sess:
            dones = [sess.run(done).tolist() for _ in range(30)]
    env = gym.make('CartPole-v1').unwrapped
    # Replay every episode in gymnasium from its first observation (the
    # state), which MockAlgorithm saw in `experience`.
    expected = np.zeros((30, 3), bool)
    for agent in range(3):
        index = 0
        while index < 30:
            env.state = algo.transitions[index].observ[agent].astype(
                    np.float64)
            env.steps_beyond_terminated = None
            while index < 30:
                _, _, terminated, _, _ = env.step(1)
                expected[index, agent] = terminated
                index += 1
                if terminated:
                    break
    assert dones == expected.tolist()
    assert 2 <= np.sum(dones) <= 15
    episode_ends = [
            call for call in algo.calls if call[0] == 'end_episode']
    assert [agents for _, agents in episode_ends] == [
            np.flatnonzero(row).tolist() for row in dones if any(row)]


def test_reset_draws_keyed_initial_states():
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.CartPole, 4, seed=9)
        reset_all = batch.reset()
        reset_some = batch.reset([2, 0])
        counter = tf.placeholder(tf.int64, [])
        draw = batch.task.reset(
                tf.stack([tf.constant(9, tf.int64), counter]), 4)
        with _session() as sess:
            first = sess.run(reset_all)
            assert sess.run(batch.counter) == 1
            np.testing.assert_array_equal(
                    first, sess.run(draw, {counter: 0}))
            np.testing.assert_array_equal(sess.run(batch.observ), first)
            some = sess.run(reset_some)
            assert sess.run(batch.counter) == 2
            expected = sess.run(draw, {counter: 1})[[2, 0]]
            np.testing.assert_array_equal(some, expected)
            state = sess.run(batch.state)
            np.testing.assert_array_equal(state[[2, 0]], expected)
            np.testing.assert_array_equal(state[[1, 3]], first[[1, 3]])


def test_checkpoint_restores_running_episodes(tmp_path):
    """A restored batch continues its episodes and draws exactly."""
    path = os.path.join(tmp_path, 'model.ckpt')

    def build():
        # No seed: the drawn one travels in the checkpoint.
        batch = in_graph_task.InGraphTaskBatch(
                environments.CartPole, 3, seed=None)
        algo = mock_algorithm.MockAlgorithm(batch, action=1, record=False)
        done, _, _ = simulate(batch, algo, log=False)
        saved = [
                var for var in tf.global_variables()
                if '_temporary/' not in var.name]
        with tf.control_dependencies([done]):
            fetches = [done] + [
                    tf.identity(var)
                    for var in (batch.observ, batch.reward, batch.steps)]
        return tf.train.Saver(saved), fetches, saved

    with tf.Graph().as_default():
        saver, fetches, saved = build()
        assert [var.name for var in saved] == [
                'task/seed:0', 'task/counter:0', 'task/state:0',
                'task/steps:0', 'task/observ:0', 'task/done:0']
        with _session() as sess:
            for _ in range(13):
                sess.run(fetches)
            saver.save(sess, path)
            expected = [sess.run(fetches) for _ in range(25)]
    with tf.Graph().as_default():
        saver, fetches, _ = build()
        with _session() as sess:
            saver.restore(sess, path)
            actual = [sess.run(fetches) for _ in range(25)]
    assert sum(values[0].sum() for values in expected) >= 2
    for values, expected_values in zip(actual, expected):
        for value, expected_value in zip(values, expected_values):
            np.testing.assert_array_equal(value, expected_value)


def test_compiled_loop_of_pure_functions_matches_simulate():
    """`restart` and `transition` in an XLA loop retrace `simulate`."""
    num_steps = 40
    with tf.Graph().as_default():
        batch = in_graph_task.InGraphTaskBatch(
                environments.CartPole, 3, seed=4, max_length=12)
        algo = mock_algorithm.MockAlgorithm(batch, action=1, record=False)
        done, _, _ = simulate(batch, algo, log=False)

        def rollout(seed):
            def body(index, counter, state, steps, done, observs, dones):
                counter, state, steps, _ = batch.restart(
                        seed, counter, state, steps, done)
                action = tf.ones([3], tf.int32)
                state, steps, observ, _, done, _ = batch.transition(
                        state, steps, action)
                return (
                        index + 1, counter, state, steps, done,
                        observs.write(index, observ),
                        dones.write(index, done))

            loop_vars = (
                    tf.constant(0), tf.constant(0, tf.int64),
                    tf.zeros([3, 4]), tf.zeros([3], tf.int32),
                    tf.ones([3], tf.bool),
                    tf.TensorArray(tf.float32, num_steps),
                    tf.TensorArray(tf.bool, num_steps))
            outputs = tf.while_loop(
                    lambda index, *_: index < num_steps, body, loop_vars,
                    maximum_iterations=num_steps)
            return outputs[5].stack(), outputs[6].stack()

        compiled = tf.function(rollout, jit_compile=True)(
                tf.constant(4, tf.int64))
        with _session() as sess:
            observs, dones = sess.run(compiled)
            for index in range(num_steps):
                assert sess.run(done).tolist() == dones[index].tolist()
                np.testing.assert_allclose(
                        sess.run(batch.observ), observs[index],
                        rtol=1e-6, atol=1e-6)
    assert dones.sum() >= 6


@pytest.mark.parametrize('batch_size', [0, -1, True, 2.0, '2'])
def test_uniform_refuses_a_batch_size(batch_size):
    """The number of rows is a positive integer, not a bool."""
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=(
                rf'^batch_size must be a Python int >= 1, got '
                rf'{repr(batch_size)}\.$')):
            in_graph_task.uniform(
                tf.constant([1, 2], tf.int64), batch_size, [0], [1])


def test_uniform_takes_a_numpy_integer():
    """A NumPy integer is a batch size too."""
    with tf.Graph().as_default():
        values = in_graph_task.uniform(
            tf.constant([1, 2], tf.int64), np.int64(3), [0.0, -1.0],
            [1.0, 0.0])
        assert values.shape.as_list() == [3, 2]
        with tf.Session() as sess:
            values = sess.run(values)
    assert ((values >= [0.0, -1.0]) & (values < [1.0, 0.0])).all()
