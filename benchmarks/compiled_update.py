r"""Milliseconds per PPO update, compiled (XLA) against plain graph ops.

For each config (`pendulum`, `cheetah`), builds two graphs that differ only
in `compile_update`: PPO over a batch of `tools.MockEnvironment`s with the
task's observation and action sizes, episode lengths and agents, so the
update sees the memory shapes, chunks, mini-batches and epochs of training
(pendulum: 8 episodes of 200 steps, chunks of 50, 20 epochs of 4
mini-batches of 8 chunks, 128x128 networks; cheetah: 2 agents' rollouts of
256 steps, single steps, 20 epochs of 8 mini-batches of 64, 256x256). Each
round runs one update cycle of each graph in turn (the batch steps up to
and including the one that trains), alternating which goes first; an
update costs its call minus the median call of its cycle. The first cycle
of the compiled graph holds XLA's compilation: its update minus the median
update is the compile time. The mock environments step in this process
through `numpy_function`, as the inprocess env mode does. A third graph,
the floor, runs the arithmetic of an update alone (as many mini-batch
steps of two bare MLPs, forward, backward, clipping and Adam, in one XLA
loop; see `_Floor`) in turn with the other two.

    python benchmarks/compiled_update.py --rounds=9 \
        --json=benchmarks/results/compiled_update.json
    python benchmarks/compiled_update.py --rounds=9 --layers=64,64 \
        --json=benchmarks/results/compiled_update_64x64.json
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

from agents.training import provenance  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_list('configs', ['pendulum', 'cheetah'], 'Configs to measure.')
flags.DEFINE_integer('rounds', 7, 'Update cycles of each variant, '
                     'alternating.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_list('layers', None, 'Hidden sizes of both networks instead '
                  "of the config's, e.g. 64,64.")

# Per config: observation and action sizes of the task, the episode length
# of the mock, and the batch steps from one update to the next.
_SHAPES = {
    'pendulum': dict(observ=3, action=1, duration=200, period=200),
    # Rollouts of 256 steps of 2 agents fill the 512 steps of an update;
    # episodes of 1,024 steps end with a rollout.
    'cheetah': dict(observ=17, action=6, duration=1024, period=256),
}


class _Variant:
    """One PPO graph and its session, timed cycle by cycle."""

    def __init__(self, name, compile_update):
        # pylint: disable=import-outside-toplevel
        import tensorflow.compat.v1 as tf
        from agents import tools
        from agents.scripts import configs
        self.compile_update = compile_update
        shapes = _SHAPES[name]
        self.period = shapes['period']
        config = tools.AttrDict(getattr(configs, name)())
        with config.unlocked:
            config.compile_update = compile_update
            if FLAGS.layers:
                config.policy_layers = config.value_layers = tuple(
                    int(size) for size in FLAGS.layers)
        self.graph = tf.Graph()
        start = time.perf_counter()
        with self.graph.as_default():
            tf.set_random_seed(0)
            envs = [
                tools.wrappers.ClipAction(tools.MockEnvironment(
                    observ_shape=(shapes['observ'],),
                    action_shape=(shapes['action'],),
                    durations=(shapes['duration'],)))
                for _ in range(config.num_agents)]
            batch_env = tools.InGraphBatchEnv(tools.BatchEnv(envs, True))
            step = tf.Variable(0, trainable=False, dtype=tf.int64)
            algo = config.algorithm(
                batch_env, step, tf.Variable(True, trainable=False),
                tf.Variable(False, trainable=False), config)
            done, _, _ = tools.simulate(  # pylint: disable=not-callable
                batch_env, algo, log=False)
            self.sess = tf.Session()
            self.sess.run(tf.global_variables_initializer())
            self.call = self.sess.make_callable(done)
        self.build_seconds = time.perf_counter() - start
        self.updates = []
        self.first_update = None

    def cycle(self):
        """Run to the end of the next update; record its milliseconds."""
        times = []
        for _ in range(self.period):
            start = time.perf_counter()
            self.call()
            times.append(time.perf_counter() - start)
        update = (times[-1] - statistics.median(times)) * 1e3
        if self.first_update is None:
            self.first_update = update
        else:
            self.updates.append(update)


class _Floor:
    """The arithmetic of an update alone: the floor of its time.

    As many mini-batch steps as an update of the config takes, on as many
    transitions each, in one compiled (XLA) loop: two MLPs of the config's
    hidden sizes (policy and value) forward and backward, a squared loss,
    gradients clipped by their global norm, Adam. No advantages, masks,
    distributions or statistics: what PPO's step costs beyond this is ours
    to cut; this much every implementation on this CPU pays.
    """

    def __init__(self, name):
        # pylint: disable=import-outside-toplevel
        import numpy as np
        import tensorflow.compat.v1 as tf
        from agents import tools
        from agents.scripts import configs
        shapes = _SHAPES[name]
        config = tools.AttrDict(getattr(configs, name)())
        layers = tuple(int(size) for size in FLAGS.layers or ()) or None
        transitions = shapes['period'] * config.num_agents
        minibatch = config.batch_size * (config.chunk_length or 1)
        self.steps = config.update_epochs * -(-transitions // minibatch)
        self.minibatch = minibatch
        self.graph = tf.Graph()
        with self.graph.as_default():
            tf.set_random_seed(0)
            networks = [
                _floor_mlp(tf, f'net{index}', [shapes['observ']] + list(
                    layers or sizes) + [outputs])
                for index, (sizes, outputs) in enumerate((
                    (config.policy_layers, shapes['action']),
                    (config.value_layers, 1)))]
            variables = [
                var for net in networks for pair in net for var in pair]
            optimizer = tf.train.AdamOptimizer(1e-4)
            data = tf.constant(np.random.RandomState(0).normal(size=[
                self.steps, minibatch, shapes['observ']]).astype(np.float32))

            def _loop(data):
                def _step(index, total):
                    inputs = tf.gather(data, index)
                    with tf.GradientTape() as tape:
                        loss = sum(
                            tf.reduce_mean(_floor_apply(tf, net, inputs) ** 2)
                            for net in networks)
                    gradients, _ = tf.clip_by_global_norm(
                        tape.gradient(loss, variables), 0.5)
                    with tf.control_dependencies([optimizer.apply_gradients(
                            zip(gradients, variables))]):
                        return index + 1, total + loss
                return tf.while_loop(
                    lambda index, _: index < self.steps, _step,
                    [tf.constant(0), tf.constant(0.0)])[1]

            self.update = tf.function(
                _loop, jit_compile=True, autograph=False)(data)
            self.sess = tf.Session()
            self.sess.run(tf.global_variables_initializer())
            self.sess.run(self.update)
        self.updates = []

    def cycle(self):
        """Run one update's steps; record their milliseconds."""
        start = time.perf_counter()
        self.sess.run(self.update)
        self.updates.append((time.perf_counter() - start) * 1e3)


def _floor_mlp(tf, name, sizes):
    """Weights and biases of an MLP of the given layer sizes."""
    with tf.variable_scope(name):
        return [
            (tf.get_variable(f'kernel_{index}', [size_in, size_out]),
             tf.get_variable(f'bias_{index}', [size_out],
                             initializer=tf.zeros_initializer()))
            for index, (size_in, size_out) in enumerate(
                zip(sizes[:-1], sizes[1:]))]


def _floor_apply(tf, net, inputs):
    """The MLP's output: ReLU hidden layers, a linear last one."""
    for kernel, bias in net[:-1]:
        inputs = tf.nn.relu(tf.matmul(inputs, kernel) + bias)
    kernel, bias = net[-1]
    return tf.matmul(inputs, kernel) + bias


def measure(name, rounds):
    """Interleaved update cycles of the plain and compiled graphs."""
    plain = _Variant(name, False)
    compiled = _Variant(name, True)
    floor = _Floor(name)
    for index in range(rounds + 1):
        order = (plain, compiled) if index % 2 else (compiled, plain)
        for variant in order + (floor,):
            variant.cycle()
    plain_ms = statistics.median(plain.updates)
    compiled_ms = statistics.median(compiled.updates)
    floor_ms = statistics.median(floor.updates[1:])
    return dict(
        config=name, rounds=rounds, layers=FLAGS.layers,
        plain_ms=round(plain_ms, 2), compiled_ms=round(compiled_ms, 2),
        speedup=round(plain_ms / compiled_ms, 2),
        floor_ms=round(floor_ms, 2), floor_steps=floor.steps,
        floor_minibatch=floor.minibatch,
        compile_seconds=round((compiled.first_update - compiled_ms) / 1e3, 2),
        plain_first_ms=round(plain.first_update, 2),
        plain_all_ms=[round(value, 2) for value in plain.updates],
        compiled_all_ms=[round(value, 2) for value in compiled.updates],
        build_seconds=dict(
            plain=round(plain.build_seconds, 2),
            compiled=round(compiled.build_seconds, 2)))


def main(argv):
    """Measure every config and print the table."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    record = provenance.record()
    results = [measure(name, FLAGS.rounds) for name in FLAGS.configs]
    command = 'python benchmarks/compiled_update.py ' + ' '.join(
        sys.argv[1:])
    print(f'$ {command}')
    print('| config | plain ms/update | compiled ms/update | speedup | '
          'compile s | floor ms/update | compiled / floor |')
    print('| --- | --- | --- | --- | --- | --- | --- |')
    for result in results:
        print(f"| {result['config']} | {result['plain_ms']:.1f} | "
              f"{result['compiled_ms']:.1f} | {result['speedup']:.2f}x | "
              f"{result['compile_seconds']:.1f} | {result['floor_ms']:.1f} | "
              f"{result['compiled_ms'] / result['floor_ms']:.2f}x |")
    if FLAGS.json:
        provenance.write_json(FLAGS.json, dict(results=results), record)


if __name__ == '__main__':
    app.run(main)
