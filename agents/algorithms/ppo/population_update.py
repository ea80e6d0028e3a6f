"""The update of a population: every member whose memory is full trains on
it in one compiled call, the mini-batch losses under `pfor` over members and
Adam on the stacked weights, per member."""

import tensorflow.compat.v1 as tf
from tensorflow.python.ops.parallel_for import control_flow_ops

from agents import parts
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import ppo_update
from agents.algorithms.ppo import stacked_variable
from agents.tools import compiled_ops


class UpdateMixin:
    """The update of an `agents.training.population.Population`."""

    def _train_where_due(self, pending):
        """Train the members whose memory is full, then store the `pending`
        episodes; the bool `[P]` members that trained."""
        # pylint: disable=protected-access
        algo, view = self.algo, stacked_variable.member_view
        with view(stacked_variable.WHOLE):
            due = algo._memory_full(
                algo._memory_index.read_value(),
                algo._memory_steps.read_value())

        def _train():
            with tf.name_scope('population_training'):
                return self._training(due)

        trained = tf.cond(tf.reduce_any(due), _train, lambda: due)
        with tf.control_dependencies([trained]):
            stored = self._store_pending(pending)
        with tf.control_dependencies([stored]):
            return tf.identity(trained)

    def _store_pending(self, pending):
        """Store each member's `pending` episode rows (`[P, num_agents]`)."""
        # pylint: disable=protected-access
        algo = self.algo
        variables = algo._memory_variables()

        def _define():
            buffers, length = algo._episodes.variables
            with stacked_variable.member_view(stacked_variable.WHOLE):
                inputs = (
                    ppo_update._Memory(**ppo_step.read_fields(variables)),
                    tuple(buffer_.read_value() for buffer_ in buffers),
                    length.read_value(), pending)
            memory = self._pfor(lambda member: algo._with_pending(
                *stacked_variable.member_of(inputs, member)))
            with stacked_variable.member_view(stacked_variable.WHOLE):
                writes = ppo_step.assign_fields(variables, memory)
            with tf.control_dependencies(writes):
                return tf.constant(True)

        return tf.cond(
            tf.reduce_any(pending), _define, lambda: tf.constant(False))

    def _training(self, due):
        """Train where `due`, adapt the penalties, clear the memories."""
        # pylint: disable=protected-access
        algo, view = self.algo, stacked_variable.member_view
        buffers, length = algo._memory.variables
        num_items = parts.num_items(
            *buffers[0].shape[:2].as_list(), self._config.chunk_length)
        keys = []
        for member in range(self.size):
            with view(member):
                keys.append(algo._shuffle_keys(
                    num_items, self._shuffle_seeds[member]))
        with view(stacked_variable.WHOLE):
            learning_rate = algo._learning_rate()
        finite, penalty = compiled_ops.compiled_function(self._update)(
            tf.stack(keys), due, learning_rate, list(self._adam[1]))
        with view(stacked_variable.WHOLE), tf.control_dependencies([finite]):
            steps = tf.reduce_sum(tf.cast(length.read_value(), tf.int64), 1)
            with tf.control_dependencies([steps]):
                writes = [
                    _assign_where(due, algo._penalty, penalty),
                    _assign_where(due, length, 0),
                    _assign_where(due, algo._memory_index, 0),
                    _assign_where(due, algo._memory_steps, 0),
                    algo._num_updates.assign_add(tf.cast(due, tf.int32)),
                    algo._trained_steps.assign_add(
                        compiled_ops.where(due, steps, tf.zeros_like(steps)))]
            with tf.control_dependencies(writes):
                return tf.identity(due)

    def _update(self, shuffle_keys, due, learning_rate, variables):
        """The epochs of every member due; whether finite, the penalties."""
        # pylint: disable=protected-access
        algo = self.algo
        # Unrolled: `pfor` turns the returns' `tf.scan` into lists of
        # variants, which XLA refuses.
        plan = self._unrolled(lambda member: algo._update_plan(
            self._memory_inputs(), shuffle_keys[member])[0])

        def _running(index, finite):
            return tf.logical_and(
                tf.reduce_any(self._active(plan, due, finite, index)),
                tf.reduce_any(finite))

        def _step(index, finite):
            active = self._active(plan, due, finite, index)

            def _loss(member):
                indices = tf.gather(tf.gather(
                    plan.batch_indices, member), index)
                batch = tf.nest.map_structure(
                    lambda values: tf.gather(tf.gather(values, member),
                                             indices), plan.items)
                return algo._step_loss(batch, tf.gather(tf.gather(
                    plan.length, member), indices))[0]

            losses = self._pfor(_loss)
            gradients = [
                tf.convert_to_tensor(gradient) for gradient in tf.gradients(
                    tf.reduce_sum(losses), variables)]
            gradients, member_finite = self._clipped(losses, gradients)
            step = self._adam_step(
                variables, gradients, learning_rate,
                tf.logical_and(active, member_finite))
            with tf.control_dependencies(step):
                return index + 1, tf.logical_and(finite, tf.logical_or(
                    member_finite, tf.logical_not(active)))

        _, finite = tf.while_loop(
            _running, _step, (tf.constant(0), tf.ones([self.size], tf.bool)),
            parallel_iterations=1)
        with tf.control_dependencies([finite]):
            penalty = self._pfor(lambda unused_member: algo._adapted_penalty(
                algo._measure_kl(*self._memory_inputs(penalty=True))[2]))
        return finite, penalty

    def _memory_inputs(self, penalty=False):
        """A member's memory as `_update_plan` takes it (as `_measure_kl`
        does with `penalty`)."""
        # pylint: disable=protected-access
        algo = self.algo
        data, length = algo._memory.data()
        if penalty:
            return data.observ, data.policy_params, length
        reward = algo._reward_filter.transform(data.reward) + data.bootstrap
        return data.observ, data.action, data.policy_params, reward, length

    def _unrolled(self, member_fn):
        """`member_fn(member)` of every member, one after another, stacked:
        for what `pfor` cannot vectorize (random draws keyed per member)."""
        outputs = []
        for member in range(self.size):
            with stacked_variable.member_view(member):
                outputs.append(member_fn(member))
        return tf.nest.map_structure(
            lambda *tensors: tf.stack(tensors), *outputs)

    def _pfor(self, member_fn):
        """`member_fn(member)` of every member, stacked by `pfor`."""

        def _member(member):
            with stacked_variable.member_view(member):
                with compiled_ops.tracing_population():
                    return member_fn(member)

        return control_flow_ops.pfor(
            _member, self.size, fallback_to_while_loop=False)

    @staticmethod
    def _active(plan, due, finite, index):
        """The members that take the mini-batch step `index`."""
        return tf.logical_and(
            tf.logical_and(due, finite), index < plan.num_batches)

    def _clipped(self, losses, gradients):
        """The gradients clipped by each member's norm, and the members
        whose loss and gradients are finite."""
        squares = tf.add_n([
            tf.reduce_sum(tf.square(gradient), _inner_axes(gradient))
            for gradient in gradients])
        norm = compiled_ops.sqrt(squares)
        finite = tf.logical_and(
            compiled_ops.is_finite(losses), compiled_ops.is_finite(squares))
        max_norm = self._config.max_gradient_norm
        if not max_norm:
            return gradients, finite
        # As `tf.clip_by_global_norm` scales, member by member.
        scale = max_norm * tf.minimum(1.0 / norm, 1.0 / max_norm)
        return [
            gradient * _per_member(scale, gradient)
            for gradient in gradients], finite

    def _define_adam(self):
        """Adam's moments `[P, ...]` of the weights (by weight) and each
        member's powers of the decay rates; the rates."""
        optimizer = self.algo._optimizer  # pylint: disable=protected-access
        if not isinstance(optimizer, tf.train.AdamOptimizer):
            raise ValueError(
                f'A population trains with Adam, got {optimizer!r}.')
        # pylint: disable=protected-access
        rates = (optimizer._beta1, optimizer._beta2, optimizer._epsilon)
        with tf.variable_scope('population_adam'):
            moments = {
                variable: tuple(
                    tf.Variable(tf.zeros(variable.shape, variable.dtype),
                                trainable=False, name=name)
                    for name in ('m', 'v'))
                for variable in tf.trainable_variables()}
            powers = tuple(
                tf.Variable(tf.fill([self.size], float(rate)),
                            trainable=False, name=name)
                for rate, name in zip(rates[:2], ('beta1_power',
                                                  'beta2_power')))
        return rates, moments, powers

    def _adam_step(self, variables, gradients, learning_rate, active):
        """Adam's step (as TensorFlow's kernel computes it) of the members
        `active`; the assignments."""
        (beta1, beta2, epsilon), moments, powers = self._adam
        beta1_power, beta2_power = (power.read_value() for power in powers)
        # The step size of every member, `[P]`.
        alpha = learning_rate * compiled_ops.sqrt(1 - beta2_power) / (
            1 - beta1_power)
        writes = [
            _assign_where(active, power, power.read_value() * rate)
            for power, rate in zip(powers, (beta1, beta2))]
        for variable, gradient in zip(variables, gradients):
            first, second = moments[variable]
            first_value = first + (gradient - first) * (1 - beta1)
            second_value = second + (tf.square(gradient) - second) * (
                1 - beta2)
            value = variable - first_value * _per_member(alpha, gradient) / (
                compiled_ops.sqrt(second_value) + epsilon)
            writes += [
                _assign_where(active, first, first_value),
                _assign_where(active, second, second_value),
                _assign_where(active, variable, value)]
        return writes


def _inner_axes(tensor):
    """The axes of a stacked tensor but the member axis."""
    return list(range(1, tensor.shape.ndims))


def _per_member(values, tensor):
    """Values `[P]` shaped to broadcast over a stacked tensor."""
    return tf.reshape(values, [-1] + [1] * (tensor.shape.ndims - 1))


def _assign_where(members, variable, value):
    """Assign `value` to the members' slices of a stacked variable."""
    old = variable.read_value()
    value = tf.broadcast_to(tf.cast(value, variable.dtype), tf.shape(old))
    return variable.assign(compiled_ops.where(members, value, old))
