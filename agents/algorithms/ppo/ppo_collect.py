"""PPO's data collection on in-graph tasks, many steps in one compiled call."""

import collections

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import compiled_rollout
from agents.algorithms.ppo import losses

# One step of an agent as the episode buffers store it.
Transition = collections.namedtuple(
    'Transition', 'observ, action, policy_params, reward, bootstrap')

# The loop state of a compiled collection.
_Carry = collections.namedtuple('_Carry', (
    'index, counter, state, steps, observ, done, action, reward, truncated, '
    'policy_params, '
    'observ_statistics, reward_statistics, running_return, episodes, '
    'episode_length, memory, memory_length, memory_index, memory_steps, '
    'score, ended, last_score, score_sum, length_sum, count, bad'))



class CollectMixin:
    """Training steps of PPO on an in-graph task, compiled with XLA.

    `PPO` inherits these methods; they read the networks, normalizers,
    episode buffers and memory that its constructor creates.
    """

    def compiles_collection(self, batch_env):
        """Whether `collect` can run on a batch: an in-graph task with the
        pure `transition` and `restart`, a feed-forward network and whole
        episodes (no `rollout_length`)."""
        return bool(
            hasattr(batch_env, 'transition') and hasattr(batch_env, 'restart')
            and self._last_state is None and not self._config.rollout_length)

    def collect(self, num_steps, steps_left):
        """Train on the in-graph task for up to `num_steps` batch steps.

        One XLA-compiled call steps every agent: it begins episodes where the
        last ended, samples actions (stateless random ops keyed by the
        sample seed and the global step, as `perform` does), steps the task,
        updates the normalizers, appends the transitions to the episode
        buffers, and moves ended episodes into the memory, exactly as the
        one-step path of `tools.simulate` with `perform`, `experience` and
        `end_episode` does. It stops after the step that fills the memory,
        and the update then trains in the same session call (outside the
        compiled call), so the next step acts with the new weights as on
        the one-step path.

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
        carry = self._initial_carry()
        with tf.name_scope('compiled_collect'):
            carry = tf.function(
                lambda carry: self._collect_loop(
                    carry, limit, first_key, num_steps),
                jit_compile=True, autograph=False)(carry)
            writes = self._write_carry(carry)
        with tf.control_dependencies(writes):
            # The update logs its summaries when this run logs.
            mark_log = self._log_pending.assign(
                tf.logical_or(self._log_pending, self._should_log))
        with tf.control_dependencies([mark_log]):
            full = self._memory_full(
                self._memory_index.read_value(),
                self._memory_steps.read_value())
            training = tf.cond(
                tf.logical_and(full, self._is_training), self._training, str)
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

    def _initial_carry(self):
        """The variables as the loop's initial state."""
        batch_env = self._batch_env
        episodes, episode_length = self._episodes.variables
        memory, memory_length = self._memory.variables
        zeros = tf.zeros([self._num_agents], tf.float32)
        return _Carry(
            index=tf.constant(0), counter=batch_env.counter.read_value(),
            state=batch_env.state.read_value(),
            steps=batch_env.steps.read_value(),
            observ=batch_env.observ.read_value(),
            done=batch_env.done.read_value(),
            action=batch_env.action.read_value(),
            reward=batch_env.reward.read_value(),
            truncated=batch_env.truncated.read_value(),
            policy_params=tuple(
                variable.read_value()
                for variable in tools.nested.flatten(self._last_policy)),
            observ_statistics=self._observ_filter.read(),
            reward_statistics=self._reward_filter.read(),
            running_return=self._running_return.read_value(),
            episodes=tuple(buffer_.read_value() for buffer_ in episodes),
            episode_length=episode_length.read_value(),
            memory=tuple(buffer_.read_value() for buffer_ in memory),
            memory_length=memory_length.read_value(),
            memory_index=self._memory_index.read_value(),
            memory_steps=self._memory_steps.read_value(),
            score=zeros, ended=tf.zeros([self._num_agents], tf.bool),
            last_score=zeros, score_sum=tf.constant(0.0),
            length_sum=tf.constant(0.0), count=tf.constant(0),
            bad=compiled_rollout.no_failure(
                batch_env.observ, batch_env.action))

    def _collect_loop(self, carry, limit, first_key, num_steps):
        """The compiled loop of steps, until the limit or a full memory."""

        def _running(carry):
            full = self._memory_full(carry.memory_index, carry.memory_steps)
            return tf.reduce_all(tf.stack([
                carry.index < limit, tf.logical_not(full),
                tf.logical_not(carry.bad.failed)]))

        def _step(carry):
            key = tf.stack([
                tf.constant(self._sample_seed, tf.int64),
                first_key + tf.cast(carry.index * self._num_agents,
                                    tf.int64)])
            return [self._collect_step(carry, key)]

        return tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]

    def _collect_step(self, carry, key):
        """One step of all agents, as a pure function of the loop state."""
        batch_env = self._batch_env
        config = self._config
        begin = carry.done
        counter, state, steps, fresh = batch_env.restart(
            batch_env.seed.read_value(), carry.counter, carry.state,
            carry.steps, begin)
        observ = tf.where(begin, fresh, carry.observ)
        zeros = tf.zeros_like(carry.score)
        score = tf.where(begin, zeros, carry.score)
        running_return = tf.where(begin, zeros, carry.running_return)
        episode_length = tf.where(
            begin, tf.zeros_like(carry.episode_length), carry.episode_length)
        # Act.
        output = self._network(
            self._observ_filter.transform(
                observ, carry.observ_statistics)[:, None],
            tf.ones([self._num_agents], tf.int32))
        action = tf.cast(
            output.policy.sample(key=key)[:, 0], carry.action.dtype)
        policy_params = tools.nested.map(
            lambda param: param[:, 0], losses.policy_params(output.policy))
        state, steps, nextob, reward, done, truncated = batch_env.transition(
            state, steps, action)
        # Experience: normalizers first, then the transition they scale.
        observ_statistics = self._observ_filter.merged(
            carry.observ_statistics, observ)
        if config.reward_normalization == 'return':
            running_return = running_return * config.discount + reward
            reward_statistics = self._reward_filter.merged(
                carry.reward_statistics, running_return)
        else:
            reward_statistics = self._reward_filter.merged(
                carry.reward_statistics, reward)
        bootstrap = zeros
        if config.bootstrap_truncated:
            value = self._network(
                self._observ_filter.transform(
                    nextob, observ_statistics)[:, None],
                tf.ones([self._num_agents], tf.int32)).value[:, 0]
            bootstrap = tf.where(
                truncated, config.discount * tf.stop_gradient(value), zeros)
        transition = Transition(
            self._observ_filter.transform(observ, observ_statistics), action,
            policy_params, reward, bootstrap)
        indices = tf.stack(
            [tf.range(self._num_agents), episode_length], axis=1)
        episodes = tuple(
            tf.tensor_scatter_nd_update(buffer_, indices, tf.cast(
                value, buffer_.dtype))
            for buffer_, value in zip(
                carry.episodes, tf.nest.flatten(transition)))
        episode_length = episode_length + 1
        score = score + reward
        # End episodes: into the memory while it has rows left, in agent
        # order as `end_episode` stores them.
        rank = tf.cumsum(tf.cast(done, tf.int32), exclusive=True)
        capacity = self._config.update_every
        stored = tf.logical_and(done, rank < capacity - carry.memory_index)
        row = carry.memory_index + rank
        select = tf.logical_and(
            stored[None, :],
            tf.equal(row[None, :], tf.range(capacity)[:, None]))
        written = tf.reduce_any(select, axis=1)
        source = tf.argmax(tf.cast(select, tf.int32), axis=1,
                           output_type=tf.int32)
        memory = tuple(
            tf.where(written, tf.gather(buffer_, source), old)
            for buffer_, old in zip(episodes, carry.memory))
        memory_length = tf.where(
            written, tf.gather(episode_length, source), carry.memory_length)
        stored_count = tf.reduce_sum(tf.cast(stored, tf.int32))
        stored_steps = tf.reduce_sum(
            tf.where(stored, episode_length, tf.zeros_like(episode_length)))
        done_float = tf.cast(done, tf.float32)
        return _Carry(
            index=carry.index + 1, counter=counter, state=state, steps=steps,
            observ=nextob, done=done, action=action, reward=reward,
            truncated=truncated,
            policy_params=tools.nested.flatten(policy_params),
            observ_statistics=observ_statistics,
            reward_statistics=reward_statistics,
            running_return=running_return, episodes=episodes,
            episode_length=episode_length, memory=memory,
            memory_length=memory_length,
            memory_index=carry.memory_index + stored_count,
            memory_steps=carry.memory_steps + stored_steps,
            score=score, ended=tf.logical_or(carry.ended, done),
            last_score=tf.where(done, score, carry.last_score),
            score_sum=carry.score_sum + tf.reduce_sum(score * done_float),
            length_sum=carry.length_sum + tf.reduce_sum(
                tf.cast(episode_length, tf.float32) * done_float),
            count=carry.count + tf.reduce_sum(tf.cast(done, tf.int32)),
            bad=compiled_rollout.first_failure(
                carry.bad, action, nextob, reward))

    def _memory_full(self, memory_index, memory_steps):
        """Whether the memory holds enough for an update."""
        full = memory_index >= self._config.update_every
        update_steps = self._config.update_steps
        if update_steps:
            full = tf.logical_or(full, memory_steps >= int(update_steps))
        return full

    def _write_carry(self, carry):
        """Assign the loop's final state to the variables, once checked."""
        batch_env = self._batch_env
        checks = compiled_rollout.failure_checks(carry.bad)
        episodes, episode_length = self._episodes.variables
        memory, memory_length = self._memory.variables
        pairs = [
            (batch_env.counter, carry.counter), (batch_env.state, carry.state),
            (batch_env.steps, carry.steps), (batch_env.observ, carry.observ),
            (batch_env.done, carry.done), (batch_env.action, carry.action),
            (batch_env.reward, carry.reward),
            (batch_env.truncated, carry.truncated),
            (self._last_action, carry.action),
            (self._running_return, carry.running_return),
            (episode_length, carry.episode_length),
            (memory_length, carry.memory_length),
            (self._memory_index, carry.memory_index),
            (self._memory_steps, carry.memory_steps)]
        pairs += list(zip(episodes, carry.episodes))
        pairs += list(zip(memory, carry.memory))
        pairs += list(zip(
            tools.nested.flatten(self._last_policy), carry.policy_params))
        with tf.control_dependencies(checks):
            writes = [variable.assign(value) for variable, value in pairs]
            writes.append(self._observ_filter.assign(carry.observ_statistics))
            writes.append(self._reward_filter.assign(carry.reward_statistics))
        return writes
