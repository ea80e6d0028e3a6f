"""The mini-batch steps of a PPO update as one compiled (XLA) call.

The loop over the mini-batches of `parts.plan_sequences` runs inside one
`tf.function(jit_compile=True)` that the TF1 graph calls as an op: XLA fuses
the many small operations of a step, which in the plain graph cost more than
their arithmetic (`benchmarks/compiled_update.py`). The plan, with its
random shuffle, is made outside, so a seeded run repeats; inside are array
maths only. Where a step's loss or gradients are not finite, the step
applies nothing and the loop stops; the call returns a flag that ops outside
check, so the session run fails with the message of
`tf.debugging.check_numerics` that the plain update gives.
"""

import tensorflow.compat.v1 as tf

# The prefix of the message of the gradient of `tf.debugging.check_numerics`,
# which the training script reads as 'the gradient of NAME'.
_GRADIENT_MESSAGE = (
    'Not a number (NaN) or infinity (Inf) values detected in gradient. ')


class CompiledUpdate:
    """Runs a step on every mini-batch of a plan in one compiled call.

    One instance serves every place in the graph that updates (PPO trains
    where episodes end and where rollouts are handed over): calls with
    plans of the same shapes share one traced function, which XLA then
    compiles once.
    """

    def __init__(self, step_fn, names):
        """Prepare the compiled function; it is traced at the first call.

        Args:
          step_fn: Function of a mini-batch (a structure like the plan's
              items of tensors `[batch_size, steps, ...]`) and its int32
              lengths `[batch_size]`. It returns a dict of float32 scalars
              with at least the keys `names`, `'loss'` and
              `'gradient_norm'`, and a boolean scalar, true when the step's
              loss and gradients were finite; it may change variables only
              then. Both are available after its side effects.
          names: Names of the statistics to average over the mini-batches.
        """
        self._step_fn = step_fn
        self._names = list(names)
        self._function = tf.function(
            self._compiled_update, jit_compile=True)

    @property
    def tracing_count(self):
        """How many times the compiled function was traced."""
        return self._function.experimental_get_tracing_count()

    def __call__(self, plan):
        """Run the step on every mini-batch of a plan.

        Args:
          plan: `parts.SequencePlan` of the items and mini-batches.

        Returns:
          Dict from the names to the float32 mean of each statistic over
          the mini-batches (NaN without mini-batches). Evaluating it fails
          with the message of `tf.debugging.check_numerics` on `'loss'` (or
          on its gradient) where a step was not finite; that step and those
          after it changed nothing.
        """
        with tf.name_scope('compiled_update'):
            means, finite, loss, gradient_norm = self._function(
                plan.items, plan.length, plan.batch_indices,
                plan.num_batches)
            return _checked(self._names, means, finite, loss, gradient_norm)

    def _compiled_update(self, items, item_length, batch_indices,
                         num_batches):
        """The loop over the mini-batches, until one is not finite."""
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
        return means, finite, loss, gradient_norm


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
