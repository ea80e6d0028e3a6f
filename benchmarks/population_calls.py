r"""How long do a population's collect and update calls take per member?

Populations of P members of the `pendulum` config
(`agents.training.population`) against one single run of it, on the
in-graph task, in one process: a collect call of `--steps` batch steps that
trains nothing, and the call whose last step fills the memory, whose update
is its time less a collect call's. Before each timed update the variables
go back to where they stood before it. Single run and populations take
turns, round by round; medians. The update's FLOP rate (forward and
backward of both networks, as `population_update.py` counts them) is shown
against a plain matmul chain's on the same machine.

    python benchmarks/population_calls.py --members=4,8,16 --rounds=5
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

# pylint: disable-next=wrong-import-position
from benchmarks import plain_matmul

FLAGS = flags.FLAGS
flags.DEFINE_list('members', ['4'], 'Population sizes P.')
flags.DEFINE_integer('rounds', 5, 'Timed calls of each kind, in turn.')
flags.DEFINE_integer('steps', 50, 'Batch steps of a collect call.')


class _Run:
    """A single run (`members` None) or a population, built and warm."""

    def __init__(self, config, members):
        # pylint: disable=import-outside-toplevel
        import tensorflow.compat.v1 as tf
        from agents.training import population
        self.size = members or 1
        self.graph = tf.Graph()
        steps = FLAGS.steps
        start = time.perf_counter()
        with self.graph.as_default():
            if members:
                run = population.Population(config, range(members))
                step = run.step
                made = run.collect(steps, tf.constant(10 ** 6))[0]
            else:
                tf.set_random_seed(0)
                switches, algo = population.build_member(config.copy(seed=0))
                step = switches.step
                made = algo.collect(steps, tf.constant(10 ** 6))[0]
            self.call = step.assign_add(
                tf.cast(made * config.num_agents, tf.int64))
            # The global step first.
            self.variables = [step] + [
                variable for variable in tf.global_variables()
                if variable is not step]
            self.made = {}
            self.sess = tf.Session(graph=self.graph)
            if members:
                run.initialize(self.sess)
            else:
                self.sess.run(tf.global_variables_initializer())
                self.sess.run(switches.is_training.assign(True))
        # Compile the collect call; stand where the next call trains
        # nothing, then one call before the update.
        self.sess.run(self.call)
        self.states = {'collect': self.sess.run(self.variables)}
        while self.sess.run(step) < (
                config.max_length - steps) * config.num_agents:
            self.sess.run(self.call)
        self.states['update'] = self.sess.run(self.variables)
        compile_start = time.perf_counter()
        self.sess.run(self.call)  # Compiles the update.
        self.compile_s = time.perf_counter() - compile_start
        self.build_s = compile_start - start
        self.times = {'collect': [], 'update': []}

    def time_calls(self):
        """Time a collect call, and an update call less the collect's."""
        collect = self._time_call('collect')
        self.times['collect'].append(collect)
        self.times['update'].append(self._time_call('update') - collect)

    def _time_call(self, kind):
        """Seconds of a call from the state before it of `kind`."""
        with self.graph.as_default():
            for variable, value in zip(self.variables, self.states[kind]):
                variable.load(value, self.sess)
        start = time.perf_counter()
        self.made[kind] = self.sess.run(self.call) - self.states[kind][0]
        return time.perf_counter() - start


def _update_flops(config):
    """FLOP of one member's update: its gradient steps through both
    networks."""
    return plain_matmul.training_flops(
        (config.policy_layers, config.value_layers), 3,  # Pendulum-v1's.
        config.update_every * config.max_length * config.update_epochs)


def main(unused_argv):
    """Build all, warm them up, time the calls in turn."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents import tools
    from agents.scripts import configs
    tf.disable_eager_execution()
    config = tools.AttrDict(configs.pendulum())
    print('load:', os.getloadavg())
    runs = [_Run(config, None)] + [
        _Run(config, int(members)) for members in FLAGS.members]
    plain = plain_matmul.rate(FLAGS.rounds)
    for _ in range(FLAGS.rounds):
        for run in runs:
            run.time_calls()
    plain = (plain + plain_matmul.rate(FLAGS.rounds)) / 2
    print('agent steps of the calls:', [run.made for run in runs])
    print(f'plain matmul {plain:.1f} GFLOP/s; a member\'s update '
          f'{_update_flops(config) / 1e9:.2f} GFLOP')
    print('python benchmarks/population_calls.py ' + ' '.join(sys.argv[1:]))
    print('| P | build s | compile s | collect ms per member | x single | '
          'update ms per call | ms per member | x single | GFLOP/s | '
          'of plain |')
    print('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: '
          '| ---: |')
    single = {kind: statistics.median(times)
              for kind, times in runs[0].times.items()}
    for run in runs:
        collect, update = (
            statistics.median(run.times[kind]) / run.size
            for kind in ('collect', 'update'))
        rate = _update_flops(config) / update / 1e9
        print(f'| {run.size} | {run.build_s:.1f} | {run.compile_s:.1f} | '
              f'{collect * 1e3:.1f} | {collect / single["collect"]:.2f} | '
              f'{update * run.size * 1e3:.0f} | {update * 1e3:.1f} | '
              f'{update / single["update"]:.2f} | {rate:.1f} | '
              f'{rate / plain:.0%} |')
    print('load:', os.getloadavg())


if __name__ == '__main__':
    app.run(main)
