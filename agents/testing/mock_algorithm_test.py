"""Tests for the MockAlgorithm double."""

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import batch_env
from agents.tools import in_graph_batch_env
from agents.testing import mock_algorithm
from agents.testing import mock_environment


def _batch(count, **kwargs):
    envs = [mock_environment.MockEnvironment(**kwargs) for _ in range(count)]
    return in_graph_batch_env.InGraphBatchEnv(batch_env.BatchEnv(envs, True))


def test_zero_actions_of_batch_shape_and_dtype():
    """Default actions are zeros shaped like the batch's action variable."""
    with tf.Graph().as_default():
        algo = mock_algorithm.MockAlgorithm(_batch(3, action_shape=(2,)))
        indices = tf.placeholder(tf.int32, (None,))
        action, summary = algo.perform(indices, tf.zeros((3, 2)))
        assert action.dtype == tf.float32
        assert action.shape.as_list() == [None, 2]
        with tf.Session() as sess:
            result, summary = sess.run((action, summary), {indices: [2, 0]})
    assert result.tolist() == [[0, 0], [0, 0]]
    assert summary == b''
    assert algo.calls == [('perform', [2, 0])]


def test_constant_actions():
    """A given action is broadcast to every agent."""
    with tf.Graph().as_default():
        algo = mock_algorithm.MockAlgorithm(
                _batch(2, action_shape=(3,)), action=[0.5, -0.5, 1.0])
        action, _ = algo.perform(tf.range(2), tf.zeros((2, 2)))
        with tf.Session() as sess:
            result = sess.run(action)
    assert result.dtype == np.float32
    assert result.tolist() == [[0.5, -0.5, 1.0]] * 2


def test_discrete_actions():
    """Discrete batches get int32 scalar actions."""
    with tf.Graph().as_default():
        algo = mock_algorithm.MockAlgorithm(_batch(2, discrete=4), action=3)
        action, _ = algo.perform(tf.constant([1]), tf.zeros((1, 2)))
        assert action.dtype == tf.int32
        assert action.shape.as_list() == [1]
        with tf.Session() as sess:
            assert sess.run(action).tolist() == [3]


def test_records_calls_in_execution_order():
    """Each method records its name and indices when it runs."""
    with tf.Graph().as_default():
        algo = mock_algorithm.MockAlgorithm(_batch(2))
        end = algo.end_episode(tf.constant([1]))
        begin = algo.begin_episode(tf.constant([0, 1]))
        with tf.Session() as sess:
            assert sess.run(begin) == b''
            assert sess.run(end) == b''
            sess.run(begin)
    assert algo.calls == [
            ('begin_episode', [0, 1]), ('end_episode', [1]),
            ('begin_episode', [0, 1])]
    assert not algo.transitions


def test_records_transitions():
    """Experience records copies of the transition's arrays."""
    with tf.Graph().as_default():
        algo = mock_algorithm.MockAlgorithm(_batch(2))
        observ = tf.placeholder(tf.float32, (2, 2))
        summary = algo.experience(
                tf.constant([0, 1]), observ, tf.ones((2, 3)),
                tf.constant([1.0, 2.0]), tf.constant([False, True]),
                observ + 1)
        with tf.Session() as sess:
            assert sess.run(summary, {observ: [[0, 1], [2, 3]]}) == b''
            sess.run(summary, {observ: [[4, 5], [6, 7]]})
    assert algo.calls == [('experience', [0, 1])] * 2
    assert len(algo.transitions) == 2
    first, second = algo.transitions[0], algo.transitions[1]
    assert first.agent_indices == [0, 1]
    assert first.observ.tolist() == [[0, 1], [2, 3]]
    assert first.nextob.tolist() == [[1, 2], [3, 4]]
    assert first.action.tolist() == [[1, 1, 1], [1, 1, 1]]
    assert first.reward.tolist() == [1, 2]
    assert first.done.tolist() == [False, True]
    assert second.observ.tolist() == [[4, 5], [6, 7]]


def test_without_recording_only_graph_ops():
    """With record=False nothing is recorded and no Python op is built."""
    with tf.Graph().as_default() as graph:
        env = _batch(2, action_shape=(2,))
        algo = mock_algorithm.MockAlgorithm(env, action=1.0, record=False)
        before = {op.name for op in graph.get_operations()}
        indices = tf.constant([0, 1])
        action, perform_summary = algo.perform(indices, tf.zeros((2, 2)))
        summaries = [
            perform_summary, algo.begin_episode(indices),
            algo.experience(indices, *[tf.zeros(2)] * 5),
            algo.end_episode(indices)]
        new_ops = [op for op in graph.get_operations()
                   if op.name not in before]
        with tf.Session() as sess:
            result, summaries = sess.run((action, summaries))
    assert not any(op.type in ('PyFunc', 'PyFuncStateless', 'EagerPyFunc')
                   for op in new_ops)
    assert result.tolist() == [[1.0, 1.0]] * 2
    assert summaries == [b''] * 4
    assert not algo.calls and not algo.transitions
