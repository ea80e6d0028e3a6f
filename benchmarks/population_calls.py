r"""How long do a population's collect and update calls take per member?

P members of the `pendulum` config (`agents.training.population`)
against one single run of it, on the in-graph task, in one process: a
collect call of `--steps` batch steps that trains nothing, and the call
whose last step fills the memory, whose update is its time less a collect
call's. Before each timed update the variables go back to where they stood
before it. Single run and population take turns, round by round; medians.

    python benchmarks/population_calls.py --members=4 --rounds=5
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

FLAGS = flags.FLAGS
flags.DEFINE_integer('members', 4, 'Population size P.')
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
        self.sess.run(self.call)  # Compiles the update.

    def time_call(self, kind):
        """Seconds of a call from the state before it of `kind`."""
        with self.graph.as_default():
            for variable, value in zip(self.variables, self.states[kind]):
                variable.load(value, self.sess)
        start = time.perf_counter()
        self.made[kind] = self.sess.run(self.call) - self.states[kind][0]
        return time.perf_counter() - start


def main(unused_argv):
    """Build both, warm them up, time the calls in turn."""
    # pylint: disable=import-outside-toplevel
    import tensorflow.compat.v1 as tf
    from agents import tools
    from agents.scripts import configs
    tf.disable_eager_execution()
    config = tools.AttrDict(configs.pendulum())
    print('load:', os.getloadavg())
    runs = [_Run(config, None), _Run(config, FLAGS.members)]
    times = {(run.size, kind): [] for run in runs
             for kind in ('collect', 'update')}
    for _ in range(FLAGS.rounds):
        for run in runs:
            times[run.size, 'collect'].append(run.time_call('collect'))
            times[run.size, 'update'].append(
                run.time_call('update') - times[run.size, 'collect'][-1])
    print('agent steps of the calls:', [run.made for run in runs])
    for kind in ('collect', 'update'):
        single = statistics.median(times[1, kind])
        members = statistics.median(times[FLAGS.members, kind])
        print(f'{kind}: single run {single * 1000:.1f} ms, '
              f'{FLAGS.members} members {members * 1000:.1f} ms, per member '
              f'{members / FLAGS.members * 1000:.1f} ms = '
              f'{members / FLAGS.members / single:.2f}x the single run')
    print('load:', os.getloadavg())


if __name__ == '__main__':
    app.run(main)
