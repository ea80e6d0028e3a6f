"""Tests for function_cond: tf.cond's results without its untaken nodes."""

import tensorflow.compat.v1 as tf

from agents.tools import conditionals


def _executed_nodes(sess, fetch, feed):
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    metadata = tf.RunMetadata()
    sess.run(fetch, feed, options=options, run_metadata=metadata)
    return sum(len(device.node_stats)
               for device in metadata.step_stats.dev_stats)


def _define(cond_fn, pred, variables, counter):
    """A branch that reads and updates many variables, and one that not."""

    def _large():
        total = tf.add_n([variable.read_value() for variable in variables])
        with tf.control_dependencies([counter.assign_add(1)]):
            return tf.identity(total)

    return cond_fn(pred, _large, lambda: tf.constant(-1.0))


def test_same_results_and_side_effects_as_tf_cond():
    """Only the taken branch runs, and its side effects happen."""
    with tf.Graph().as_default():
        pred = tf.placeholder(tf.bool, ())
        variables = [tf.Variable(float(index)) for index in range(20)]
        counter = tf.Variable(0)
        result = _define(
            conditionals.function_cond, pred, variables, counter)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(result, {pred: False}) == -1
            assert sess.run(counter) == 0
            assert sess.run(result, {pred: True}) == sum(range(20))
            assert sess.run(result, {pred: True}) == sum(range(20))
            assert sess.run(counter) == 2


def test_untaken_branch_executes_no_nodes_of_its_own():
    """The false case runs fewer nodes than a lowered `tf.cond`, whose
    Switch nodes run for every captured variable."""
    counts = {}
    for name, cond_fn in (('lowered', tf.cond),
                          ('function', conditionals.function_cond)):
        with tf.Graph().as_default():
            pred = tf.placeholder(tf.bool, ())
            variables = [tf.Variable(float(index)) for index in range(20)]
            counter = tf.Variable(0)
            result = _define(cond_fn, pred, variables, counter)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                counts[name] = _executed_nodes(sess, result, {pred: False})
    # The lowered cond switches each of the 21 variables.
    assert counts['lowered'] - counts['function'] >= 20, counts


def test_nested_structures_and_plain_tensors():
    """Outputs may be nested; each If behind them is kept as a function."""
    with tf.Graph().as_default():
        pred = tf.placeholder(tf.bool, ())
        first, second = conditionals.function_cond(
            pred, lambda: (tf.constant(1), tf.constant(2.0)),
            lambda: (tf.constant(3), tf.constant(4.0)))
        ops = [op for op in tf.get_default_graph().get_operations()
               if op.type in ('If', 'StatelessIf')]
        assert len(ops) == 1
        assert not ops[0].get_attr('_lower_using_switch_merge')
        with tf.Session() as sess:
            assert sess.run([first, second], {pred: True}) == [1, 2.0]
            assert sess.run([first, second], {pred: False}) == [3, 4.0]
