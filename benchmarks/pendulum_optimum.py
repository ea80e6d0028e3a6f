r"""The near-optimal return of Pendulum-v1, by dynamic programming.

Pendulum's state is two numbers (angle and angular velocity), so its
optimal 200-step return can be computed instead of guessed: backward value
iteration over a grid of states, with the exact Pendulum-v1 dynamics and
cost, bilinear interpolation between grid points and a set of evenly spaced
torques. The greedy policy of those values is then rolled out from random
starts (angle uniform in [-pi, pi], velocity uniform in [-1, 1], as the
environment resets) and the returns are printed: the mean over all starts
and the spread of the mean over sets of `--set_size` starts, the size of
one evaluation report of the `pendulum` config. Its returns bound what a
trained policy can score (up to the grid's resolution).

  python benchmarks/pendulum_optimum.py \
      --json=benchmarks/results/pendulum-optimum.json

An episode of gymnasium's Pendulum-v1 under the same policy checks the
dynamics against the environment.

With `--runs`, it also scores the optimum on the very evaluation episodes
of `benchmarks/learning.py --config=pendulum` runs of those seeds: their
environments (environment i of seed s seeded with s + i) reset once when
built and once per phase, each phase one full episode per agent, so the
evaluation episodes of report k begin in the states of their reset 2k + 2,
whatever the policy does. The optimum's "final" (the mean over the last
`--last` reports) is then what a trained policy could score there at best:

  python benchmarks/pendulum_optimum.py --runs=0,1,2 --agents=8 \
      --reports=62
"""

import os
import sys

from absl import app
from absl import flags
import gymnasium as gym
import numpy as np

# Run as a script, so make the repository importable.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from agents.training import provenance  # pylint: disable=wrong-import-position

FLAGS = flags.FLAGS
flags.DEFINE_integer('angles', 361, 'Grid points over the angle.')
flags.DEFINE_integer('velocities', 321, 'Grid points over the velocity.')
flags.DEFINE_integer('torques', 41, 'Torques to choose from.')
flags.DEFINE_integer('starts', 4000, 'Random starts to roll out.')
flags.DEFINE_integer('set_size', 16, 'Episodes of one evaluation report.')
flags.DEFINE_integer('seed', 0, 'Seed of the starts.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')
flags.DEFINE_list('runs', [], 'Seeds of pendulum runs whose evaluation '
                  'episodes to score the optimum on.')
flags.DEFINE_integer('agents', 16, 'Environments of those runs '
                     '(num_agents; one episode each per phase).')
flags.DEFINE_integer('reports', 31, 'Evaluation reports of those runs.')
flags.DEFINE_integer('last', 10, 'Reports that make up their final score.')

# Pendulum-v1's constants (gymnasium/envs/classic_control/pendulum.py).
_GRAVITY, _DT, _MAX_SPEED, _MAX_TORQUE, _STEPS = 10.0, 0.05, 8.0, 2.0, 200


def _wrap(angle):
    """Angle in [-pi, pi)."""
    return (angle + np.pi) % (2 * np.pi) - np.pi


def dynamics(angle, velocity, torque):
    """The next angle and velocity (unit mass and length)."""
    velocity = np.clip(
        velocity + (1.5 * _GRAVITY * np.sin(angle) + 3.0 * torque) * _DT,
        -_MAX_SPEED, _MAX_SPEED)
    return angle + velocity * _DT, velocity


def cost(angle, velocity, torque):
    """The cost of a step, whose negative is the reward."""
    return _wrap(angle) ** 2 + 0.1 * velocity ** 2 + 0.001 * torque ** 2


class GridValues:
    """Values of every step to go, over a grid of angles and velocities."""

    def __init__(self, angles, velocities, torques):
        """Run the backward value iteration over `_STEPS` steps."""
        self.torques = np.linspace(-_MAX_TORQUE, _MAX_TORQUE, torques)
        self._shape = angles, velocities
        angle, velocity = np.meshgrid(
            np.linspace(-np.pi, np.pi, angles, endpoint=False),
            np.linspace(-_MAX_SPEED, _MAX_SPEED, velocities), indexing='ij')
        # values[t]: the best return of the remaining steps from step t.
        values = [np.zeros(self._shape)]
        for _ in range(_STEPS):
            values.append(np.max([
                -cost(angle, velocity, torque) + self.value(
                    values[-1], *dynamics(angle, velocity, torque))
                for torque in self.torques], axis=0))
        self._values = values[::-1]

    def value(self, table, angle, velocity):
        """Bilinear interpolation of a value table at states."""
        angles, velocities = self._shape
        x = (_wrap(angle) + np.pi) / (2 * np.pi) * angles
        i0 = np.floor(x).astype(int) % angles
        i1 = (i0 + 1) % angles
        fx = x - np.floor(x)
        y = (velocity + _MAX_SPEED) / (2 * _MAX_SPEED) * (velocities - 1)
        j0 = np.clip(np.floor(y).astype(int), 0, velocities - 2)
        fy = np.clip(y - j0, 0.0, 1.0)
        return ((1 - fx) * (1 - fy) * table[i0, j0] +
                fx * (1 - fy) * table[i1, j0] +
                (1 - fx) * fy * table[i0, j0 + 1] +
                fx * fy * table[i1, j0 + 1])

    def act(self, step, angle, velocity):
        """The greedy torque at a step of the episode."""
        returns = [
            -cost(angle, velocity, torque) + self.value(
                self._values[step + 1], *dynamics(angle, velocity, torque))
            for torque in self.torques]
        return self.torques[np.argmax(returns, axis=0)]

    def rollout(self, angle, velocity):
        """Returns of greedy episodes from a batch of starts."""
        total = np.zeros_like(angle)
        for step in range(_STEPS):
            torque = self.act(step, angle, velocity)
            total -= cost(angle, velocity, torque)
            angle, velocity = dynamics(angle, velocity, torque)
        return total


def gymnasium_episode(values, seed):
    """Returns of one greedy episode in gymnasium's Pendulum-v1 and in the
    model, from the state the environment resets to with this seed."""
    env = gym.make('Pendulum-v1')
    env.reset(seed=seed)
    start = [np.array([part]) for part in env.unwrapped.state]
    total = 0.0
    for step in range(_STEPS):
        angle, velocity = env.unwrapped.state
        torque = values.act(step, np.array([angle]), np.array([velocity]))
        _, reward, _, _, _ = env.step(torque.astype(np.float32))
        total += float(reward)
    env.close()
    return total, values.rollout(*start)[0]


def evaluation_starts(seed, agents, reports):
    """Start states of the evaluation episodes of a pendulum run.

    Args:
      seed: Seed of the run; environment i is seeded with `seed + i`.
      agents: Environments of the run, each running one episode per phase.
      reports: Evaluation reports (each after one training phase).

    Returns:
      Arrays of angles and velocities, shaped [reports, agents].
    """
    angles = np.zeros((reports, agents))
    velocities = np.zeros((reports, agents))
    for index in range(agents):
        env = gym.make('Pendulum-v1').unwrapped
        env.reset(seed=seed + index)  # Reset when built.
        for report in range(reports):
            env.reset()  # The training phase.
            env.reset()  # The evaluation phase.
            angles[report, index], velocities[report, index] = env.state
        env.close()
    return angles, velocities


def score_runs(values, seeds, agents, reports, last):
    """The optimum's return on the evaluation episodes of pendulum runs.

    Returns:
      Dict from seeds to dicts of the per-report means and their final
      (the mean of the last `last` reports).
    """
    scored = {}
    for seed in seeds:
        angles, velocities = evaluation_starts(seed, agents, reports)
        means = values.rollout(angles.ravel(), velocities.ravel()).reshape(
            reports, agents).mean(1)
        scored[seed] = dict(
            reports=[float(mean) for mean in means],
            final=float(means[-last:].mean()))
        print(f'Run seed {seed}: the optimum\'s final (mean of the last '
              f'{last} of {reports} reports of {agents} episodes) '
              f'{scored[seed]["final"]:.1f}.')
    return scored


def main(argv):
    """Compute the values, roll them out, print and write the results."""
    del argv
    record = provenance.record()
    values = GridValues(FLAGS.angles, FLAGS.velocities, FLAGS.torques)
    rng = np.random.RandomState(FLAGS.seed)
    returns = values.rollout(
        rng.uniform(-np.pi, np.pi, FLAGS.starts),
        rng.uniform(-1.0, 1.0, FLAGS.starts))
    sets = returns[:len(returns) // FLAGS.set_size * FLAGS.set_size]
    sets = sets.reshape(-1, FLAGS.set_size).mean(1)
    in_gym, in_model = gymnasium_episode(values, FLAGS.seed)
    result = dict(
        mean=float(returns.mean()),
        std=float(returns.std()), starts=FLAGS.starts,
        set_size=FLAGS.set_size,
        set_mean_percentiles={
            str(q): float(np.percentile(sets, q)) for q in (10, 50, 90)},
        gymnasium_check=dict(gymnasium=in_gym, model=float(in_model)))
    print(f'Greedy policy of the grid values, {FLAGS.starts} starts: mean '
          f'return {result["mean"]:.1f} (std {result["std"]:.1f}).')
    print(f'Mean of {FLAGS.set_size} starts: 10th percentile '
          f'{np.percentile(sets, 10):.1f}, median {np.median(sets):.1f}, '
          f'90th percentile {np.percentile(sets, 90):.1f}.')
    print(f'Check, one episode: gymnasium {in_gym:.2f}, model '
          f'{in_model:.2f}.')
    if FLAGS.runs:
        result['runs'] = dict(
            agents=FLAGS.agents, reports=FLAGS.reports, last=FLAGS.last,
            seeds=score_runs(
                values, [int(seed) for seed in FLAGS.runs], FLAGS.agents,
                FLAGS.reports, FLAGS.last))
    if FLAGS.json:
        provenance.write_json(FLAGS.json, result, record)


if __name__ == '__main__':
    app.run(main)
