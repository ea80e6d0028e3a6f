"""PPO's data collection, many steps in one session call.

On in-graph tasks the steps run in one XLA-compiled loop; on environments
behind the numpy_function bridge a plain `tf.while_loop` acts and steps, and
one XLA-compiled call replays its steps through PPO's step
(`ppo_bookkeeping`). `tools.rollout_env` steps the environments.
"""

import collections
import functools

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import rollout_env
from agents.tools import step_records
from agents.tools import temporary_scope
from agents.algorithms.ppo import utility
from agents.algorithms.ppo import ppo_bookkeeping
from agents.parts import distributions
from agents.tools import compiled_ops

# The state of the plain loop over environments behind the bridge (see
# `_bridge_collect`).
_Acted = collections.namedtuple('_Acted', (
    'index, env, observ, done, state, observ_statistics, counts, records'))


class CollectMixin(ppo_bookkeeping.BookkeepingMixin):
    """Training steps of PPO, many in one session call."""

    def compiles_collection(self, batch_env):
        """Whether `collect` can run on a batch: an in-graph task or a
        `tools.InGraphBatchEnv` (see `tools.rollout_env`)."""
        return rollout_env.rollout_env(batch_env) is not None

    def collect(self, num_steps, steps_left):
        """Train on the batch for up to `num_steps` batch steps.

        One loop steps every agent: it begins episodes where the last ended,
        samples actions keyed by the global step (see `_step_key`), steps
        the environments and takes PPO's step (`_bookkeep`). It stops after
        the step that fills the memory; the update then trains in the same
        session call, so the next step acts with the new weights. Episodes
        left pending go into the memory after the update; should they fill
        it again, the next call trains before its first step. A failed
        environment or a value that is not finite fails the session run
        (`rollout_env.failure_checks`), and no variable is written.

        Args:
          num_steps: Python int, the most batch steps of a call.
          steps_left: int32 tensor, the batch steps left in the phase; the
              call makes no more.

        Returns:
          Tuple of the int32 number of batch steps made, the bool tensor of
          the agents whose episode ended in the call, the float32 scores of
          their last ended episodes, and the summary of the call (the mean
          score and length of the episodes that ended, and the update's).
        """
        limit = tf.minimum(tf.cast(steps_left, tf.int32), num_steps)
        first_key = tf.cast(self._step, tf.int64)
        env = rollout_env.rollout_env(self._batch_env)
        with temporary_scope.temporary_scope('collect'):
            tally = self._episode_tally()
        # A resumed run goes on scoring its running episodes.
        tools.keep_for_resume(tally)
        carry = self._initial_carry(env, tally)
        with tf.name_scope('collect'):
            # The seed is an input of the loop rather than a constant in it,
            # so that the seeds of a sweep share one compiled program.
            loop = functools.partial(
                self._collect_loop if env.jit_compile else
                self._bridge_collect, env=env, limit=limit,
                first_key=first_key, num_steps=num_steps,
                sample_seed=tf.constant(self._sample_seed, tf.int64))
            if env.jit_compile:
                loop = compiled_ops.compiled_function(loop)
            carry = loop(carry)
            writes = self._write_carry(env, carry, tally)
        with tf.control_dependencies(writes):
            training = self._train_where_due(carry)
        with tf.control_dependencies([training]):
            made = tf.identity(carry.index)
            ended = tf.identity(carry.ended)
            last_score = tf.identity(carry.last_score)

        def _summary():
            count = tf.cast(carry.count, tf.float32)
            return tf.summary.merge([
                tf.summary.scalar('mean_score', carry.score_sum / count),
                tf.summary.scalar('mean_length', carry.length_sum / count)])

        summary = tf.cond(
            tf.logical_and(self._should_log, carry.count > 0), _summary, str)
        return made, ended, last_score, tf.summary.merge(
            [summary, training])

    def _episode_tally(self):
        """Variables of the score and length of each agent's running
        episode, kept from call to call (a row may hold only a segment)."""
        return (
            tf.Variable(
                tf.zeros([self._num_agents], tf.float32), trainable=False,
                name='score'),
            tf.Variable(
                tf.zeros([self._num_agents], tf.int32), trainable=False,
                name='length'))

    def _initial_carry(self, env, tally):
        """The variables as the loop's initial state."""
        score, length = tally
        return self._read_state()._replace(
            env=env.initial(), score=score.read_value(),
            episode_steps=length.read_value())

    def _read_state(self):
        """PPO's `State` in its variables, without env state or scores."""
        batch_env = self._batch_env
        zeros = tf.zeros([self._num_agents], tf.float32)
        return ppo_bookkeeping.State(
            index=tf.constant(0), env=(),
            observ_statistics=self._observ_filter.read(),
            reward_statistics=self._reward_filter.read(),
            pending=tf.zeros([self._num_agents], tf.bool),
            score=zeros, episode_steps=tf.zeros([self._num_agents], tf.int32),
            ended=tf.zeros([self._num_agents], tf.bool),
            last_score=zeros, score_sum=tf.constant(0.0),
            length_sum=tf.constant(0.0), count=tf.constant(0),
            **self._read_fields(self._batch_variables()),
            **self._read_fields(self._state_variables()),
            bad=rollout_env.no_failure(
                batch_env.observ, batch_env.action))

    def _collect_loop(
            self, carry, env, limit, first_key, num_steps, sample_seed):
        """The loop of steps, until the limit or a full memory."""

        def _running(carry):
            return self._running(
                carry.index, limit, ppo_bookkeeping.counts_of(carry),
                carry.bad)

        def _step(carry):
            key = self._step_key(sample_seed, first_key, carry.index)
            return [self._collect_step(env, carry, key)]

        return tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]

    def _running(self, index, limit, counts, bad):
        """Whether a loop goes on: below the limit, memory not full, all
        values finite."""
        full = self._memory_full(counts.memory_index, counts.memory_steps)
        return tf.reduce_all(tf.stack([
            index < limit, tf.logical_not(full),
            tf.logical_not(bad.failed)]))

    def _step_key(self, sample_seed, first_key, index):
        """The key of a step's samples: the sample seed and the global step
        of its first agent (`perform`'s key)."""
        return tf.stack([
            sample_seed,
            first_key + tf.cast(index * self._num_agents, tf.int64)])

    def _collect_step(self, env, carry, key):
        """One step of all agents, as a function of the loop state."""
        env_state, observ = env.begin(carry.env, carry.done, carry.observ)
        action, policy_params, state = self._act(
            observ, carry.observ_statistics, key, carry.action.dtype,
            _begun(carry.state, carry.done))
        env_state, nextob, reward, done, truncated, restarted = env.step(
            env_state, action)
        carry = self._bookkeep(carry, ppo_bookkeeping.Step(
            observ, action, policy_params, state, nextob, reward, done,
            truncated, restarted))
        return carry._replace(env=env_state, bad=rollout_env.first_failure(
            carry.bad, action, nextob, reward))

    def _act(self, observ, observ_statistics, key, dtype, state, noise=None):
        """The sampled actions, their policy's parameters and the recurrent
        state after acting (`()` without).

        Our distributions sample with `noise` (see `_noise_of_steps`) where
        given; others draw from the key.
        """
        output = self._network(
            self._observ_filter.transform(
                observ, observ_statistics)[:, None],
            tf.ones([self._num_agents], tf.int32),
            ppo_bookkeeping.network_state(state))
        if noise is not None and type(output.policy) in (
                distributions.DiagonalGaussian, distributions.Categorical):
            sample = output.policy.sample(noise=noise)
        else:
            sample = output.policy.sample(key=key)
        action = tf.cast(sample[:, 0], dtype)
        policy_params = tuple(
            param[:, 0] for param in utility.policy_params(output.policy))
        state = () if output.state is None else output.state
        return action, policy_params, state

    def _bridge_collect(
            self, carry, env, limit, first_key, num_steps, sample_seed):
        """The loop on environments behind the numpy_function bridge.

        A plain graph loop pays 1-3 us for every node of every step, so it
        only acts, steps the environments and counts what the memory would
        hold (to stop where it is full), recording each step as one packed
        row; one XLA-compiled loop then replays the rows through
        `_bookkeep`. The noise of the samples comes from one compiled call
        before the loop. Takes and returns what `_collect_loop` does.
        """
        specs = step_records.specs(ppo_bookkeeping.Step(
            observ=carry.observ, action=carry.action,
            policy_params=tuple(carry.policy_params), state=carry.state,
            nextob=carry.observ,
            reward=carry.reward, done=carry.done, truncated=carry.truncated,
            restarted=carry.done))
        noise = self._noise_of_steps(sample_seed, first_key, num_steps)
        acted = _Acted(
            index=carry.index, env=carry.env, observ=carry.observ,
            done=carry.done, state=carry.state,
            observ_statistics=carry.observ_statistics,
            counts=ppo_bookkeeping.counts_of(carry),
            records=tf.TensorArray(
                tf.float32, size=num_steps, element_shape=[
                    self._num_agents, step_records.width(specs)]))

        def _running(acted):
            return self._running(acted.index, limit, acted.counts, carry.bad)

        def _step(acted):
            begin = acted.done
            env_state, observ = env.begin(acted.env, begin, acted.observ)
            action, policy_params, state = self._act(
                observ, acted.observ_statistics,
                self._step_key(sample_seed, first_key, acted.index),
                carry.action.dtype, _begun(acted.state, begin),
                tf.gather(noise, acted.index))
            env_state, nextob, reward, done, truncated, restarted = (
                env.step(env_state, action))
            counts, _ = self._count(acted.counts, begin, done, restarted)
            step = ppo_bookkeeping.Step(
                observ, action, policy_params, state, nextob, reward, done,
                truncated, restarted)
            # The policy acts on the statistics of the steps before; the
            # replay merges them again (compiled, it costs next to nothing)
            # rather than record them with every row.
            return [_Acted(
                index=acted.index + 1, env=env_state, observ=nextob,
                done=done, state=state,
                observ_statistics=self._observ_filter.merged(
                    acted.observ_statistics, observ),
                counts=counts, records=acted.records.write(
                    acted.index, step_records.pack(step)))]

        acted = tf.while_loop(
            _running, _step, [acted], maximum_iterations=num_steps)[0]
        made = acted.index
        # Rows past the steps made are zeros, so that the replay's input
        # has a static shape and compiles once.
        rows = acted.records.gather(tf.range(made))
        rows = tf.reshape(
            tf.pad(rows, [[0, num_steps - made], [0, 0], [0, 0]]),
            [num_steps, self._num_agents, step_records.width(specs)])

        def _replay(carry, rows, made):
            return self._replay(carry, rows, made, specs, num_steps)

        replayed = compiled_ops.compiled_function(_replay)(carry, rows, made)
        # The observations, flags and loop state of the batch are those of
        # the plain loop (the rows hold observations as float32).
        return replayed._replace(
            env=acted.env, observ=acted.observ, done=acted.done)

    def _replay(self, carry, rows, made, specs, num_steps):
        """PPO's step over the packed rows of the steps a loop made."""

        def _step(carry):
            step = step_records.unpack(tf.gather(rows, carry.index), specs)
            return [self._bookkeep(carry, step)]

        return tf.while_loop(
            lambda carry: carry.index < made, _step, [carry],
            maximum_iterations=num_steps)[0]

    def _noise_of_steps(self, sample_seed, first_key, num_steps):
        """float32 `[num_steps, ...]`: for each step's key the noise that
        `sample(key=...)` draws, all drawn in one compiled call."""
        if self._discrete:
            policy = distributions.Categorical
            shape = [self._num_agents] + self._last_policy[0].shape[
                1:].as_list()
        else:
            policy = distributions.DiagonalGaussian
            shape = [self._num_agents, 1] + self._last_action.shape[
                1:].as_list()

        def _draw(sample_seed, first_key):
            def _step(index, noise):
                key = self._step_key(sample_seed, first_key, index)
                return index + 1, noise.write(index, policy.noise(key, shape))

            noise = tf.TensorArray(
                tf.float32, size=num_steps, element_shape=shape)
            return tf.while_loop(
                lambda index, _: index < num_steps, _step,
                [tf.constant(0), noise])[1].stack()

        return compiled_ops.compiled_function(_draw)(
            sample_seed, first_key)

    def _batch_variables(self):
        """The batch's variables by the `State` field they hold."""
        batch_env = self._batch_env
        return dict(
            observ=batch_env.observ, done=batch_env.done,
            action=batch_env.action, reward=batch_env.reward,
            truncated=batch_env.truncated)

    def _state_variables(self):
        """PPO's variables by the `State` field they hold between calls."""
        episodes, episode_length = self._episodes.variables
        memory, memory_length = self._memory.variables
        return dict(
            policy_params=tuple(tools.nested.flatten(self._last_policy)),
            state=() if self._last_state is None else self._last_state,
            running_return=self._running_return, episodes=episodes,
            episode_length=episode_length, rollout_steps=self._rollout_steps,
            memory=memory, memory_length=memory_length,
            memory_index=self._memory_index, memory_steps=self._memory_steps)

    @staticmethod
    def _read_fields(variables):
        """The values of a dict of (nested) variables."""
        return {
            name: tf.nest.map_structure(
                lambda variable: variable.read_value(), nested)
            for name, nested in variables.items()}

    @staticmethod
    def _assign_fields(variables, values, before=None):
        """The assign ops of the fields of `values` to a dict of variables,
        but of the values that are the very tensors of `before`."""
        writes = []
        for name, nested in variables.items():
            unchanged = () if before is None else tf.nest.flatten(
                getattr(before, name))
            for variable, value in zip(
                    tf.nest.flatten(nested),
                    tf.nest.flatten(getattr(values, name))):
                if not any(value is old for old in unchanged):
                    writes.append(variable.assign(value))
        return writes

    def _write_carry(self, env, carry, tally):
        """Assign the loop's final state to the variables, once checked."""
        checks = rollout_env.failure_checks(carry.bad)
        score, length = tally
        with tf.control_dependencies(checks):
            writes = self._assign_fields(self._batch_variables(), carry)
            writes += [
                score.assign(carry.score), length.assign(carry.episode_steps)]
            writes += env.assign(carry.env)
            writes += self._write_state(carry)
        return writes

    def _write_state(self, carry, before=None):
        """The assign operations of PPO's `State` to its variables; none of
        the fields that the step passed on from the `State` read
        (`before`)."""
        writes = self._assign_fields(self._state_variables(), carry, before)
        # The environments' action dtype may be wider than the policy's
        # (float64 of MuJoCo tasks).
        writes.append(self._last_action.assign(
            tf.cast(carry.action, self._last_action.dtype)))
        writes.append(self._observ_filter.assign(carry.observ_statistics))
        writes.append(self._reward_filter.assign(carry.reward_statistics))
        return writes


def _begun(state, begin):
    """The recurrent state with zeros for the agents whose episode begins."""
    return tf.nest.map_structure(
        lambda tensor: compiled_ops.where(begin, tf.zeros_like(tensor), tensor),
        state)
