"""PPO's step, a pure function from its `State` to the next, and the
compiled loop of `collect` that takes it on in-graph tasks."""

import collections
import functools

import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import utility
from agents.parts import distributions
from agents.tools import compiled_ops
from agents.tools import rollout_env
from agents.tools import temporary_scope

# PPO's state: what its variables hold between session calls (the agents'
# last step, the normalizers, episode rows, rollout counts, the update
# memory, the episodes pending), and what a loop adds (step `index`, `env`
# state, scores, the tally of ended episodes, the first non-finite value).
State = collections.namedtuple('State', (
    'index, env, observ, done, action, reward, truncated, '
    'policy_params, state, '
    'observ_statistics, reward_statistics, running_return, episodes, '
    'episode_length, rollout_steps, memory, memory_length, memory_index, '
    'memory_steps, pending, score, episode_steps, ended, last_score, '
    'score_sum, length_sum, count, bad'))

# One step of an agent as the episode buffers store it.
Transition = collections.namedtuple(
    'Transition', 'observ, action, policy_params, reward, bootstrap')

# A step as `_bookkeep` takes it: what the agents saw and did (with the
# recurrent state after acting) and the environments' outcome.
Step = collections.namedtuple('Step', (
    'observ, action, policy_params, state, nextob, reward, done, truncated, '
    'restarted'))

Counts = collections.namedtuple(
    'Counts', 'episode_length, rollout_steps, memory_index, memory_steps')

# A step's effect on the rows (see `_count`).
Marks = collections.namedtuple('Marks', (
    'length, cut, ended, pending, store_cut, store_ended, ended_index'))


def network_state(state):
    """The state argument of a network: None for the `()` of feed-forward."""
    if isinstance(state, tuple) and not state:
        return None
    return state


def counts_of(carry):
    """The `Counts` of a `State`."""
    return Counts(
        carry.episode_length, carry.rollout_steps, carry.memory_index,
        carry.memory_steps)


class StepMixin:
    """PPO's step and the loop of steps of `collect`."""

    def compiles_collection(self, batch_env):
        """Whether `collect` can run on a batch (see `tools.rollout_env`)."""
        return rollout_env.rollout_env(batch_env) is not None

    def collect(self, num_steps, steps_left):
        """Train on the batch for up to `num_steps` batch steps.

        The loop stops after the step that fills the memory, and the update
        trains in the same session call. A failed environment or a value
        that is not finite fails the run, and no variable is written.

        Args:
          steps_left: int32 tensor, the batch steps left in the phase.

        Returns:
          The int32 batch steps made, the bool agents whose episode ended,
          the float32 scores of their last ended episodes, and the summary.
        """
        limit = tf.minimum(tf.cast(steps_left, tf.int32), num_steps)
        first_key = tf.cast(self._step, tf.int64)
        env = rollout_env.rollout_env(self._batch_env)
        with temporary_scope.temporary_scope('collect'):
            tally = self._episode_tally()
        # A resumed run goes on scoring its running episodes.
        tools.keep_for_resume(tally)
        carry = self._read_state()._replace(
            env=env.initial(), score=tally[0].read_value(),
            episode_steps=tally[1].read_value())
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
            training = self._train_where_due(carry.pending)
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
        return made, ended, last_score, tf.summary.merge([summary, training])

    def _episode_tally(self):
        """Variables of each running episode's score and length."""
        return tuple(
            tf.Variable(
                tf.zeros([self._num_agents], dtype), trainable=False,
                name=name)
            for dtype, name in ((tf.float32, 'score'), (tf.int32, 'length')))

    def _read_state(self):
        """PPO's `State` in its variables, without env state or scores."""
        zeros = tf.zeros([self._num_agents], tf.float32)
        return State(
            index=tf.constant(0), env=(),
            observ_statistics=self._observ_filter.read(),
            reward_statistics=self._reward_filter.read(),
            pending=tf.zeros([self._num_agents], tf.bool),
            score=zeros, episode_steps=tf.zeros([self._num_agents], tf.int32),
            ended=tf.zeros([self._num_agents], tf.bool),
            last_score=zeros, score_sum=tf.constant(0.0),
            length_sum=tf.constant(0.0), count=tf.constant(0),
            **read_fields(self._batch_variables()),
            **read_fields(self._state_variables()),
            bad=rollout_env.no_failure(
                self._batch_env.observ, self._batch_env.action))

    def _collect_loop(
            self, carry, env, limit, first_key, num_steps, sample_seed):
        """The loop of steps, until the limit or a full memory."""

        def _running(carry):
            return self._running(
                carry.index, limit, counts_of(carry), carry.bad)

        def _step(carry):
            key = self._step_key(sample_seed, first_key, carry.index)
            started = env.begin(carry.env, carry.done, carry.observ)
            return [self._step_begun(env, carry, started, key)]

        return tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]

    def _running(self, index, limit, counts, bad):
        """Whether a loop goes on: below the limit, every memory (of every
        member, where stacked) not full, finite."""
        full = self._memory_full(counts.memory_index, counts.memory_steps)
        return tf.logical_and(index < limit, tf.logical_not(
            tf.reduce_any(tf.logical_or(full, bad.failed))))

    def _step_key(self, sample_seed, first_key, index):
        """A step's sample key: the seed and its first agent's global step."""
        return tf.stack([
            sample_seed,
            first_key + tf.cast(index * self._num_agents, tf.int64)])

    def _step_begun(self, env, carry, started, key, noise=None):
        """The step after `env.begin` gave `started`, its env state and
        observations: act (from `noise` where given), step and bookkeep."""
        env_state, observ = started
        action, policy_params, state = self._act(
            observ, carry.observ_statistics, key, carry.action.dtype,
            begun(carry.state, carry.done), noise)
        env_state, nextob, reward, done, truncated, restarted = env.step(
            env_state, action)
        carry = self._bookkeep(carry, Step(
            observ, action, policy_params, state, nextob, reward, done,
            truncated, restarted))
        return carry._replace(env=env_state, bad=rollout_env.first_failure(
            carry.bad, action, nextob, reward))

    def _act(self, observ, observ_statistics, key, dtype, state, noise=None):
        """The sampled actions, policy parameters and recurrent state (`()`
        without); from `noise` where given and our distributions take it."""
        output = self._network(
            self._observ_filter.transform(
                observ, observ_statistics)[:, None],
            tf.ones([self._num_agents], tf.int32),
            network_state(state))
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

    def _batch_variables(self):
        """The batch's variables by the `State` field they hold."""
        return {
            name: getattr(self._batch_env, name)
            for name in ('observ', 'done', 'action', 'reward', 'truncated')}

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

    def _write_carry(self, env, carry, tally):
        """Assign the loop's final state to the variables, once checked."""
        score, length = tally
        with tf.control_dependencies(rollout_env.failure_checks(carry.bad)):
            return (
                assign_fields(self._batch_variables(), carry)
                + [score.assign(carry.score),
                   length.assign(carry.episode_steps)]
                + env.assign(carry.env) + self._write_state(carry))

    def _write_state(self, carry, before=None):
        """Assign ops of PPO's `State` but of fields unchanged from `before`."""
        writes = assign_fields(self._state_variables(), carry, before)
        # The environments' action dtype may be wider than the policy's
        # (float64 of MuJoCo tasks).
        writes.append(self._last_action.assign(
            tf.cast(carry.action, self._last_action.dtype)))
        writes.append(self._observ_filter.assign(carry.observ_statistics))
        writes.append(self._reward_filter.assign(carry.reward_statistics))
        return writes

    def _bookkeep(self, carry, step, begin=None):
        """The `State` after a `Step`; `begin` (None: `carry.done`) flags the
        episodes it begins."""
        config = self._config
        if begin is None:
            begin = carry.done
        zeros = tf.zeros_like(carry.score)
        score = compiled_ops.where(begin, zeros, carry.score)
        running_return = compiled_ops.where(begin, zeros, carry.running_return)
        episode_steps = compiled_ops.where(
            begin, tf.zeros_like(carry.episode_steps), carry.episode_steps)
        counts, marks = self._count(
            counts_of(carry), begin, step.done, step.restarted)
        # Experience: normalizers first, then the transition they scale.
        observ_statistics = self._observ_filter.merged(
            carry.observ_statistics, step.observ)
        if config.reward_normalization == 'return':
            running_return = running_return * config.discount + step.reward
            reward_statistics = self._reward_filter.merged(
                carry.reward_statistics, running_return)
        else:
            reward_statistics = self._reward_filter.merged(
                carry.reward_statistics, step.reward)
        transition = Transition(
            self._observ_filter.transform(step.observ, observ_statistics),
            step.action, step.policy_params, step.reward,
            self._bootstrap(
                step.nextob, observ_statistics, step.truncated, marks.cut,
                step.state))
        indices = tf.stack(
            [tf.range(self._num_agents), marks.length - 1], axis=1)
        episodes = tuple(
            tf.tensor_scatter_nd_update(buffer_, indices, tf.cast(
                value, buffer_.dtype))
            for buffer_, value in zip(
                carry.episodes, tf.nest.flatten(transition)))
        episode_steps = episode_steps + 1
        score = score + step.reward
        # Rollouts go into the memory, then ended episodes, in one write.
        row = compiled_ops.where(
            marks.store_cut, rows_from(carry.memory_index, marks.store_cut),
            rows_from(marks.ended_index, marks.store_ended))
        rows = self._write_rows(
            tuple(carry.memory) + (carry.memory_length,), episodes,
            marks.length, tf.logical_or(marks.store_cut, marks.store_ended),
            row)
        carry = _tallied(carry, score, episode_steps, marks.ended)
        return carry._replace(
            index=carry.index + 1,
            observ=step.nextob, done=step.done, action=step.action,
            reward=step.reward, truncated=step.truncated,
            policy_params=tuple(step.policy_params), state=step.state,
            observ_statistics=observ_statistics,
            reward_statistics=reward_statistics,
            running_return=running_return, episodes=episodes,
            episode_length=counts.episode_length,
            rollout_steps=counts.rollout_steps, memory=rows[:-1],
            memory_length=rows[-1], memory_index=counts.memory_index,
            memory_steps=counts.memory_steps, pending=marks.pending)

    def _count(self, counts, begin, done, restarted):
        """The `Counts` after a step and its `Marks`: rollouts stored first,
        then ended episodes (pending where full, dropped where restarted)."""
        length = compiled_ops.where(
            begin, tf.zeros_like(counts.episode_length),
            counts.episode_length) + 1
        ended = tf.logical_and(done, tf.logical_not(restarted))
        cut, rollout_steps = self._rollout_cut(counts.rollout_steps, done)
        store_cut = self._storable(counts.memory_index, cut)
        index, steps = self._counted(
            counts.memory_index, counts.memory_steps, store_cut, length)
        pending = tf.logical_and(ended, self._memory_full(index, steps))
        store_ended = self._storable(
            index, tf.logical_and(ended, tf.logical_not(pending)))
        index_after, steps_after = self._counted(
            index, steps, store_ended, length)
        counts = Counts(
            compiled_ops.where(cut, tf.zeros_like(length), length),
            rollout_steps, index_after, steps_after)
        return counts, Marks(
            length, cut, ended, pending, store_cut, store_ended, index)

    def _rollout_cut(self, rollout_steps, done):
        """The agents whose rollout ends mid-episode, and the counts after."""
        rollout_length = self._config.rollout_length
        if not rollout_length:
            return tf.zeros_like(done), rollout_steps
        steps = rollout_steps + 1
        complete = steps >= int(rollout_length)
        return (
            tf.logical_and(complete, tf.logical_not(done)),
            compiled_ops.where(complete, tf.zeros_like(steps), steps))

    def _bootstrap(self, nextob, observ_statistics, truncated, cut, state):
        """Discounted next value where truncated (`bootstrap_truncated`) or
        `cut`, else zero."""
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
                tf.ones([self._num_agents], tf.int32),
                network_state(state)).value[:, 0]
            return compiled_ops.where(
                bootstrap, self._config.discount * tf.stop_gradient(value),
                zeros)

        # Only steps that cut a return run the value network.
        return compiled_ops.cond(
            tf.reduce_any(bootstrap), _value, lambda: zeros)

    def _storable(self, memory_index, mask):
        """The agents of `mask` whose rows the memory has room for."""
        rank = tf.cumsum(tf.cast(mask, tf.int32), exclusive=True)
        return tf.logical_and(
            mask, rank < self._config.update_every - memory_index)

    @staticmethod
    def _counted(memory_index, memory_steps, stored, episode_length):
        """The memory's rows and steps after storing the `stored` rows."""
        stored_steps = compiled_ops.where(
            stored, episode_length, tf.zeros_like(episode_length))
        return (
            memory_index + tf.reduce_sum(tf.cast(stored, tf.int32)),
            memory_steps + tf.reduce_sum(stored_steps))

    def _write_rows(self, rows, episodes, episode_length, stored, row):
        """The memory's `rows` after storing those of the agents `stored`."""
        capacity = self._config.update_every
        select = tf.logical_and(
            stored[None, :],
            tf.equal(row[None, :], tf.range(capacity)[:, None]))
        written = tf.reduce_any(select, axis=1)
        source = tf.argmax(tf.cast(select, tf.int32), axis=1,
                           output_type=tf.int32)

        def _write():
            return tuple(
                compiled_ops.where(
                    written, tf.gather(buffer_, source), old_buffer)
                for buffer_, old_buffer in zip(
                    episodes + (episode_length,), rows))

        # Most steps store nothing: they pass the memory on uncopied.
        return compiled_ops.cond(tf.reduce_any(stored), _write, lambda: rows)

    def _memory_full(self, memory_index, memory_steps):
        """Whether the memory holds enough for an update."""
        full = memory_index >= self._config.update_every
        update_steps = self._config.update_steps
        if update_steps:
            full = tf.logical_or(full, memory_steps >= int(update_steps))
        return full


def read_fields(variables):
    """The values of a dict of (nested) variables."""
    return {
        name: tf.nest.map_structure(
            lambda variable: variable.read_value(), nested)
        for name, nested in variables.items()}


def assign_fields(variables, values, before=None):
    """Assign ops of the fields of `values` but of those of `before`."""
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


def begun(state, begin):
    """The recurrent state with zeros for the agents whose episode begins."""
    return tf.nest.map_structure(
        lambda tensor: compiled_ops.where(begin, tf.zeros_like(tensor), tensor),
        state)


def rows_from(memory_index, stored):
    """The memory rows of the agents `stored`, from `memory_index` on."""
    return memory_index + tf.cumsum(tf.cast(stored, tf.int32), exclusive=True)


def _tallied(carry, score, episode_steps, ended):
    """The state with the scores and the tally of ended episodes."""
    ended_float = tf.cast(ended, tf.float32)
    return carry._replace(
        score=score, episode_steps=episode_steps,
        ended=tf.logical_or(carry.ended, ended),
        last_score=compiled_ops.where(ended, score, carry.last_score),
        score_sum=carry.score_sum + tf.reduce_sum(score * ended_float),
        length_sum=carry.length_sum + tf.reduce_sum(
            tf.cast(episode_steps, tf.float32) * ended_float),
        count=carry.count + tf.reduce_sum(tf.cast(ended, tf.int32)))
