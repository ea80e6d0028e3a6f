"""Many steps of a policy on a batch of environments in one session call.

On in-graph tasks (`agents.environments.InGraphTaskBatch`) the policy and
the environments step in one `tf.while_loop` that XLA compiles; on Python or
C environments (`tools.rollout_env`) the same loop runs as plain graph ops.
Summaries, raising checks and variable writes stay outside the loop. The
loop stops at the first step that is not finite; the result then fails
with the message of `tf.debugging.check_numerics` (`observ : Tensor had NaN
values`) and no variable is written.
"""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import nested
from agents.tools import rollout_env
from agents.tools import compiled_ops


class Policy:
    """The interface of a policy that a compiled rollout calls.

    Pure functions of tensors: they may read variables but not write them,
    and draw random numbers from stateless ops keyed by the given key.
    """

    def initial_state(self, batch_size):
        """The nested `[batch_size, ...]` state at the start of episodes, or
        None for a policy without state."""
        raise NotImplementedError

    def step(self, observ, state, key):
        """The actions of all environments and their next state (or None).

        Args:
            observ: float32 tensor of the batch of observations.
            state: The nested per-environment state, or None.
            key: int64 tensor `[2]`, a new seed of stateless ops every step.
        """
        raise NotImplementedError


def first_episodes(batch_env, policy, num_steps, key_offset=0):
    """Begin all episodes anew and run `num_steps` steps in one session call.

    The batch is left as that many steps of `tools.simulate` would leave
    it, with the same scores for the same actions.

    Args:
        batch_env: An in-graph task or a `tools.InGraphBatchEnv`.
        policy: `Policy`.
        num_steps: Python int of the steps, at least 1.
        key_offset: Integer added to the policy's random key.

    Returns:
        Tuple of bool `[batch]`, whose first episode ended, and float32
        `[batch]`, its score (the running score where it did not end).

    Raises:
        ValueError: When `num_steps` is not a positive Python int, or the
            batch is neither kind.
    """
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or (
            num_steps < 1):
        raise ValueError(
            f'num_steps must be a positive Python int, got {num_steps!r}.')
    env = rollout_env.rollout_env(batch_env)
    if env is None:
        raise ValueError(
            f'first_episodes needs an in-graph task or a '
            f'tools.InGraphBatchEnv, got {type(batch_env).__name__}.')
    size = len(batch_env)

    def _rollout(seed, env_state):
        carry = _initial_carry(batch_env, policy, env_state)

        def _running(carry):
            return tf.logical_and(
                carry.index < num_steps, tf.logical_not(carry.bad.failed))

        def _step(carry):
            return [_rollout_step(
                env, policy, carry, size,
                lambda env_state: tf.stack([
                    seed, key_offset + env.resets(env_state) * num_steps +
                    tf.cast(carry.index, tf.int64)]))]

        carry = tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]
        # Episodes that did not end report their running score.
        first_score = compiled_ops.where(
            carry.first_done, carry.first_score, carry.score)
        return carry._replace(first_score=first_score, policy_state=())

    with tf.name_scope('compiled_rollout'):
        if env.jit_compile:
            _rollout = compiled_ops.compiled_function(_rollout)
        carry = _rollout(env.rollout_seed(), env.initial())
        with tf.control_dependencies(rollout_env.failure_checks(carry.bad)):
            writes = _write_last_step(batch_env, env, carry)
        with tf.control_dependencies(writes):
            return tf.identity(carry.first_done), tf.identity(
                carry.first_score)


def _initial_carry(batch_env, policy, env_state):
    """The `_Carry` of a rollout before its first step: all episodes done."""
    size = len(batch_env)
    zeros = tf.zeros([size], tf.float32)
    flags = tf.zeros([size], tf.bool)
    observ = tf.zeros_like(batch_env.observ)
    action = tf.zeros_like(batch_env.action)
    return _Carry(
        index=tf.constant(0), env=env_state, observ=observ,
        done=tf.ones([size], tf.bool), action=action, reward=zeros,
        truncated=flags, policy_state=_initial_state(policy, size),
        score=zeros, first_done=flags, first_score=zeros,
        bad=rollout_env.no_failure(observ, action))


def _write_last_step(batch_env, env, carry):
    """The assignments of the last step to the env state and the variables
    `observ`, `done`, and where the batch has them `action`, `reward` and
    `truncated`."""
    writes = env.assign(carry.env) + [
        batch_env.observ.assign(carry.observ),
        batch_env.done.assign(carry.done)]
    for name in ('action', 'reward', 'truncated'):
        variable = getattr(batch_env, name, None)
        if variable is not None:
            writes.append(variable.assign(getattr(carry, name)))
    return writes


def _initial_state(policy, size):
    """The policy's initial state; an empty tuple stands for none."""
    state = policy.initial_state(size)
    return () if state is None else state


def _rollout_step(env, policy, carry, size, key_of):
    """The `_Carry` after a step: begin episodes where the last ended, act,
    step, and score the first episodes; `key_of` maps the env state after
    the resets to the policy's random key."""
    begin = carry.done
    env_state, observ = env.begin(carry.env, begin, carry.observ)
    policy_state = _where_nested(
        begin, _initial_state(policy, size), carry.policy_state)
    score = compiled_ops.where(begin, tf.zeros_like(carry.score), carry.score)
    action, policy_state = policy.step(
        observ, _none_if_empty(policy_state), key_of(env_state))
    policy_state = () if policy_state is None else policy_state
    action = tf.cast(action, carry.action.dtype)
    env_state, observ, reward, done, truncated, _ = env.step(
        env_state, action)
    score = score + reward
    ended_first = tf.logical_and(done, tf.logical_not(carry.first_done))
    return _Carry(
        index=carry.index + 1, env=env_state, observ=observ,
        done=done, action=action, reward=reward, truncated=truncated,
        policy_state=policy_state, score=score,
        first_done=tf.logical_or(carry.first_done, done),
        first_score=compiled_ops.where(ended_first, score, carry.first_score),
        bad=rollout_env.first_failure(carry.bad, action, observ, reward))


def _none_if_empty(state):
    """None for the empty tuple that stands for no state, else the state."""
    if isinstance(state, tuple) and not state:
        return None
    return state


def _where_nested(condition, new, old):
    """Per environment, the nested `new` where `condition`, else `old`."""
    # With a condition of rank 1, `where` selects whole rows.
    return nested.map(
        lambda new, old: compiled_ops.where(condition, new, old), new, old)


# The loop state of a rollout: the batch's (see `tools.rollout_env`), its
# variables, the policy's state, the scores and the `rollout_env.Failure`.
_Carry = collections.namedtuple('_Carry', (
    'index, env, observ, done, action, reward, truncated, policy_state, '
    'score, first_done, first_score, bad'))
