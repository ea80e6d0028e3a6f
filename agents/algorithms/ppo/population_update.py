"""The update of a population: every member whose memory is full trains on
it in one compiled call, a block of members after another, each block
carrying its weights and Adam's moments as tensors through its epochs: the
mini-batch losses under `pfor` over the block's members, gradients clipped
and Adam steps taken per member."""

import collections

import tensorflow.compat.v1 as tf
from tensorflow.python.ops.parallel_for import control_flow_ops

from agents import parts
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import ppo_update
from agents.algorithms.ppo import stacked_variable
from agents.tools import compiled_ops
from agents.tools import sliced_batch_env

# Members trained together under `pfor`, a block after another: per member,
# more of them run slower once their activations leave the caches, and
# fewer pay more for each op (docs/performance.md).
_BLOCK = 4

# Weights and Adam's moments by weight, and powers of its decay rates, of
# members stacked on the leading axis.
_AdamState = collections.namedtuple(
    '_AdamState', 'weights, firsts, seconds, powers')


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
            # A scalar where not decayed.
            learning_rate = tf.broadcast_to(
                algo._learning_rate(), [self.size])
        finite, penalty = self._updated(
            tf.stack(keys), due, learning_rate, list(self._adam[1]))
        checks = self._finite_checks(tf.logical_and(
            due, tf.logical_not(finite)))
        with view(stacked_variable.WHOLE), tf.control_dependencies(checks):
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

    def _finite_checks(self, failed):
        """Checks that fail, naming the first member that `failed` (bool
        `[P]`: its loss or gradients were not finite, and it took no step
        since), with the message of `tf.debugging.check_numerics`."""
        checks = []
        for member, name in enumerate(self.names):
            with tf.control_dependencies(checks):
                checks = [tf.debugging.check_numerics(
                    tf.where(failed[member], float('nan'), 0.0),
                    f'the loss or gradients of member {name}')]
        return checks

    def _updated(self, shuffle_keys, due, learning_rate, variables):
        """Train every member due and write its weights and Adam's state;
        whether each is finite, the penalties. Groups of members, one per
        core, train in calls of one compiled function that run at the same
        time: they take the variables' values, not the variables, which an
        XLA call holds locked until it ends."""
        # pylint: disable=protected-access
        groups = min(self.size, sliced_batch_env.available_cpus())
        group_size = -(-self.size // groups)
        _, moments, powers = self._adam
        before = {variable.ref(): variable.read_value()
                  for variable in tf.global_variables()}
        state = _AdamState(
            tuple(before[variable.ref()] for variable in variables),
            tuple(before[moments[variable][0].ref()]
                  for variable in variables),
            tuple(before[moments[variable][1].ref()]
                  for variable in variables),
            tuple(before[power.ref()] for power in powers))

        def _group_update(first):
            return self._update(
                first, group_size, before, state, shuffle_keys, due,
                learning_rate, variables)

        # As a single run's update (`compile_update`): XLA, or TensorFlow's
        # kernels for comparison.
        update = (compiled_ops.compiled_function(_group_update)
                  if self._config.compile_update else
                  tf.function(_group_update, autograph=False))
        outputs = [update(tf.constant(first))
                   for first in range(0, self.size, group_size)]
        # The last group repeats the last member where P is no multiple of
        # its size; only the first copy is kept.
        finite, penalty, state = tf.nest.map_structure(
            lambda *groups: tf.concat(groups, 0)[:self.size], *outputs)
        writes = [
            variable.assign(value) for variable, value in zip(
                list(variables) + [
                    moments[variable][index] for index in (0, 1)
                    for variable in variables] + list(powers),
                tf.nest.flatten(state))]
        with tf.control_dependencies(writes):
            return tf.identity(finite), tf.identity(penalty)

    def _update(self, first, size, before, state, shuffle_keys, due,
                learning_rate, variables):
        """The epochs of the `size` members from `first` (those due), a
        block of them after another, from the variables' values `before`
        (by `ref()`) and the members' `_AdamState`; whether each is finite,
        their penalties and `_AdamState`."""
        # pylint: disable=protected-access
        block = min(_BLOCK, size)
        group = tf.minimum(first + tf.range(size), self.size - 1)
        due, learning_rate, penalty, state = stacked_variable.member_of(
            (due, learning_rate, before[self.algo._penalty.stacked.ref()],
             state), group)

        def _block(start, finite, penalty, state):
            # The last block repeats the group's last member where its size
            # is no multiple of the block; only the first copy is kept.
            local = tf.minimum(start + tf.range(block), size - 1)
            trained = self._train_block(
                tf.gather(group, local), shuffle_keys,
                tf.gather(due, local), tf.gather(learning_rate, local),
                stacked_variable.member_of((penalty, state), local),
                variables, before)
            position = tf.range(size) - start
            taken = tf.logical_and(position >= 0, position < block)
            position = tf.clip_by_value(position, 0, block - 1)
            return (start + block,) + tf.nest.map_structure(
                lambda whole, own: compiled_ops.where(
                    taken, tf.gather(own, position), whole),
                (finite, penalty, state), trained)

        _, finite, penalty, state = tf.while_loop(
            lambda start, *unused: start < size, _block,
            (tf.constant(0), tf.ones([size], tf.bool), penalty, state),
            parallel_iterations=1)
        return finite, penalty, state

    def _train_block(self, members, shuffle_keys, due, learning_rate,
                     own, variables, before):
        """The epochs of a block of `members` (int32 `[B]`) from their
        penalties and `_AdamState` `own` and the variables' values `before`
        the update; whether each is finite, their penalties and
        `_AdamState` after."""
        # pylint: disable=protected-access
        algo, block = self.algo, members.shape[0]
        own_penalty, state = own
        # In a loop: `pfor` turns the returns' `tf.scan` into lists of
        # variants, which XLA refuses.
        plan, kl_inputs = self._looped(lambda member: (
            algo._update_plan(self._memory_inputs(), tf.gather(
                shuffle_keys, member))[0],
            self._memory_inputs(penalty=True)), members, before)

        # The loop carries each member's weights and moments as one vector:
        # Adam's step is then a few fused ops, not a few per weight.
        shapes = [weight.shape[1:] for weight in state.weights]

        def _values(state):
            # What the members' code reads: weights, penalties, config values.
            return dict(zip(
                [variable.ref() for variable in variables] + [
                    algo._penalty.stacked.ref()],
                _unflattened(state.weights[0], shapes) + (
                    own_penalty,))) | self._constants(members)

        def _running(index, finite, unused_state):
            return tf.reduce_any(self._active(plan, due, finite, index))

        def _step(index, finite, state):
            active = self._active(plan, due, finite, index)
            values = _values(state)

            def _loss_and_gradients(member):
                # The gradients of each member's loss by its own weights,
                # inside `pfor`: differentiating its output instead would
                # make XLA take the whole plan as compile-time constants,
                # and compile the update again at every call.
                own = {ref: tf.gather(value, member)
                       for ref, value in values.items()}
                indices = tf.gather(tf.gather(
                    plan.batch_indices, member), index)
                batch = tf.nest.map_structure(
                    lambda values: tf.gather(tf.gather(values, member),
                                             indices), plan.items)
                with stacked_variable.member_view(stacked_variable.WHOLE,
                                                  own):
                    with compiled_ops.tracing_population():
                        loss = algo._step_loss(batch, tf.gather(tf.gather(
                            plan.length, member), indices))[0]
                weights = [own[variable.ref()] for variable in variables]
                return loss, [
                    tf.convert_to_tensor(gradient)
                    for gradient in tf.gradients(loss, weights)]

            losses, gradients = _pfor(
                _loss_and_gradients, block, self._recurrent())
            gradients, member_finite = self._clipped(
                members, losses, [_flattened(gradients)])
            state = self._adam_step(
                state, gradients, learning_rate,
                tf.logical_and(active, member_finite))
            return index + 1, tf.logical_and(finite, tf.logical_or(
                member_finite, tf.logical_not(active))), state

        state = _AdamState(*(
            (_flattened(tensors),) for tensors in state[:3]), state.powers)
        _, finite, state = tf.while_loop(
            _running, _step, (tf.constant(0), tf.ones([block], tf.bool),
                              state), parallel_iterations=1)
        penalty = self._pfor(
            lambda member: algo._adapted_penalty(algo._measure_kl(
                *stacked_variable.member_of(kl_inputs, member))[2]),
            block, _values(state), self._recurrent())
        return finite, penalty, _AdamState(*(
            _unflattened(tensors[0], shapes) for tensors in state[:3]),
            state.powers)

    def _constants(self, members):
        """The values of the config keys that the members set apart (see
        `members_config`), of the int32 `members`, by key (`member_view`)."""
        with stacked_variable.member_view(members):
            return {constant: constant.read_value()
                    for constant in self.variant_values}

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

    def _looped(self, member_fn, members=None, values=None):
        """`member_fn(member)` of every member (or of the int32 `members`,
        reading `values`, see `member_view`), one after another in a loop,
        stacked: compiled once, for what `pfor` cannot vectorize (random
        draws keyed per member, `tf.scan`)."""
        members = tf.range(self.size) if members is None else members

        def _member(member):
            with stacked_variable.member_view(member, values):
                return member_fn(member)

        # Traced once: the loop's body, which tells its outputs' structure,
        # dtypes and shapes (a loop traces its body only once told them).
        traced = tf.function(_member, autograph=False).get_concrete_function(
            tf.TensorSpec([], tf.int32))
        return tf.map_fn(traced, members, fn_output_signature=(
            tf.nest.map_structure(
                tf.TensorSpec.from_tensor, traced.structured_outputs)))

    def _pfor(self, member_fn, size=None, values=None, unroll=False):
        """`member_fn(member)` of every member, stacked by `pfor` (or
        `unroll`ed, see `_pfor`); of `size` members reading `values` (see
        `member_view`) where given."""

        def _member(member):
            with stacked_variable.member_view(member, values):
                with compiled_ops.tracing_population():
                    return member_fn(member)

        return _pfor(_member, size or self.size, unroll)

    def _recurrent(self):
        """Whether the members' network is recurrent."""
        return self.algo._last_state is not None  # pylint: disable=W0212

    @staticmethod
    def _active(plan, due, finite, index):
        """The members that take the mini-batch step `index`."""
        return tf.logical_and(
            tf.logical_and(due, finite), index < plan.num_batches)

    def _clipped(self, members, losses, gradients):
        """The gradients of the int32 `members` `[B]` clipped by each
        member's norm, and the members whose loss and gradients are
        finite."""
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
        with stacked_variable.member_view(members):
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

    def _adam_step(self, state, gradients, learning_rate, active):
        """Adam's step (as TensorFlow's kernel computes it) of the members
        `active` from the `_AdamState`; the `_AdamState` after."""
        (beta1, beta2, epsilon), _, _ = self._adam
        beta1_power, beta2_power = state.powers
        # The step size of every member, `[B]`.
        alpha = learning_rate * compiled_ops.sqrt(1 - beta2_power) / (
            1 - beta1_power)
        after = ([], [], [])
        for weight, first, second, gradient in zip(
                state.weights, state.firsts, state.seconds, gradients):
            first_value = first + (gradient - first) * (1 - beta1)
            second_value = second + (tf.square(gradient) - second) * (
                1 - beta2)
            value = weight - first_value * _per_member(alpha, gradient) / (
                compiled_ops.sqrt(second_value) + epsilon)
            for values, new, old in zip(
                    after, (value, first_value, second_value),
                    (weight, first, second)):
                values.append(compiled_ops.where(active, new, old))
        powers = tuple(
            compiled_ops.where(active, power * rate, power)
            for power, rate in zip(state.powers, (beta1, beta2)))
        return _AdamState(*(tuple(values) for values in after), powers)


def _pfor(member_fn, size, unroll=False):
    """`pfor` of `member_fn` over `size` members, which AutoGraph leaves as
    it is: it has no control flow to convert, and converting the member
    code of a step took seconds. With `unroll`, the members one after
    another instead, stacked: the `tf.scan` of a recurrent network becomes
    lists of variants under `pfor`, which XLA refuses."""
    if unroll:
        return tf.nest.map_structure(
            lambda *tensors: tf.stack(tensors),
            *[member_fn(tf.constant(member)) for member in range(size)])
    return control_flow_ops.pfor(
        tf.autograph.experimental.do_not_convert(member_fn), size,
        fallback_to_while_loop=False)


def _flattened(tensors):
    """Stacked tensors `[B, ...]` as one `[B, N]`."""
    return tf.concat([
        tf.reshape(tensor, [tensor.shape[0], -1]) for tensor in tensors], 1)


def _unflattened(flat, shapes):
    """The stacked tensors of the member shapes that `_flattened` joined."""
    pieces = tf.split(flat, [shape.num_elements() for shape in shapes], 1)
    return tuple(
        tf.reshape(part, [flat.shape[0]] + shape.as_list())
        for part, shape in zip(pieces, shapes))


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
