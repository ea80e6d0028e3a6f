"""Tests of a population: member `i` against a single run of seed `S_i`."""

import numpy as np
import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import population
from agents.scripts import configs

_SEEDS = (3, 8, 5)


def _config(**overrides):
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(
            num_agents=4, update_every=4, max_length=10,
            policy_layers=(8,), value_layers=(8,), update_epochs=2,
            batch_size=2, steps=1000, seed=None)
        config.update(overrides)
    return config


def _single_states(config, seed, num_steps, calls):
    """The `State` variables of a single run after `calls` collects."""
    config = config.copy(seed=seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        step, algo = population.build_member(config)
        made = algo.collect(num_steps, tf.constant(1000))[0]
        advance = step.assign_add(tf.cast(made * 4, tf.int64))
        # pylint: disable=protected-access
        state = algo._read_state()._replace(
            env=algo._batch_env.rollout_env().initial())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(calls):
                sess.run(advance)
            return sess.run(state)


def test_members_collect_as_single_runs():
    # Episodes end at step 10 and go into the memory, which is not full
    # before step 20 (when a single run would train).
    config = _config(update_every=8)
    num_steps, calls = 3, 5
    with tf.Graph().as_default():
        members = population.Population(config, _SEEDS)
        made = members.collect(num_steps, tf.constant(1000))[0]
        advance = members.step.assign_add(tf.cast(made * 4, tf.int64))
        # pylint: disable=protected-access
        state = members._read_state(
            members.algo._batch_env.rollout_env())
        with tf.Session() as sess:
            members.initialize(sess)
            for _ in range(calls):
                sess.run(advance)
            stacked = sess.run(state)
    np.testing.assert_array_equal(stacked.memory_index, [4] * len(_SEEDS))
    for index, seed in enumerate(_SEEDS):
        single = _single_states(config, seed, num_steps, calls)
        for name in single._fields:
            if name in ('score', 'episode_steps'):
                continue  # A single run's `_read_state` leaves them zero.
            for got, want in zip(tf.nest.flatten(getattr(stacked, name)),
                                 tf.nest.flatten(getattr(single, name))):
                # Batched arithmetic rounds otherwise: up to 1.2e-7 of the
                # normalizers' sums of squares.
                np.testing.assert_allclose(
                    got[index], want, rtol=1e-6, atol=1e-6, err_msg=name)


def _single_variables(config, seed, num_steps, names):
    """The values of a single run's variables of `names` after a collect."""
    config = config.copy(seed=seed)
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        step, algo = population.build_member(config)
        made = algo.collect(num_steps, tf.constant(1000))[0]
        advance = step.assign_add(tf.cast(made * 4, tf.int64))
        variables = {
            variable.name: variable for variable in tf.global_variables()}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(advance)
            return sess.run({name: variables[name] for name in names})


def test_members_train_as_single_runs():
    # pylint: disable=protected-access
    # Every episode ends at step 10 and fills the memory: one update each.
    config = _config(max_gradient_norm=0.5, learning_rate_decay='linear')
    with tf.Graph().as_default():
        members = population.Population(config, _SEEDS)
        algo = members.algo
        made = members.collect(10, tf.constant(1000))[0]
        advance = members.step.assign_add(tf.cast(made * 4, tf.int64))
        watched = {
            variable.name: variable for variable in tf.trainable_variables()}
        for counter in (algo._penalty, algo._num_updates,
                        algo._trained_steps, algo._memory_index):
            watched[counter.name] = counter.stacked
        with tf.Session() as sess:
            members.initialize(sess)
            sess.run(advance)
            stacked = sess.run(watched)
    np.testing.assert_array_equal(
        stacked[algo._num_updates.name], [1] * len(_SEEDS))
    for index, seed in enumerate(_SEEDS):
        single = _single_variables(config, seed, 10, list(watched))
        for name, value in single.items():
            # Batched arithmetic rounds otherwise: weights differ by up to
            # 1.2e-7 after the update's 4 Adam steps (they move by 4e-3).
            np.testing.assert_allclose(
                stacked[name][index], value, rtol=1e-5, atol=1e-6,
                err_msg=name)
