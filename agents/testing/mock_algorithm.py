"""Deterministic algorithm double that records how it is called."""

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import attr_dict


class MockAlgorithm:
    """Algorithm that returns fixed actions and records every call.

    As the graph runs, each call appends `(method_name, agent_indices as a
    list)` to `calls`, and `experience` its transition to `transitions`.
    With `record=False` it builds only plain graph ops: a trivial algorithm
    for measuring `simulate` itself.
    """

    def __init__(self, batch_env, action=None, record=True):
        """Create the algorithm for an in-graph batch, whose `action`
        variable gives the actions' shape and dtype; every action is
        `action` broadcast to that shape (None: zeros)."""
        self._batch_env = batch_env
        self._action = action
        self._record_calls = record
        self.calls = []
        self.transitions = []

    def begin_episode(self, agent_indices):
        """Record that the agents of `agent_indices` begin episodes."""
        with tf.name_scope('begin_episode'):
            return self._define_record('begin_episode', agent_indices)

    def perform(self, agent_indices, observ):
        """Record the call; return the fixed actions, one per agent, and an
        empty summary."""
        del observ  # The actions are fixed.
        with tf.name_scope('perform'):
            variable = self._batch_env.action
            shape = variable.shape[1:]
            value = tf.cast(
                0 if self._action is None else self._action,
                variable.dtype.base_dtype)
            summary = self._define_record('perform', agent_indices)
            with tf.control_dependencies([summary]):
                action = tf.broadcast_to(value, tf.concat(
                    [tf.shape(agent_indices), shape.as_list()], 0))
            action.set_shape(agent_indices.shape.concatenate(shape))
            return action, summary

    def experience(self, agent_indices, observ, action, reward, done, nextob):
        """Record the call and the transition; return an empty summary."""
        with tf.name_scope('experience'):
            return self._define_record(
                    'experience', agent_indices,
                    observ, action, reward, done, nextob)

    def end_episode(self, agent_indices):
        """Record that the agents of `agent_indices` end episodes."""
        with tf.name_scope('end_episode'):
            return self._define_record('end_episode', agent_indices)

    def _define_record(self, name, agent_indices, *transition):
        """The summary op, recording the call when it runs."""
        if not self._record_calls:
            return tf.constant('', name='summary')
        record = tf.numpy_function(
                lambda *args: self._record(name, *args),
                [agent_indices] + list(transition), [], name=name)
        with tf.control_dependencies([record]):
            return tf.identity('', name='summary')

    def _record(self, name, agent_indices, *transition):
        """Append a call and its transition."""
        agent_indices = agent_indices.tolist()
        self.calls.append((name, agent_indices))
        if transition:
            # Copy, because the arrays may share memory that the graph reuses.
            observ, action, reward, done, nextob = (
                    np.array(value) for value in transition)
            self.transitions.append(attr_dict.AttrDict(
                    agent_indices=agent_indices, observ=observ, action=action,
                    reward=reward, done=done, nextob=nextob))
