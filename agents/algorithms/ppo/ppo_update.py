"""The training phase of PPO: when it runs, and its epochs on the memory,
all in one call of a `tf.function` compiled by XLA by default."""

import collections
import functools

import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import utility
from agents.tools import compiled_ops

# The update memory: buffers, rows' lengths, rows in use, steps held.
_Memory = collections.namedtuple(
    '_Memory', 'memory, memory_length, memory_index, memory_steps')


class UpdateMixin:
    """PPO's update: advantages, mini-batch epochs and the KL penalty."""

    def _store_pending(self, pending):
        """Store the `pending` agents' episode rows; a bool tensor after."""
        variables = self._memory_variables()

        def _define():
            buffers, length = self._episodes.variables
            memory = self._with_pending(
                _Memory(**ppo_step.read_fields(variables)),
                tuple(buffer_.read_value() for buffer_ in buffers),
                length.read_value(), pending)
            with tf.control_dependencies(
                    ppo_step.assign_fields(variables, memory)):
                return tf.constant(True)

        # Only a call whose rollouts filled the memory leaves some pending.
        return tf.cond(
            tf.reduce_any(pending), _define, lambda: tf.constant(False))

    def _memory_variables(self):
        """The variables of the update memory by `_Memory` field."""
        return {
            name: self._state_variables()[name]
            for name in _Memory._fields}

    def _with_pending(self, memory, episodes, length, pending):
        """The `_Memory` after storing the `pending` agents' `episodes`."""
        stored = self._storable(memory.memory_index, pending)
        rows = self._write_rows(
            tuple(memory.memory) + (memory.memory_length,), episodes,
            length, stored, ppo_step.rows_from(memory.memory_index, stored))
        index, steps = self._counted(
            memory.memory_index, memory.memory_steps, stored, length)
        return _Memory(rows[:-1], rows[-1], index, steps)

    def _train_where_due(self, pending, again=False):
        """Train where the memory is full, then store the `pending` episodes;
        with `again` (`experience`, which no `collect` follows), train again
        where they fill it anew."""
        mark_log = self._log_pending.assign(tf.logical_or(
            self._log_pending,
            tf.logical_and(self._should_log, self._is_training)))

        def _due():
            full = self._memory_full(
                self._memory_index.read_value(),
                self._memory_steps.read_value())
            return tf.logical_and(full, self._is_training)

        def _train():
            training = self._training()
            with tf.control_dependencies([training]):
                store_pending = self._store_pending(pending)
            with tf.control_dependencies([store_pending]):
                if again:
                    training = tf.summary.merge([
                        training, tf.cond(_due(), self._training, str)])
                return tf.identity(training)

        def _store():
            with tf.control_dependencies([self._store_pending(pending)]):
                return tf.constant('')

        # Episodes are pending only where the memory is full: a step that
        # does not train has none to store but while not training. One
        # cond, as each cond of the update switches all its variables.
        with tf.control_dependencies([mark_log]):
            return tf.cond(_due(), _train, str if again else _store)

    def _training(self):
        """Train on the memory, adapt the penalty, clear the memory."""
        with tf.device(self._device):
            with tf.name_scope('training'):
                log = tf.logical_or(self._should_log, self._log_pending)
                # Rows past the memory index hold no episode: length zero.
                data, length = self._memory.data()
                reward = self._reward_filter.transform(data.reward)
                reward = reward + data.bootstrap
                update_summary = self._perform_update_steps(
                    data.observ, data.action, data.policy_params, reward,
                    length, log)
                with tf.control_dependencies([update_summary]):
                    penalty_summary = self._adjust_penalty(
                        data.observ, data.policy_params, length, log)
                with tf.control_dependencies([penalty_summary]):
                    clear_memory = tf.group(
                        self._memory.clear(), self._memory_index.assign(0),
                        self._memory_steps.assign(0),
                        self._num_updates.assign_add(1),
                        self._trained_steps.assign_add(
                            tf.reduce_sum(tf.cast(length, tf.int64))))
                weight_summary = _summary_after(
                    [clear_memory], log,
                    lambda: utility.variable_summaries(
                        tf.trainable_variables(),
                        self._config.weight_summaries))
                with tf.control_dependencies([weight_summary]):
                    logged = self._log_pending.assign(False)
                with tf.control_dependencies([logged]):
                    return tf.summary.merge([
                        update_summary, penalty_summary, weight_summary])

    def _perform_update_steps(
            self, observ, action, old_policy_params, reward, length, log):
        """The epochs of mini-batches in one call; the summary where `log`."""
        with tf.name_scope('update') as scope:
            shuffle_keys = self._shuffle_keys(parts.num_items(
                *observ.shape[:2].as_list(), self._config.chunk_length))
            with tf.name_scope('compiled_update'):
                means, finite, loss, gradient_norm, targets = (
                    self._update_function(
                        (observ, action, old_policy_params, reward, length),
                        shuffle_keys))
                statistics = _checked(
                    self._update_statistics(), means, finite, loss,
                    gradient_norm)

            def _summary():
                # The steps return scalars and their means are logged once:
                # summaries cost more than the mini-batches' math. A branch
                # starts without name scope; the tags keep it.
                with tf.name_scope(scope):
                    return tf.summary.merge([
                        tf.summary.histogram(
                            'advantage', targets['advantage']),
                        tf.summary.scalar('mean_return', utility.masked_mean(
                            targets['return'], length)),
                        tf.summary.scalar('mean_value', utility.masked_mean(
                            targets['value'], length)),
                        tf.summary.scalar(
                            'learning_rate', self._learning_rate()),
                    ] + [
                        tf.summary.scalar(name, tf.reduce_mean(values))
                        for name, values in sorted(statistics.items())])

            # The penalty's KL pass waits for this summary, so it must not
            # finish before the mini-batch steps.
            return _summary_after([statistics['loss']], log, _summary)

    def _shuffle_keys(self, num_items, seed=None):
        """Keys `[update_epochs, num_items]` whose order shuffles each epoch;
        from the int64 `seed` where given (a population's member's)."""
        shape = [self._config.update_epochs, num_items]
        if seed is None and self._shuffle_seed is None:
            return tf.random.uniform(shape)
        if seed is None:
            seed = tf.constant(self._shuffle_seed, tf.int64)
        key = tf.stack([seed, tf.cast(self._num_updates, tf.int64)])
        return tf.random.stateless_uniform(shape, seed=key, alg='philox')

    def _update_sequences(self, inputs):
        """The sequences, their lengths and the tensors of the summaries."""
        observ, action, old_policy_params, reward, length = inputs
        return_ = utility.discounted_return(
            reward, length, self._config.discount)
        value = self._network(observ, length).value
        gae_lambda = self._config.gae_lambda
        # Value targets come from whole episodes, before they are cut into
        # chunks: the lambda-return with GAE, else the Monte-Carlo return.
        if gae_lambda:
            advantage = utility.lambda_advantage(
                reward, value, length, self._config.discount, gae_lambda)
            value_target = utility.mask(advantage + value, length)
        else:
            advantage = return_ - value
            value_target = return_
        value_target = tf.stop_gradient(value_target)
        advantage = tf.stop_gradient(
            utility.normalize_advantage(advantage, length))
        sequences = (
            observ, action, old_policy_params, value_target, advantage,
            tf.stop_gradient(value))
        targets = {'return': return_, 'value': value, 'advantage': advantage}
        return sequences, length, targets

    @functools.cached_property
    def _update_function(self):
        """`_update` as the function that every update calls, traced once."""
        if self._config.compile_update:
            return compiled_ops.compiled_function(self._update)
        return tf.function(self._update, autograph=False)

    def _update(self, inputs, shuffle_keys):
        """The sequences, then the mini-batches until one is not finite."""
        names = self._update_statistics()
        plan, extras = self._update_plan(inputs, shuffle_keys)
        items, batch_indices = plan.items, plan.batch_indices
        flat_items = tf.nest.flatten(items)

        def _condition(index, unused_totals, finite, unused_loss, unused_norm):
            return tf.logical_and(index < plan.num_batches, finite)

        def _step(index, totals, unused_finite, unused_loss, unused_norm):
            # Gathers of a statically shaped index array: slices bounded
            # by the loop index would recompile per value.
            indices = tf.gather(batch_indices, index)
            batch = tf.nest.pack_sequence_as(items, [
                tf.gather(values, indices) for values in flat_items])
            statistics, finite = self._update_step(
                batch, tf.gather(plan.length, indices))
            totals = [
                total + statistics[name] for total, name in zip(totals, names)]
            return (
                index + 1, totals, finite, statistics['loss'],
                statistics['gradient_norm'])

        initial = (
            tf.constant(0), [tf.constant(0.0)] * len(names),
            tf.constant(True), tf.constant(0.0), tf.constant(0.0))
        count, totals, finite, loss, gradient_norm = tf.while_loop(
            _condition, _step, initial, parallel_iterations=1)
        count = tf.cast(count, tf.float32)
        means = [total / count for total in totals]
        return means, finite, loss, gradient_norm, extras

    def _update_plan(self, inputs, shuffle_keys):
        """The `parts.SequencePlan` of the epochs' mini-batches, and the
        tensors of the summaries."""
        config = self._config
        sequences, length, extras = self._update_sequences(inputs)
        return parts.plan_sequences(
            sequences, length, config.chunk_length, config.batch_size,
            config.update_epochs, padding_value=1,
            shuffle_keys=shuffle_keys), extras

    def _update_statistics(self):
        """Names of the scalars that every mini-batch step returns."""
        names = [
            'loss', 'value_loss', 'policy_loss', 'surrogate_loss',
            'kl_penalty', 'kl_cutoff', 'cutoff_count', 'mean_kl',
            'mean_entropy', 'gradient_norm']
        groups = self._config.weight_summaries or {}
        names += [f'gradient_norm_{group}' for group in sorted(groups)]
        return names

    def _update_step(self, sequence, length):
        """A gradient step where finite; the statistics and whether."""
        loss, statistics = self._step_loss(sequence, length)
        grad_vars = self._optimizer.compute_gradients(loss)
        grad_vars = [(grad, var) for grad, var in grad_vars if grad is not None]
        gradients, variables = zip(*grad_vars)
        gradient_norm = compiled_ops.global_norm(gradients)
        max_norm = self._config.max_gradient_norm
        if max_norm:
            gradients, _ = tf.clip_by_global_norm(
                gradients, max_norm, use_norm=gradient_norm)
        statistics.update(loss=loss, gradient_norm=gradient_norm)
        norms = utility.gradient_norms(
            grad_vars, self._config.weight_summaries)
        statistics.update({
            f'gradient_norm_{group}': norm for group, norm in norms.items()})
        finite = compiled_ops.all_finite((loss,) + tuple(gradients))

        def _apply():
            optimize = self._optimizer.apply_gradients(
                zip(gradients, variables))
            with tf.control_dependencies([optimize]):
                return tf.identity(finite)

        applied = tf.cond(finite, _apply, lambda: finite)
        with tf.control_dependencies([applied]):
            return {
                name: tf.identity(tf.cast(statistics[name], tf.float32))
                for name in self._update_statistics()}, tf.identity(applied)

    def _step_loss(self, sequence, length):
        """A mini-batch's loss and its statistics."""
        (observ, action, old_policy_params, value_target, advantage,
         old_value) = sequence
        network = self._network(observ, length)
        old_policy = utility.policy_from_params(
            self._discrete, old_policy_params)
        value_loss = utility.value_loss_fn(
            network.value, value_target, old_value, length,
            self._config.value_loss_clip)
        policy_loss, statistics = self._policy_loss(
            old_policy, network.policy, action, advantage, length)
        extra_loss = network.get('loss', 0.0)
        loss = policy_loss + value_loss + tf.reduce_mean(extra_loss)
        statistics.update(value_loss=value_loss, policy_loss=policy_loss)
        return loss, statistics

    def _policy_loss(self, old_policy, policy, action, advantage, length):
        """The surrogate loss with KL penalty and cutoff, and statistics."""
        config = self._config
        with tf.name_scope('policy_loss'):
            kl = utility.mask(old_policy.kl(policy), length)
            log_ratio = policy.log_prob(action) - old_policy.log_prob(action)
            # Padded steps hold arbitrary values; keep exp() finite there.
            log_ratio = utility.mask(tf.minimum(log_ratio, 20.0), length)
            ratio = tf.exp(log_ratio)
            surrogate = ratio * advantage
            if config.ppo_clip:
                clipped_ratio = tf.clip_by_value(
                    ratio, 1 - config.ppo_clip, 1 + config.ppo_clip)
                surrogate = tf.minimum(surrogate, clipped_ratio * advantage)
            surrogate_loss = -utility.masked_mean(surrogate, length)
            # A quadratic wall above the cutoff stops the policy from moving
            # far from the data when the penalty has not adapted yet.
            cutoff_threshold = config.kl_target * config.kl_cutoff_factor
            above_cutoff = tf.cast(kl > cutoff_threshold, tf.float32)
            if config.kl_penalty:
                kl_penalty = self._penalty * utility.masked_mean(kl, length)
                kl_cutoff = config.kl_cutoff_coef * utility.masked_mean(
                    above_cutoff * tf.square(kl - cutoff_threshold), length)
            else:
                kl_penalty = kl_cutoff = tf.constant(0.0)
            entropy = utility.masked_mean(policy.entropy(), length)
            policy_loss = surrogate_loss + kl_penalty + kl_cutoff
            if config.entropy_regularization:
                policy_loss -= config.entropy_regularization * entropy
            statistics = dict(
                surrogate_loss=surrogate_loss, kl_penalty=kl_penalty,
                kl_cutoff=kl_cutoff, mean_kl=utility.masked_mean(kl, length),
                mean_entropy=entropy, cutoff_count=tf.reduce_sum(
                    utility.mask(above_cutoff, length)))
            return policy_loss, statistics

    def _adjust_penalty(self, observ, old_policy_params, length, log):
        """Adapt the KL penalty to the update's KL; the summary where `log`."""
        with tf.name_scope('adjust_penalty') as scope:
            _measure = functools.partial(
                self._measure_kl, observ, old_policy_params, length)

            def _summary(network, kl, kl_change, penalty):
                entropy = utility.mask(network.policy.entropy(), length)
                with tf.name_scope(scope):
                    return tf.summary.merge([
                        tf.summary.scalar('kl_change', kl_change),
                        tf.summary.scalar('penalty', penalty),
                        tf.summary.histogram('kl', kl),
                        tf.summary.histogram('entropy', entropy)])

            if not self._config.kl_penalty:
                return _summary_after(
                    [], log, lambda: _summary(*_measure(), self._penalty))
            network, kl, kl_change = _measure()
            new_penalty = self._adapted_penalty(kl_change)
            update = self._penalty.assign(new_penalty)
            return _summary_after(
                [update], log,
                lambda: _summary(network, kl, kl_change, new_penalty))

    def _measure_kl(self, observ, old_policy_params, length):
        """The network on the memory, the KL from the old policy, its mean."""
        network = self._network(observ, length)
        old_policy = utility.policy_from_params(
            self._discrete, old_policy_params)
        kl = utility.mask(old_policy.kl(network.policy), length)
        kl_change = tf.identity(
            utility.masked_mean(kl, length), name='kl_change')
        return network, kl, kl_change

    def _adapted_penalty(self, kl_change):
        """The KL penalty after an update of mean KL `kl_change`."""
        new_penalty = utility.adapted_penalty(
            self._penalty, kl_change, self._config.kl_target)
        # Keep the penalty in a range where the loss stays well scaled.
        return tf.clip_by_value(new_penalty, 1e-6, 1e6)


def _summary_after(dependencies, log, summary_fn):
    """The summary of `summary_fn` where `log`, after `dependencies`."""
    # Both branches wait: the predicate is a copy made after them.
    with tf.control_dependencies(dependencies):
        return tf.cond(
            tools.identity_after(dependencies, log), summary_fn, str)


# The message prefix of `check_numerics` on a gradient, which the training
# script reads as 'the gradient of NAME'.
_GRADIENT_MESSAGE = (
    'Not a number (NaN) or infinity (Inf) values detected in gradient. ')


def _checked(names, means, finite, loss, gradient_norm):
    """The statistics after checks that fail where a step was not finite."""
    zero = tf.constant(0.0)
    check_loss = tf.debugging.check_numerics(
        tf.where(finite, zero, loss), 'loss')
    # A finite loss means a gradient failed: the second check says so.
    with tf.control_dependencies([check_loss]):
        gradient_value = tf.where(
            tf.math.is_finite(gradient_norm), tf.constant(float('nan')),
            gradient_norm)
        check_gradient = tf.debugging.check_numerics(
            tf.where(finite, zero, gradient_value),
            _GRADIENT_MESSAGE + 'loss')
    with tf.control_dependencies([check_gradient]):
        return {
            name: tf.identity(mean, name=name)
            for name, mean in zip(names, means)}
