"""The environments of a loop of many steps in one session call.

Such a loop (`PPO.collect`, `tools.compiled_rollout`) carries a batch's
state from step to step, assigns it once at the end, stops at its first
step that is not finite (`Failure`) and fails outside the call. Each batch
class that a loop can step has its view (`RolloutEnv`) beside it.
"""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import compiled_ops


class RolloutEnv:
    """The loop's view of a batch whose loop state is the values of some of
    its variables (`_variables`)."""

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
    """The loop's view of a batch (its class's `rollout_env()`, as in-graph
    tasks and `tools.InGraphBatchEnv` have); None for other batches."""
    if getattr(type(batch_env), 'rollout_env', None) is None:
        return None
    return batch_env.rollout_env()


# Whether a step of a loop was not finite, and the actions, observations
# and rewards of the first such step.
Failure = collections.namedtuple('Failure', 'failed, action, observ, reward')


def no_failure(observ, action):
    """The `Failure` of a loop that has not failed, shaped like a batch of
    observations and actions."""
    return Failure(
        failed=tf.constant(False), action=tf.zeros_like(action),
        observ=tf.zeros_like(observ),
        reward=tf.zeros([observ.shape[0]], tf.float32))


def first_failure(failure, action, observ, reward):
    """The `Failure` after a step: the values of the first not finite
    (actions checked where floating point)."""
    checked = [observ, reward]
    if action.dtype.is_floating:
        checked.append(action)
    finite = compiled_ops.all_finite(checked)
    fails = tf.logical_and(tf.logical_not(finite), tf.logical_not(
        failure.failed))
    return Failure(
        failed=tf.logical_or(failure.failed, fails),
        action=compiled_ops.where(fails, action, failure.action),
        observ=compiled_ops.where(fails, observ, failure.observ),
        reward=compiled_ops.where(fails, reward, failure.reward))


def failure_checks(failure):
    """Checks (a list of the last, run after the others) that fail where a
    loop's `Failure` failed, with the message of
    `tf.debugging.check_numerics`, actions first (`action : Tensor had NaN
    values`)."""
    checks = []
    for name in ('action', 'observ', 'reward'):
        value = getattr(failure, name)
        if value.dtype.is_floating:
            with tf.control_dependencies(checks):
                checks = [tf.debugging.check_numerics(value, name)]
    return checks
