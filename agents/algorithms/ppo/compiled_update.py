"""A PPO update as one compiled (XLA) call.

The advantages and value targets, the plan of mini-batches of
`parts.plan_sequences` and the loop over them run inside one
`tf.function(jit_compile=True)` that the TF1 graph calls as an op: XLA fuses
the many small operations of the update, which in the plain graph cost more
than their arithmetic (`benchmarks/compiled_update.py`). The random keys of
the shuffle are drawn outside, so a seeded run repeats; inside are array
maths only. Where a step's loss or gradients are not finite, the step
applies nothing and the loop stops; the call returns a flag that ops outside
check, so the session run fails with the message of
`tf.debugging.check_numerics` that the plain update gives.
"""

import tensorflow.compat.v1 as tf

from agents import parts
from agents.tools import compiled_ops

# The prefix of the message of the gradient of `tf.debugging.check_numerics`,
# which the training script reads as 'the gradient of NAME'.
_GRADIENT_MESSAGE = (
    'Not a number (NaN) or infinity (Inf) values detected in gradient. ')


class CompiledUpdate:
    """Prepares an update's sequences and steps on their mini-batches.

    One instance serves every place in the graph that updates (PPO trains
    where episodes end and where rollouts are handed over): calls with
    inputs of the same shapes share one traced function, which XLA then
    compiles once.
    """

    def __init__(self, prepare_fn, step_fn, names, plan_settings):
        """Prepare the compiled function; it is traced at the first call.

        Args:
          prepare_fn: Function of the update's inputs (a structure of
              tensors) that returns the sequences to cut mini-batches from
              (a structure of tensors `[num, max_length, ...]`), their int32
              lengths `[num]`, and a dict of tensors the call returns as
              they are (what summaries show).
          step_fn: Function of a mini-batch (a structure like the
              sequences of tensors `[batch_size, steps, ...]`) and its int32
              lengths `[batch_size]`. It returns a dict of float32 scalars
              with at least the keys `names`, `'loss'` and
              `'gradient_norm'`, and a boolean scalar, true when the step's
              loss and gradients were finite; it may change variables only
              then. Both are available after its side effects.
          names: Names of the statistics to average over the mini-batches.
          plan_settings: Keyword arguments of `parts.plan_sequences`:
              `chunk_length`, `batch_size`, `num_epochs`, `padding_value`.
        """
        self._prepare_fn = prepare_fn
        self._step_fn = step_fn
        self._names = list(names)
        self._plan_settings = dict(plan_settings)
        self._function = compiled_ops.compiled_function(
            self._compiled_update)

    @property
    def tracing_count(self):
        """How many times the compiled function was traced."""
        return self._function.experimental_get_tracing_count()

    def __call__(self, inputs, shuffle_keys):
        """Prepare the sequences and run the step on every mini-batch.

        Args:
          inputs: Structure of tensors, the argument of `prepare_fn`.
          shuffle_keys: Float tensor `[num_epochs, parts.num_items(...)]`
              of the keys that shuffle the mini-batches of each epoch.

        Returns:
          Tuple of a dict from the names to the float32 mean of each
          statistic over the mini-batches (NaN without mini-batches) and
          the dict of tensors of `prepare_fn`. Evaluating the statistics
          fails with the message of `tf.debugging.check_numerics` on
          `'loss'` (or on its gradient) where a step was not finite; that
          step and those after it changed nothing.
        """
        with tf.name_scope('compiled_update'):
            means, finite, loss, gradient_norm, extras = self._function(
                inputs, shuffle_keys)
            return _checked(
                self._names, means, finite, loss, gradient_norm), extras

    def _compiled_update(self, inputs, shuffle_keys):
        """The sequences, then the mini-batches until one is not finite."""
        sequences, length, extras = self._prepare_fn(inputs)
        plan = parts.plan_sequences(
            sequences, length, shuffle_keys=shuffle_keys,
            **self._plan_settings)
        items, item_length = plan.items, plan.length
        batch_indices, num_batches = plan.batch_indices, plan.num_batches
        flat_items = tf.nest.flatten(items)

        def _condition(index, unused_totals, finite, unused_loss,
                       unused_norm):
            return tf.logical_and(index < num_batches, finite)

        def _step(index, totals, unused_finite, unused_loss, unused_norm):
            # Gathers of a statically shaped index array: slices bounded
            # by the loop index would recompile per value.
            indices = tf.gather(batch_indices, index)
            batch = tf.nest.pack_sequence_as(items, [
                tf.gather(values, indices) for values in flat_items])
            statistics, finite = self._step_fn(
                batch, tf.gather(item_length, indices))
            totals = [
                total + statistics[name]
                for total, name in zip(totals, self._names)]
            return (
                index + 1, totals, finite, statistics['loss'],
                statistics['gradient_norm'])

        initial = (
            tf.constant(0), [tf.constant(0.0)] * len(self._names),
            tf.constant(True), tf.constant(0.0), tf.constant(0.0))
        count, totals, finite, loss, gradient_norm = tf.while_loop(
            _condition, _step, initial, parallel_iterations=1)
        count = tf.cast(count, tf.float32)
        means = [total / count for total in totals]
        return means, finite, loss, gradient_norm, extras


def _checked(names, means, finite, loss, gradient_norm):
    """The statistics after checks that fail where the update was not finite.

    A step whose loss is finite failed by its gradients, one of which was
    then not finite, and so is their norm; the second check reports it.
    """
    zero = tf.constant(0.0)
    check_loss = tf.debugging.check_numerics(
        tf.where(finite, zero, loss), 'loss')
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
