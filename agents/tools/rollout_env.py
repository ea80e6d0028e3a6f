"""The environments of a loop of many steps in one session call, which
carries a batch's state (its `RolloutEnv` view) from step to step, stops at
its first step that is not finite (`Failure`) and fails after the loop."""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import compiled_ops


class RolloutEnv:
    """The loop's view of a batch whose loop state is some of its variables."""

    def __init__(self, batch_env):
        self._batch_env = batch_env

    def initial(self):
        """The batch's loop state, read from its variables."""
        return tuple(variable.read_value() for variable in self._variables())

    def assign(self, env_state):
        """The assignments of a loop state to the batch's variables."""
        return [variable.assign(value)
                for variable, value in zip(self._variables(), env_state)]

    def _variables(self):
        """The variables of the loop state."""
        raise NotImplementedError


def rollout_env(batch_env):
    """The loop's view of a batch (its class's `rollout_env()`), or None."""
    if getattr(type(batch_env), 'rollout_env', None) is None:
        return None
    return batch_env.rollout_env()


# Whether a step of a loop was not finite, and the actions, observations
# and rewards of the first such step.
Failure = collections.namedtuple('Failure', 'failed, action, observ, reward')


def no_failure(observ, action):
    """The `Failure` of a loop that has not failed."""
    return Failure(
        failed=tf.constant(False), action=tf.zeros_like(action),
        observ=tf.zeros_like(observ),
        reward=tf.zeros([observ.shape[0]], tf.float32))


def first_failure(failure, action, observ, reward):
    """The `Failure` after a step: the values of the first not finite."""
    checked = [observ, reward]
    if action.dtype.is_floating:
        checked.append(action)
    finite = compiled_ops.all_finite(checked)
    fails = tf.logical_not(tf.logical_or(finite, failure.failed))
    return Failure(
        failed=tf.logical_or(failure.failed, fails),
        action=compiled_ops.where(fails, action, failure.action),
        observ=compiled_ops.where(fails, observ, failure.observ),
        reward=compiled_ops.where(fails, reward, failure.reward))


def failure_checks(failure):
    """A list of the last of the checks (`tf.debugging.check_numerics`,
    actions first) that fail where a loop failed."""
    checks = []
    for name in ('action', 'observ', 'reward'):
        value = getattr(failure, name)
        if value.dtype.is_floating:
            with tf.control_dependencies(checks):
                checks = [tf.debugging.check_numerics(value, name)]
    return checks
