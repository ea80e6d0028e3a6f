"""Many steps of a policy on a batch in one session call: one
`tf.while_loop`, compiled by XLA on in-graph tasks (`tools.rollout_env`)."""

import collections

import tensorflow.compat.v1 as tf

from agents.tools import nested
from agents.tools import rollout_env
from agents.tools import compiled_ops


def first_episodes(batch_env, policy, num_steps):
    """Begin all episodes anew and run `num_steps` steps in one session call:
    bool `[batch]`, whose first episode ended, and float32 `[batch]`, its
    score (the running score where it did not end).

    The batch is left as that many steps of `tools.simulate` would leave
    it. A step that is not finite stops the loop and fails the result with
    the message of `tf.debugging.check_numerics`, writing no variable. A
    ValueError unless `num_steps` is a positive Python int and the batch of
    one of the two kinds.

    Args:
        batch_env: An in-graph task or a `tools.InGraphBatchEnv`.
        policy: Pure functions of tensors (they may read variables, not
            write them): `initial_state(batch_size)`, the nested
            `[batch_size, ...]` state at the start of episodes or None, and
            `step(observ, state, key)`, the actions and the next state (or
            None), drawing from stateless ops keyed by the int64 `[2]` key.
    """
    rollout = rollout_function(batch_env, policy, num_steps)
    env = rollout_env.rollout_env(batch_env)
    if env.jit_compile:
        rollout = compiled_ops.compiled_function(rollout)
    with tf.name_scope('compiled_rollout'):
        return finish(batch_env, rollout(env.rollout_seed(), env.initial()))


def rollout_function(batch_env, policy, num_steps):
    """The loop of `first_episodes` (same arguments and errors) as a
    function `(seed, env_state) -> carry` that writes no variable."""
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
                    seed, env.resets(env_state) * num_steps +
                    tf.cast(carry.index, tf.int64)]))]

        carry = tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]
        # Episodes that did not end report their running score.
        first_score = compiled_ops.where(
            carry.first_done, carry.first_score, carry.score)
        return carry._replace(first_score=first_score, policy_state=())

    return _rollout


def finish(batch_env, carry):
    """Write the carry of a `rollout_function` to the batch's variables
    (failing where it is not finite); its first episodes' done and score."""
    env = rollout_env.rollout_env(batch_env)
    with tf.control_dependencies(rollout_env.failure_checks(carry.bad)):
        writes = env.assign(carry.env) + [
            getattr(batch_env, name).assign(getattr(carry, name))
            for name in ('observ', 'done', 'action', 'reward', 'truncated')]
    with tf.control_dependencies(writes):
        return tf.identity(carry.first_done), tf.identity(carry.first_score)


def _initial_carry(batch_env, policy, env_state):
    """The `_Carry` of a rollout before its first step: all episodes done."""
    size = len(batch_env)
    zeros, flags = tf.zeros([size], tf.float32), tf.zeros([size], tf.bool)
    observ, action = (
        tf.zeros_like(batch_env.observ), tf.zeros_like(batch_env.action))
    return _Carry(
        index=tf.constant(0), env=env_state, observ=observ,
        done=tf.ones([size], tf.bool), action=action, reward=zeros,
        truncated=flags, policy_state=_initial_state(policy, size),
        score=zeros, first_done=flags, first_score=zeros,
        bad=rollout_env.no_failure(observ, action))


def _initial_state(policy, size):
    """The policy's initial state; an empty tuple stands for none."""
    state = policy.initial_state(size)
    return () if state is None else state


def _rollout_step(env, policy, carry, size, key_of):
    """The `_Carry` after a step; `key_of` gives the policy's random key."""
    begin = carry.done
    env_state, observ = env.begin(carry.env, begin, carry.observ)
    # With a condition of rank 1, `where` selects whole rows.
    policy_state = nested.map(
        lambda new, old: compiled_ops.where(begin, new, old),
        _initial_state(policy, size), carry.policy_state)
    score = compiled_ops.where(begin, tf.zeros_like(carry.score), carry.score)
    if isinstance(policy_state, tuple) and not policy_state:
        policy_state = None
    action, policy_state = policy.step(observ, policy_state, key_of(env_state))
    policy_state = () if policy_state is None else policy_state
    action = tf.cast(action, carry.action.dtype)
    env_state, observ, reward, done, truncated, _ = env.step(env_state, action)
    score = score + reward
    ended_first = tf.logical_and(done, tf.logical_not(carry.first_done))
    return _Carry(
        index=carry.index + 1, env=env_state, observ=observ,
        done=done, action=action, reward=reward, truncated=truncated,
        policy_state=policy_state, score=score,
        first_done=tf.logical_or(carry.first_done, done),
        first_score=compiled_ops.where(ended_first, score, carry.first_score),
        bad=rollout_env.first_failure(carry.bad, action, observ, reward))


# The loop state of a rollout; `env` is the batch's (`tools.rollout_env`).
_Carry = collections.namedtuple('_Carry', (
    'index, env, observ, done, action, reward, truncated, policy_state, '
    'score, first_done, first_score, bad'))
