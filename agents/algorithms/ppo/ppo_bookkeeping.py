"""PPO's step, a pure function from its `State` to the next.

What PPO does with a step once the agents acted and the environments
stepped: the normalizers' statistics, the transition in the episode buffers,
the rollouts and ended episodes moved into the update memory, the scores.
`PPO.experience` runs it on the state read from the variables, `collect` in
its loop (see `ppo_collect`).
"""

import collections

import tensorflow.compat.v1 as tf
from agents.tools import compiled_ops

# PPO's state, which its variables hold between session calls
# (`PPO._read_state`, `PPO._write_state`): the agents' last observations,
# flags, actions, policy parameters and recurrent state (`()` without); the
# normalizers' statistics; each agent's running return, episode buffer row,
# its length and steps since its last rollout; the update memory; the
# episodes pending for the next update. A loop adds the step `index`, the
# environments' `env` state, the running scores, the tally of the episodes
# that `ended`, and the first non-finite value seen (`bad`).
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

# The update memory as a loop carries it: the buffers, the rows' lengths,
# the rows in use and the steps they hold.
Memory = collections.namedtuple(
    'Memory', 'memory, memory_length, memory_index, memory_steps')

# A step as `_bookkeep` takes it: the observations acted on, the actions,
# their policy's parameters, the recurrent state after acting, and the
# environments' outcome.
Step = collections.namedtuple('Step', (
    'observ, action, policy_params, state, nextob, reward, done, truncated, '
    'restarted'))

# The lengths of the agents' rows, their steps since their last rollout,
# and the memory's rows in use and the steps they hold.
Counts = collections.namedtuple(
    'Counts', 'episode_length, rollout_steps, memory_index, memory_steps')

# A step's effect on the rows (see `_count`): the rows' lengths with the
# step, the rollouts cut, the episodes that ended, those pending, the rows
# stored of each, and the memory's rows in use before the ended ones.
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


class BookkeepingMixin:
    """PPO's step; the methods write no variable."""

    def _bookkeep(self, carry, step, begin=None):
        """The `State` after a `Step` (its `env` and `bad` unchanged).

        `begin` flags the agents whose episode begins with the step; None:
        those whose episode ended before it (`carry.done`).
        """
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
        # The rollouts go into the memory first, then the step's ended
        # episodes; the rows of rollouts begin new segments. Where the
        # rollouts filled the memory, the ended episodes wait as pending
        # for the update that follows (see `_train_where_due`).
        # One write of both (a cond in a plain graph switches each buffer).
        row = compiled_ops.where(
            marks.store_cut, _rows_from(carry.memory_index, marks.store_cut),
            _rows_from(marks.ended_index, marks.store_ended))
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
        """The `Counts` after a step and its `Marks`.

        Rollouts that the step completes are stored first, then the episodes
        it ended, which wait as pending where the rollouts filled the memory.
        `restarted` flags environments restarted after a failure.
        """
        length = compiled_ops.where(
            begin, tf.zeros_like(counts.episode_length),
            counts.episode_length) + 1
        # An episode interrupted by a failed environment has no result: it
        # is neither stored nor scored, and the next step begins anew.
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
        return Counts(
            episode_length=compiled_ops.where(
                cut, tf.zeros_like(length), length),
            rollout_steps=rollout_steps, memory_index=index_after,
            memory_steps=steps_after), Marks(
                length=length, cut=cut, ended=ended, pending=pending,
                store_cut=store_cut, store_ended=store_ended,
                ended_index=index)

    def _rollout_cut(self, rollout_steps, done):
        """The agents whose rollout ends while their episode goes on, and
        the counts after the step.

        A count starts anew at `rollout_length` whether or not the episode
        ended there, so updates come every `rollout_length` steps.
        """
        rollout_length = self._config.rollout_length
        if not rollout_length:
            return tf.zeros_like(done), rollout_steps
        steps = rollout_steps + 1
        complete = steps >= int(rollout_length)
        return (
            tf.logical_and(complete, tf.logical_not(done)),
            compiled_ops.where(complete, tf.zeros_like(steps), steps))

    def _bootstrap(self, nextob, observ_statistics, truncated, cut, state):
        """Discounted value of the next observation where the return goes
        on: episodes truncated by their time limit (with
        `bootstrap_truncated`) and rollouts cut (`cut`)."""
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

        # Only steps that cut a return run the value network, whose
        # recurrent state continues from the one after acting.
        return tf.cond(tf.reduce_any(bootstrap), _value, lambda: zeros)

    def _store(self, memory, episodes, episode_length, mask):
        """The `Memory` after storing the rows of the agents of `mask`, in
        agent order while it has rows left; the others are dropped."""
        stored = self._storable(memory.memory_index, mask)
        rows = self._write_rows(
            tuple(memory.memory) + (memory.memory_length,), episodes,
            episode_length, stored, _rows_from(memory.memory_index, stored))
        index, steps = self._counted(
            memory.memory_index, memory.memory_steps, stored,
            episode_length)
        return Memory(
            memory=rows[:-1], memory_length=rows[-1], memory_index=index,
            memory_steps=steps)

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
        """The memory's buffers and row lengths (`rows`) after storing the
        rows of the agents `stored`, each in its memory `row`."""
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

        # Most steps store nothing: they pass the memory on without
        # copying it (a plain graph loop would copy it at every step).
        return tf.cond(tf.reduce_any(stored), _write, lambda: rows)

    def _memory_full(self, memory_index, memory_steps):
        """Whether the memory holds enough for an update."""
        full = memory_index >= self._config.update_every
        update_steps = self._config.update_steps
        if update_steps:
            full = tf.logical_or(full, memory_steps >= int(update_steps))
        return full


def _rows_from(memory_index, stored):
    """The memory rows of the agents `stored`, in agent order from
    `memory_index` on."""
    return memory_index + tf.cumsum(tf.cast(stored, tf.int32), exclusive=True)


def _tallied(carry, score, episode_steps, ended):
    """The state with the running scores and the tally of ended episodes."""
    ended_float = tf.cast(ended, tf.float32)
    return carry._replace(
        score=score, episode_steps=episode_steps,
        ended=tf.logical_or(carry.ended, ended),
        last_score=compiled_ops.where(ended, score, carry.last_score),
        score_sum=carry.score_sum + tf.reduce_sum(score * ended_float),
        length_sum=carry.length_sum + tf.reduce_sum(
            tf.cast(episode_steps, tf.float32) * ended_float),
        count=carry.count + tf.reduce_sum(tf.cast(ended, tf.int32)))
