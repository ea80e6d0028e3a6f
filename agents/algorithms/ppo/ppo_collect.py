"""PPO's data collection, many steps in one session call.

On in-graph tasks the steps run in one XLA-compiled call; on Python and C
environments behind the numpy_function bridge (gymnasium in process, worker
processes, EnvPool) in one plain `tf.while_loop` of graph ops. The
bookkeeping of PPO is the same for both; `tools.rollout_env` steps the
environments.
"""

import collections
import functools

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import compiled_rollout
from agents.tools import rollout_env
from agents.tools import temporary_scope
from agents.algorithms.ppo import losses

# One step of an agent as the episode buffers store it.
Transition = collections.namedtuple(
    'Transition', 'observ, action, policy_params, reward, bootstrap')

# The loop state of a compiled collection.
_Carry = collections.namedtuple('_Carry', (
    'index, env, observ, done, action, reward, truncated, '
    'policy_params, '
    'observ_statistics, reward_statistics, running_return, episodes, '
    'episode_length, rollout_steps, memory, memory_length, memory_index, '
    'memory_steps, pending, score, episode_steps, ended, last_score, '
    'score_sum, length_sum, count, bad'))

# The update memory as the loop carries it: the buffers, the rows' lengths,
# the rows in use and the steps they hold.
_Memory = collections.namedtuple(
    '_Memory', 'memory, memory_length, memory_index, memory_steps')



class CollectMixin:
    """Training steps of PPO, many in one session call.

    `PPO` inherits these methods; they read the networks, normalizers,
    episode buffers and memory that its constructor creates.
    """

    def compiles_collection(self, batch_env):
        """Whether `collect` can run on a batch.

        It can on an in-graph task with the pure `transition` and `restart`
        (compiled with XLA) and on a `tools.InGraphBatchEnv` (plain graph
        ops around its numpy_function), with a feed-forward network.
        """
        return bool(
            rollout_env.rollout_env(batch_env) is not None
            and self._last_state is None)

    def collect(self, num_steps, steps_left):
        """Train on the batch for up to `num_steps` batch steps.

        One loop steps every agent: it begins episodes where the last ended,
        samples actions (stateless random ops keyed by the sample seed and
        the global step, as `perform` does), steps the environments,
        updates the normalizers, appends the transitions to the episode
        buffers, hands over complete rollouts (with `rollout_length`) and
        moves ended episodes into the memory, exactly as the one-step path
        of `tools.simulate` with `perform`, `experience` and `end_episode`
        does. It stops after the step that fills the memory, and the update
        then trains in the same session call (outside the loop), so the
        next step acts with the new weights as on the one-step path. Where
        the rollouts of a step filled the memory, the one-step path trains
        in `experience` and then stores the step's ended episodes: here
        they wait as pending until the update ran and then go into the
        memory; should they fill it again, the next call trains before its
        first step. On an in-graph task the loop is one XLA-compiled call;
        on environments behind the numpy_function bridge it is a plain
        `tf.while_loop` that calls into Python at every step (and at the
        resets of steps where episodes begin). An environment that fails
        or a value that is not finite fails the session run as on the
        one-step path, and no variable is written.

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
                self._collect_loop, env=env, limit=limit,
                first_key=first_key, num_steps=num_steps,
                sample_seed=tf.constant(self._sample_seed, tf.int64))
            if env.jit_compile:
                loop = tf.function(loop, jit_compile=True, autograph=False)
            carry = loop(carry)
            writes = self._write_carry(env, carry, tally)
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
            store_pending = self._store_pending(carry)
        with tf.control_dependencies([store_pending]):
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
        """Variables of the score and length of each agent's running episode.

        The episode buffers hold a rollout's segment of an episode with
        `rollout_length`, so the loop keeps the scores and lengths from
        call to call, as `tools.simulate` keeps them.

        Returns:
          Tuple of the float32 score and the int32 length variables.
        """
        return (
            tf.Variable(
                tf.zeros([self._num_agents], tf.float32), trainable=False,
                name='score'),
            tf.Variable(
                tf.zeros([self._num_agents], tf.int32), trainable=False,
                name='length'))

    def _initial_carry(self, env, tally):
        """The variables as the loop's initial state."""
        batch_env = self._batch_env
        episodes, episode_length = self._episodes.variables
        memory, memory_length = self._memory.variables
        score, length = tally
        zeros = tf.zeros([self._num_agents], tf.float32)
        return _Carry(
            index=tf.constant(0), env=env.initial(),
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
            rollout_steps=self._rollout_steps.read_value(),
            memory=tuple(buffer_.read_value() for buffer_ in memory),
            memory_length=memory_length.read_value(),
            memory_index=self._memory_index.read_value(),
            memory_steps=self._memory_steps.read_value(),
            pending=tf.zeros([self._num_agents], tf.bool),
            score=score.read_value(), episode_steps=length.read_value(),
            ended=tf.zeros([self._num_agents], tf.bool),
            last_score=zeros, score_sum=tf.constant(0.0),
            length_sum=tf.constant(0.0), count=tf.constant(0),
            bad=compiled_rollout.no_failure(
                batch_env.observ, batch_env.action))

    def _collect_loop(
            self, carry, env, limit, first_key, num_steps, sample_seed):
        """The loop of steps, until the limit or a full memory."""

        def _running(carry):
            full = self._memory_full(carry.memory_index, carry.memory_steps)
            return tf.reduce_all(tf.stack([
                carry.index < limit, tf.logical_not(full),
                tf.logical_not(carry.bad.failed)]))

        def _step(carry):
            key = tf.stack([
                sample_seed,
                first_key + tf.cast(carry.index * self._num_agents,
                                    tf.int64)])
            return [self._collect_step(env, carry, key)]

        return tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]

    def _collect_step(self, env, carry, key):
        """One step of all agents, as a function of the loop state."""
        config = self._config
        begin = carry.done
        env_state, observ = env.begin(carry.env, begin, carry.observ)
        zeros = tf.zeros_like(carry.score)
        score = tf.where(begin, zeros, carry.score)
        running_return = tf.where(begin, zeros, carry.running_return)
        episode_length = tf.where(
            begin, tf.zeros_like(carry.episode_length), carry.episode_length)
        episode_steps = tf.where(
            begin, tf.zeros_like(carry.episode_steps), carry.episode_steps)
        # Act.
        output = self._network(
            self._observ_filter.transform(
                observ, carry.observ_statistics)[:, None],
            tf.ones([self._num_agents], tf.int32))
        action = tf.cast(
            output.policy.sample(key=key)[:, 0], carry.action.dtype)
        policy_params = tools.nested.map(
            lambda param: param[:, 0], losses.policy_params(output.policy))
        env_state, nextob, reward, done, truncated, restarted = env.step(
            env_state, action)
        # An episode interrupted by a failed environment has no result: it
        # is neither stored nor scored, and the next step begins anew.
        ended = tf.logical_and(done, tf.logical_not(restarted))
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
        cut, rollout_steps = self._rollout_cut(carry.rollout_steps, done)
        transition = Transition(
            self._observ_filter.transform(observ, observ_statistics), action,
            policy_params, reward,
            self._bootstrap(nextob, observ_statistics, truncated, cut))
        indices = tf.stack(
            [tf.range(self._num_agents), episode_length], axis=1)
        episodes = tuple(
            tf.tensor_scatter_nd_update(buffer_, indices, tf.cast(
                value, buffer_.dtype))
            for buffer_, value in zip(
                carry.episodes, tf.nest.flatten(transition)))
        episode_length = episode_length + 1
        episode_steps = episode_steps + 1
        score = score + reward
        # The rollouts go into the memory first, as `experience` hands them
        # over before `end_episode` stores the step's ended episodes; their
        # rows begin new segments.
        memory = self._store(_Memory(
            carry.memory, carry.memory_length, carry.memory_index,
            carry.memory_steps), episodes, episode_length, cut)
        episode_length_after = tf.where(
            cut, tf.zeros_like(episode_length), episode_length)
        # Where the rollouts filled the memory, the one-step path trains
        # before it stores the ended episodes: they wait for the update
        # that follows the loop.
        pending = tf.logical_and(ended, self._memory_full(
            memory.memory_index, memory.memory_steps))
        memory = self._store(
            memory, episodes, episode_length,
            tf.logical_and(ended, tf.logical_not(pending)))
        ended_float = tf.cast(ended, tf.float32)
        return _Carry(
            index=carry.index + 1, env=env_state,
            observ=nextob, done=done, action=action, reward=reward,
            truncated=truncated,
            policy_params=tools.nested.flatten(policy_params),
            observ_statistics=observ_statistics,
            reward_statistics=reward_statistics,
            running_return=running_return, episodes=episodes,
            episode_length=episode_length_after,
            rollout_steps=rollout_steps, memory=memory.memory,
            memory_length=memory.memory_length,
            memory_index=memory.memory_index,
            memory_steps=memory.memory_steps, pending=pending,
            score=score, episode_steps=episode_steps,
            ended=tf.logical_or(carry.ended, ended),
            last_score=tf.where(ended, score, carry.last_score),
            score_sum=carry.score_sum + tf.reduce_sum(score * ended_float),
            length_sum=carry.length_sum + tf.reduce_sum(
                tf.cast(episode_steps, tf.float32) * ended_float),
            count=carry.count + tf.reduce_sum(tf.cast(ended, tf.int32)),
            bad=compiled_rollout.first_failure(
                carry.bad, action, nextob, reward))

    def _rollout_cut(self, rollout_steps, done):
        """Count the agents' steps as `_count_rollout_steps` does.

        Args:
          rollout_steps: int32 steps of each agent since its last rollout.
          done: bool flags of the episodes that ended in the step.

        Returns:
          Tuple of the bool flags of the agents whose rollout ends with the
          step while their episode goes on (none without `rollout_length`)
          and the counts after the step.
        """
        rollout_length = self._config.rollout_length
        if not rollout_length:
            return tf.zeros_like(done), rollout_steps
        steps = rollout_steps + 1
        complete = steps >= int(rollout_length)
        return (
            tf.logical_and(complete, tf.logical_not(done)),
            tf.where(complete, tf.zeros_like(steps), steps))

    def _bootstrap(self, nextob, observ_statistics, truncated, cut):
        """The discounted value of the next observation, as
        `_bootstrap_value` gives it: where a time limit (with
        `bootstrap_truncated`) or a rollout cut the return."""
        zeros = tf.zeros([self._num_agents], tf.float32)
        if not (self._config.bootstrap_truncated or
                self._config.rollout_length):
            return zeros
        bootstrap = cut
        if self._config.bootstrap_truncated:
            bootstrap = tf.logical_or(bootstrap, truncated)

        def _value():
            value = self._network(
                self._observ_filter.transform(
                    nextob, observ_statistics)[:, None],
                tf.ones([self._num_agents], tf.int32)).value[:, 0]
            return tf.where(
                bootstrap, self._config.discount * tf.stop_gradient(value),
                zeros)

        # Only steps that cut a return run the value network, as on the
        # one-step path.
        return tf.cond(tf.reduce_any(bootstrap), _value, lambda: zeros)

    def _store(self, memory, episodes, episode_length, mask):
        """Move the rows of some agents into the memory.

        Into its next rows while it has rows left, in agent order, as
        `_define_end_episode` stores them; the others are dropped.

        Args:
          memory: `_Memory` of tensors.
          episodes: Tuple of the episode buffers, flat.
          episode_length: int32 lengths of the agents' rows.
          mask: bool flags of the agents whose rows to store.

        Returns:
          `_Memory` after the store.
        """
        rank = tf.cumsum(tf.cast(mask, tf.int32), exclusive=True)
        capacity = self._config.update_every
        stored = tf.logical_and(mask, rank < capacity - memory.memory_index)
        row = memory.memory_index + rank
        select = tf.logical_and(
            stored[None, :],
            tf.equal(row[None, :], tf.range(capacity)[:, None]))
        written = tf.reduce_any(select, axis=1)
        source = tf.argmax(tf.cast(select, tf.int32), axis=1,
                           output_type=tf.int32)
        old = tuple(memory.memory) + (memory.memory_length,)

        def _write():
            return tuple(
                tf.where(written, tf.gather(buffer_, source), old_buffer)
                for buffer_, old_buffer in zip(
                    episodes + (episode_length,), old))

        # Most steps store nothing: they pass the memory on without
        # copying it (a plain graph loop would copy it at every step).
        new = tf.cond(tf.reduce_any(stored), _write, lambda: old)
        stored_steps = tf.where(
            stored, episode_length, tf.zeros_like(episode_length))
        return _Memory(
            memory=tuple(new[:-1]), memory_length=new[-1],
            memory_index=memory.memory_index + tf.reduce_sum(
                tf.cast(stored, tf.int32)),
            memory_steps=memory.memory_steps + tf.reduce_sum(stored_steps))

    def _store_pending(self, carry):
        """Store the episodes that the loop left pending, after the update.

        Returns:
          Bool tensor, available once the memory's variables hold them.
        """
        memory, memory_length = self._memory.variables
        variables = memory + (
            memory_length, self._memory_index, self._memory_steps)

        def _define():
            current = _Memory(
                memory=tuple(buffer_.read_value() for buffer_ in memory),
                memory_length=memory_length.read_value(),
                memory_index=self._memory_index.read_value(),
                memory_steps=self._memory_steps.read_value())
            stored = self._store(
                current, carry.episodes, carry.episode_length, carry.pending)
            values = stored.memory + (
                stored.memory_length, stored.memory_index,
                stored.memory_steps)
            writes = [
                variable.assign(value)
                for variable, value in zip(variables, values)]
            with tf.control_dependencies(writes):
                return tf.constant(True)

        # Only a call whose rollouts filled the memory leaves episodes
        # pending.
        return tf.cond(
            tf.reduce_any(carry.pending), _define,
            lambda: tf.constant(False))

    def _memory_full(self, memory_index, memory_steps):
        """Whether the memory holds enough for an update."""
        full = memory_index >= self._config.update_every
        update_steps = self._config.update_steps
        if update_steps:
            full = tf.logical_or(full, memory_steps >= int(update_steps))
        return full

    def _write_carry(self, env, carry, tally):
        """Assign the loop's final state to the variables, once checked."""
        batch_env = self._batch_env
        checks = compiled_rollout.failure_checks(carry.bad)
        episodes, episode_length = self._episodes.variables
        memory, memory_length = self._memory.variables
        score, length = tally
        pairs = [
            (batch_env.observ, carry.observ),
            (batch_env.done, carry.done), (batch_env.action, carry.action),
            (batch_env.reward, carry.reward),
            (batch_env.truncated, carry.truncated),
            # The environments' action dtype may be wider than the
            # policy's (float64 of MuJoCo tasks).
            (self._last_action, tf.cast(
                carry.action, self._last_action.dtype)),
            (self._running_return, carry.running_return),
            (episode_length, carry.episode_length),
            (self._rollout_steps, carry.rollout_steps),
            (memory_length, carry.memory_length),
            (self._memory_index, carry.memory_index),
            (self._memory_steps, carry.memory_steps),
            (score, carry.score), (length, carry.episode_steps)]
        pairs += list(zip(episodes, carry.episodes))
        pairs += list(zip(memory, carry.memory))
        pairs += list(zip(
            tools.nested.flatten(self._last_policy), carry.policy_params))
        with tf.control_dependencies(checks):
            writes = [variable.assign(value) for variable, value in pairs]
            writes += env.assign(carry.env)
            writes.append(self._observ_filter.assign(carry.observ_statistics))
            writes.append(self._reward_filter.assign(carry.reward_statistics))
        return writes
