"""A PPO update as one call of a `tf.function`, compiled by XLA by default.

The advantages, the plan of mini-batches (`parts.plan_sequences`) and the
loop over them run inside one function that the TF1 graph calls as an op
(`benchmarks/compiled_update.py` measures the gain of XLA). The shuffle keys
are drawn outside, so a seeded run repeats. A step whose loss or gradients
are not finite applies nothing and stops the loop; ops outside the call then
fail with the message of `tf.debugging.check_numerics`.
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

    Every place in the graph that updates calls one instance, so that calls
    with inputs of the same shapes share one traced function.
    """

    def __init__(self, prepare_fn, step_fn, names, plan_settings,
                 jit_compile=True):
        """Prepare the function; it is traced at the first call.

        Args:
          prepare_fn: Function of the update's inputs returning the
              sequences `[num, max_length, ...]`, their int32 lengths
              `[num]` and a dict of tensors the call returns as they are.
          step_fn: Function of a mini-batch and its int32 lengths returning
              a dict of float32 scalars (with `names`, `'loss'` and
              `'gradient_norm'`) and a boolean scalar, true where the loss
              and gradients were finite; it changes variables only then.
          names: Names of the statistics to average over the mini-batches.
          plan_settings: Keyword arguments of `parts.plan_sequences`.
          jit_compile: Whether XLA compiles the function.
        """
        self._prepare_fn = prepare_fn
        self._step_fn = step_fn
        self._names = list(names)
        self._plan_settings = dict(plan_settings)
        if jit_compile:
            self._function = compiled_ops.compiled_function(self._update)
        else:
            self._function = tf.function(self._update, autograph=False)

    @property
    def tracing_count(self):
        """How many times the function was traced."""
        return self._function.experimental_get_tracing_count()

    def __call__(self, inputs, shuffle_keys):
        """Prepare the sequences and run the step on every mini-batch.

        Args:
          inputs: Structure of tensors, the argument of `prepare_fn`.
          shuffle_keys: Float tensor `[num_epochs, parts.num_items(...)]`
              that shuffles the mini-batches of each epoch.

        Returns:
          Tuple of a dict from the names to the float32 mean of each
          statistic over the mini-batches (NaN without any) and the dict of
          `prepare_fn`. Evaluating the statistics fails with the message of
          `tf.debugging.check_numerics` on `'loss'` (or its gradient) where
          a step was not finite.
        """
        with tf.name_scope('compiled_update'):
            means, finite, loss, gradient_norm, extras = self._function(
                inputs, shuffle_keys)
            return _checked(
                self._names, means, finite, loss, gradient_norm), extras

    def _update(self, inputs, shuffle_keys):
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

    A step with a finite loss failed by a gradient, so their norm is not
    finite; the second check reports it.
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
