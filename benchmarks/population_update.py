r"""How fast can P members of a population take PPO's gradient steps?

The design question of a population axis (issue 37): P runs of one config
whose weights are stacked on a leading axis, each member computed by the
package's own network function (`config.network`, unchanged) under
`pfor`, against the same members as P separate subgraphs in one compiled
call, and against one member alone. Every variant takes `--steps`
gradient steps of `--batch` transitions per member through the `pendulum`
config's networks with `tf.train.AdamOptimizer` in one XLA-compiled loop.
The plain rate is a chain of [6400,128]x[128,128] matmuls under XLA on the
same machine; the table shows each variant's FLOP rate (forward and
backward counted as 3x the forward's 2*in*out per sample and layer) as a
share of it. Variants run in turn, round by round; medians.

    python benchmarks/population_update.py --members=1,4,16 --rounds=5 \
        --json=benchmarks/results/population_update.json
"""

import os
import statistics
import sys
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

# pylint: disable=wrong-import-position
from agents.training import provenance
from benchmarks import plain_matmul
# pylint: enable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_list('members', ['1', '4', '16'], 'Population sizes P.')
flags.DEFINE_list('layouts', ['pfor', 'subgraphs'],
                  'Layouts to measure for P > 1.')
flags.DEFINE_integer('rounds', 5, 'Timed calls of each variant, in turn.')
flags.DEFINE_integer('steps', 80, 'Gradient steps per call.')
flags.DEFINE_integer('batch', 400, 'Transitions per member and step.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')

_OBSERV = 3  # Pendulum-v1's observation size; one action dimension.


class _Variant:
    """A compiled loop of gradient steps for P members in one layout."""

    def __init__(self, members, layout):
        # pylint: disable=import-outside-toplevel
        import gymnasium as gym
        import numpy as np
        import tensorflow.compat.v1 as tf
        from tensorflow.python.ops.parallel_for import control_flow_ops
        from agents import tools
        from agents.scripts import configs
        from agents.tools import compiled_ops
        from agents.training import config_spec
        self.members, self.layout = members, layout
        config = config_spec.with_defaults(tools.AttrDict(configs.pendulum()))
        self.layers = (config.policy_layers, config.value_layers)
        space = gym.spaces.Box(-1, 1, (1,), np.float32)
        batch = FLAGS.batch
        start = time.perf_counter()
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(0)
            stacked = {}
            member = [None]

            def _getter(getter, name, shape=None, initializer=None, **kwargs):
                # Each variable has a member axis; a member reads its row.
                if name not in stacked:
                    stacked[name] = getter(
                        name + '_members', shape=[members] + list(shape),
                        initializer=lambda _, dtype=None, **__: tf.stack([
                            initializer(shape, dtype=dtype)
                            for _ in range(members)]),
                        **kwargs)
                variable = stacked[name]
                if member[0] is None:
                    return variable[0]
                return tf.gather(variable.value(), member[0])

            network = tf.make_template('network', lambda observ, length: (
                config.network(config, space, observ, length)))
            data = tf.Variable(tf.random.normal([members, batch, 1, _OBSERV]))
            length = tf.ones([batch], tf.int32)
            zeros = tf.zeros([batch, 1, 1])

            def _loss(index):
                member[0] = index
                with tf.variable_scope('population', custom_getter=_getter):
                    output = network(tf.gather(data.value(), index), length)
                return (tf.reduce_mean(output.value ** 2) +
                        tf.reduce_mean(output.policy.log_prob(zeros)))

            with tf.variable_scope('population', custom_getter=_getter):
                network(data[0], length)
            variables = list(stacked.values())
            optimizer = tf.train.AdamOptimizer(1e-4)

            def _step():
                if layout == 'pfor':
                    loss = tf.reduce_sum(control_flow_ops.pfor(
                        _loss, members, fallback_to_while_loop=False))
                else:
                    loss = tf.add_n([
                        _loss(tf.constant(index))
                        for index in range(members)])
                gradients = [
                    tf.convert_to_tensor(gradient)
                    for gradient in tf.gradients(loss, variables)]
                return optimizer.apply_gradients(zip(gradients, variables))

            _step()  # Creates the optimizer's slots outside the loop.

            def _loop():
                def _body(index):
                    with tf.control_dependencies([_step()]):
                        return index + 1
                return tf.while_loop(
                    lambda index: index < FLAGS.steps, _body, [0])

            self.run = compiled_ops.compiled_function(_loop)()
            initialize = tf.global_variables_initializer()
        self.session = tf.Session(graph=self.graph)
        self.session.run(initialize)
        self.session.run(self.run)
        self.startup = time.perf_counter() - start
        self.times = []

    def time_call(self):
        """Time one call of the compiled loop."""
        start = time.perf_counter()
        self.session.run(self.run)
        self.times.append(time.perf_counter() - start)

    def flops(self):
        """FLOP of one call: forward and backward of both networks."""
        return plain_matmul.training_flops(
            self.layers, _OBSERV, FLAGS.steps * self.members * FLAGS.batch)


def main(argv):
    """Measure every variant in turn and print the table."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    record = provenance.record()
    variants = []
    for members in (int(value) for value in FLAGS.members):
        layouts = ['single'] if members == 1 else FLAGS.layouts
        variants += [_Variant(members, layout) for layout in layouts]
    plain = plain_matmul.rate(FLAGS.rounds)
    for _ in range(FLAGS.rounds):
        for variant in variants:
            variant.time_call()
    plain = (plain + plain_matmul.rate(FLAGS.rounds)) / 2
    print(f'CPU: {provenance.cpu_model()}; plain matmul {plain:.1f} GFLOP/s')
    print('python benchmarks/population_update.py ' + ' '.join(sys.argv[1:]))
    print('| P | layout | start-up s | ms per call | ms per member | '
          'GFLOP/s | of plain |')
    print('| ---: | --- | ---: | ---: | ---: | ---: | ---: |')
    results = []
    for variant in variants:
        seconds = statistics.median(variant.times)
        rate = variant.flops() / seconds / 1e9
        result = dict(
            members=variant.members, layout=variant.layout,
            startup_s=round(variant.startup, 2),
            call_ms=round(seconds * 1e3, 1),
            member_ms=round(seconds * 1e3 / variant.members, 1),
            gflops=round(rate, 1), of_plain=round(rate / plain, 3),
            times_s=[round(value, 4) for value in variant.times])
        results.append(result)
        print(f"| {variant.members} | {variant.layout} | "
              f"{result['startup_s']:.1f} | {result['call_ms']:.0f} | "
              f"{result['member_ms']:.1f} | {rate:.1f} | "
              f"{rate / plain:.0%} |")
    if FLAGS.json:
        provenance.write_json(FLAGS.json, dict(
            plain_gflops=round(plain, 1), steps=FLAGS.steps,
            batch=FLAGS.batch, results=results), record)


if __name__ == '__main__':
    app.run(main)
