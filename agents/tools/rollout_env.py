"""The environments of a loop of many steps in one session call.

Such a loop (`PPO.collect`, `tools.compiled_rollout`) carries a batch's
state from step to step, assigns it once at the end, stops at its first
step that is not finite (`Failure`) and fails outside the call.
"""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import in_graph_batch_env
from agents.tools import compiled_ops


class _RolloutEnv:
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


class TaskRolloutEnv(_RolloutEnv):
    """The loop's view of an in-graph task, through its pure `transition`
    and `restart` (a loop XLA compiles)."""

    jit_compile = True

    def _variables(self):
        """The reset counter, states and step counts."""
        return self._batch_env.counter, self._batch_env.state, (
            self._batch_env.steps)

    def rollout_seed(self):
        """The first half of the random keys of a rollout: the task's seed."""
        return self._batch_env.seed.read_value()

    @staticmethod
    def resets(env_state):
        """The int64 count of episodes the batch began, for random keys."""
        return env_state[0]

    def begin(self, env_state, begin, observ):
        """The loop state and observations after beginning new episodes
        where `begin` ([batch] bool) is true."""
        counter, state, steps = env_state
        counter, state, steps, fresh = self._batch_env.restart(
            self._batch_env.seed.read_value(), counter, state, steps, begin)
        return (counter, state, steps), compiled_ops.where(begin, fresh, observ)

    def step(self, env_state, action):
        """Step every environment: the loop state, observations, float32
        rewards, and the bool flags done, truncated and restarted (never,
        for a task)."""
        counter, state, steps = env_state
        state, steps, observ, reward, done, truncated = (
            self._batch_env.transition(state, steps, action))
        return ((counter, state, steps), observ, reward, done, truncated,
                tf.zeros_like(done))


class BridgeRolloutEnv(_RolloutEnv):
    """The loop's view of a `tools.InGraphBatchEnv`, stepped through Python
    (`step_outcome`, `reset_outcome`) as `TaskRolloutEnv` steps a task."""

    jit_compile = False

    def _variables(self):
        """The flags of the environments restarted after a failure and the
        count of restarts."""
        return self._batch_env.restarted, self._batch_env.restarts

    @staticmethod
    def rollout_seed():
        """The first half of the random keys of a rollout, drawn per call
        by the graph's seed (the resets draw no numbers in the graph)."""
        return tf.random.uniform([], maxval=tf.int64.max, dtype=tf.int64)

    @staticmethod
    def resets(unused_env_state):
        """Zero: the keys of a call differ by their step alone."""
        return tf.constant(0, tf.int64)

    def begin(self, env_state, begin, observ):
        """Reset where `begin` is true; steps without resets call no Python.
        """
        restarted, restarts = env_state

        def _reset():
            indices = tf.cast(tf.where(begin)[:, 0], tf.int32)
            outcome = self._batch_env.reset_outcome(indices)
            rows = indices[:, None]
            return (
                tf.tensor_scatter_nd_update(restarted, rows, tf.zeros_like(
                    outcome.restarted)),
                outcome.restarts,
                tf.tensor_scatter_nd_update(observ, rows, outcome.observ))

        restarted, restarts, observ = tf.cond(
            tf.reduce_any(begin), _reset,
            lambda: (restarted, restarts, observ))
        return (restarted, restarts), observ

    def step(self, env_state, action):
        """Step the batch; done is true also where an environment restarted.
        """
        del env_state
        outcome = self._batch_env.step_outcome(action)
        return (
            (outcome.restarted, outcome.restarts), outcome.observ,
            outcome.reward, outcome.done, outcome.truncated,
            outcome.restarted)


def rollout_env(batch_env):
    """The loop's view of an in-graph task or a `tools.InGraphBatchEnv`;
    None for other batches."""
    if hasattr(batch_env, 'transition') and hasattr(batch_env, 'restart'):
        return TaskRolloutEnv(batch_env)
    if isinstance(batch_env, in_graph_batch_env.InGraphBatchEnv):
        return BridgeRolloutEnv(batch_env)
    return None


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
