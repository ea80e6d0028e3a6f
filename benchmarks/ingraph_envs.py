r"""In-graph classic-control tasks against gymnasium through numpy_function.

For every task of `agents.environments.TASKS`, with `--num_envs`
environments and random actions:

- ingraph: `--steps` batch steps (act, step, end and begin episodes) in one
  `tf.while_loop` inside one `tf.function(jit_compile=True)` per session
  call, over the state variables of an `InGraphTaskBatch`;
- gymnasium: one batch step of gymnasium environments (`gym.make`, so with
  their wrappers and time limits, reset where an episode ended) per session
  call, through `tf.numpy_function`, as Python environments run today.

The variants run in interleaved blocks; the table shows medians of the
microseconds per batch step, environment steps per second, the ratio, and
the seconds of the first (compiling) call.

    python benchmarks/ingraph_envs.py \
        --json=benchmarks/results/ingraph_envs.json
"""

import os
import statistics
import sys
import time

# Run as a script, so make the repository importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')

# pylint: disable=wrong-import-position
from absl import app
from absl import flags
import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents import environments
from agents.training import provenance

FLAGS = flags.FLAGS
flags.DEFINE_integer('num_envs', 16, 'Environments per batch.')
flags.DEFINE_integer('steps', 200, 'Batch steps per in-graph session call.')
flags.DEFINE_integer('rounds', 5, 'Interleaved timing blocks per variant.')
flags.DEFINE_float('block_s', 0.2, 'Seconds per timing block.')
flags.DEFINE_list('tasks', sorted(environments.TASKS), 'Gymnasium ids.')
flags.DEFINE_string('json', None, 'Also write the results to this file.')


def _random_actions(space, key, num_envs):
    """Uniform random actions of a space from a stateless key."""
    if isinstance(space, gym.spaces.Discrete):
        return tf.random.stateless_uniform(
            [num_envs], seed=key, minval=0, maxval=int(space.n),
            dtype=tf.int32)
    unit = tf.random.stateless_uniform(
        [num_envs] + list(space.shape), seed=key)
    return space.low + unit * (space.high - space.low)


def _build_ingraph(env_id, num_envs, steps):
    """Session and callable of K compiled steps of an InGraphTaskBatch."""
    graph = tf.Graph()
    with graph.as_default():
        batch = environments.InGraphTaskBatch(
            environments.TASKS[env_id], num_envs, seed=0)
        calls = tf.Variable(0, dtype=tf.int64, trainable=False)

        def rollout(seed, counter, state, episode_steps, done, call):
            def body(index, counter, state, episode_steps, done, total):
                counter, state, episode_steps, _ = batch.restart(
                    seed, counter, state, episode_steps, done)
                key = tf.stack([call, tf.cast(index, tf.int64)])
                action = _random_actions(batch.action_space, key, num_envs)
                state, episode_steps, _, reward, done, _ = batch.transition(
                    state, episode_steps, action)
                return (index + 1, counter, state, episode_steps, done,
                        total + tf.reduce_sum(reward))

            outputs = tf.while_loop(
                lambda index, *_: index < steps, body,
                (tf.constant(0), counter, state, episode_steps, done,
                 tf.constant(0.0)),
                maximum_iterations=steps)
            return outputs[1:]

        outputs = tf.function(rollout, jit_compile=True)(
            batch.seed.read_value(), batch.counter.read_value(),
            batch.state.read_value(), batch.steps.read_value(),
            batch.done.read_value(), calls.read_value())
        counter, state, episode_steps, done, total = outputs
        with tf.control_dependencies([
                batch.counter.assign(counter), batch.state.assign(state),
                batch.steps.assign(episode_steps), batch.done.assign(done),
                calls.assign_add(1)]):
            fetch = tf.identity(total)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    return sess, sess.make_callable(fetch)


class _GymBatch:
    """Gymnasium environments stepped in a Python loop, reset at ends."""

    def __init__(self, env_id, num_envs):
        self._envs = [gym.make(env_id) for _ in range(num_envs)]
        for index, env in enumerate(self._envs):
            env.reset(seed=index)
        self._observ = np.zeros(
            (num_envs,) + self._envs[0].observation_space.shape, np.float32)
        self._reward = np.zeros(num_envs, np.float32)

    @property
    def action_space(self):
        """Action space of each environment."""
        return self._envs[0].action_space

    def step(self, action):
        """Step every environment; reset those whose episode ended."""
        for index, env in enumerate(self._envs):
            act = action[index]
            act = int(act) if act.ndim == 0 else act
            observ, reward, terminated, truncated, _ = env.step(act)
            if terminated or truncated:
                observ, _ = env.reset()
            self._observ[index] = observ
            self._reward[index] = reward
        return self._observ, self._reward

    def close(self):
        """Close the environments."""
        for env in self._envs:
            env.close()


def _build_gymnasium(env_id, num_envs):
    """Session and callable of one gymnasium batch step per call."""
    gym_batch = _GymBatch(env_id, num_envs)
    space = gym_batch.action_space
    graph = tf.Graph()
    with graph.as_default():
        calls = tf.Variable(0, dtype=tf.int64, trainable=False)
        key = tf.stack([tf.constant(1, tf.int64), calls.read_value()])
        action = _random_actions(space, key, num_envs)
        observ, reward = tf.numpy_function(
            gym_batch.step, [action], [tf.float32, tf.float32],
            stateful=True)
        with tf.control_dependencies([observ, calls.assign_add(1)]):
            fetch = tf.reduce_sum(reward)
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    return sess, sess.make_callable(fetch), gym_batch


def _time_variants(variants):
    """Median seconds per call of each variant, in interleaved blocks."""
    calls = {}
    for name, (run, _) in variants.items():
        run()
        start = time.perf_counter()
        run()
        calls[name] = max(1, int(
            FLAGS.block_s / max(time.perf_counter() - start, 1e-6)))
    times = {name: [] for name in variants}
    names = list(variants)
    for index in range(FLAGS.rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            run = variants[name][0]
            start = time.perf_counter()
            for _ in range(calls[name]):
                run()
            times[name].append(
                (time.perf_counter() - start) / calls[name])
    return {name: statistics.median(values) for name, values in times.items()}


def main(unused_argv):
    """Time every task and print the table."""
    record = provenance.record()
    results = dict(
        num_envs=FLAGS.num_envs, steps_per_call=FLAGS.steps,
        rounds=FLAGS.rounds, tasks={})
    print(f'{FLAGS.num_envs} envs, {FLAGS.steps} steps per in-graph call, '
          f'medians of {FLAGS.rounds} interleaved blocks')
    header = (f'{"task":<26} {"ingraph us/step":>15} {"gym us/step":>12} '
              f'{"ratio":>7} {"ingraph steps/s":>16} {"compile s":>10}')
    print(header)
    for env_id in FLAGS.tasks:
        start = time.perf_counter()
        ingraph_sess, ingraph = _build_ingraph(
            env_id, FLAGS.num_envs, FLAGS.steps)
        build = time.perf_counter() - start
        start = time.perf_counter()
        ingraph()
        first_call = time.perf_counter() - start
        gym_sess, gym_step, gym_batch = _build_gymnasium(
            env_id, FLAGS.num_envs)
        seconds = _time_variants({
            'ingraph': (ingraph, FLAGS.steps),
            'gymnasium': (gym_step, 1)})
        ingraph_us = seconds['ingraph'] / FLAGS.steps * 1e6
        gym_us = seconds['gymnasium'] * 1e6
        row = dict(
            ingraph_us_per_batch_step=ingraph_us,
            gymnasium_us_per_batch_step=gym_us,
            ratio=gym_us / ingraph_us,
            ingraph_env_steps_per_s=FLAGS.num_envs / ingraph_us * 1e6,
            gymnasium_env_steps_per_s=FLAGS.num_envs / gym_us * 1e6,
            ingraph_build_s=build, ingraph_first_call_s=first_call)
        results['tasks'][env_id] = row
        print(f'{env_id:<26} {ingraph_us:>15.2f} {gym_us:>12.1f} '
              f'{row["ratio"]:>6.1f}x {row["ingraph_env_steps_per_s"]:>16,.0f}'
              f' {first_call:>10.2f}')
        sys.stdout.flush()
        ingraph_sess.close()
        gym_sess.close()
        gym_batch.close()
    if FLAGS.json:
        provenance.write_json(FLAGS.json, results, record)


if __name__ == '__main__':
    app.run(main)
