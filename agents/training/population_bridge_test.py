"""Tests of a population on Python environments (the bridge): member `i`
against a single run of seed `S_i` in the same env mode."""

import gc
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import configs
from agents.training import config_spec
from agents.training import population
from agents.training import population_run
from agents.training import trainer

_SEEDS = (3, 8)


def _config(**overrides):
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(
            num_agents=3, update_every=3, max_length=10, eval_episodes=2,
            policy_layers=(8,), value_layers=(8,), update_epochs=2,
            batch_size=2, steps=1000, seed=None, max_gradient_norm=0.5,
            learning_rate_decay='linear')
        config.update(overrides)
    return config


def _session():
    """A session without Grappler, which would optimize the graph again for
    every new set of fetches; the trainer's (with Grappler):
    `test_trained_members_score_as_their_seeds_alone`."""
    config = tf.ConfigProto()
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    return tf.Session(config=config)


def _watched(algo, state):
    """The State's tensors (but the whole batch's loop state and the
    scores, zeros in `_read_state`) and the weights and counters."""
    # pylint: disable=protected-access
    values = {
        f'{name}/{index}': tensor for name in state._fields
        if name not in ('env', 'score', 'episode_steps')
        for index, tensor in enumerate(tf.nest.flatten(getattr(state, name)))}
    for variable in tf.trainable_variables() + [
            algo._penalty, algo._num_updates, algo._trained_steps]:
        values[variable.name] = getattr(variable, 'stacked', variable)
    return values


def _single(config, env_mode, seed, batch_steps, num_steps):
    """The watched values of a single run after `batch_steps` steps of
    calls of up to `num_steps`."""
    config = config.copy(seed=seed)
    agents = config.num_agents
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        switches, algo = population.build_member(config, env_mode)
        steps_left = tf.placeholder(tf.int32, [])
        made = algo.collect(num_steps, steps_left)[0]
        advance = switches.step.assign_add(tf.cast(made * agents, tf.int64))
        # pylint: disable-next=protected-access
        watched = _watched(algo, algo._read_state())
        try:
            with _session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(switches.is_training.assign(True))
                while sess.run(switches.step) < agents * batch_steps:
                    sess.run(advance, {steps_left: batch_steps - sess.run(
                        switches.step) // agents})
                return sess.run(watched)
        finally:
            algo._batch_env.close()  # pylint: disable=protected-access


def _population(config, env_mode, calls, num_steps, variants=None):
    """The watched values of a population after `calls` collects, and its
    batch steps."""
    with tf.Graph().as_default():
        members = population.Population(config, _SEEDS, env_mode, variants=(
            variants and [tuple((key, repr(value)) for key, value in (
                variant.items())) for variant in variants]))
        made = members.collect(num_steps, tf.constant(1000))[0]
        advance = members.step.assign_add(
            tf.cast(made * config.num_agents, tf.int64))
        # pylint: disable=protected-access
        watched = _watched(members.algo, members._read_state(
            members.algo._batch_env.rollout_env()))
        try:
            with _session() as sess:
                members.initialize(sess)
                for _ in range(calls):
                    batch_steps = sess.run(advance) // config.num_agents
                return sess.run(watched), batch_steps
        finally:
            members.batch_env.close()
            members.eval_batch_env.close()


# Members of one config without variants, in process:
# `test_trained_members_score_as_their_seeds_alone`.
@pytest.mark.parametrize('env_mode, overrides, variants', [
    # Rollouts of 4 steps bootstrapped by the value network, as the
    # MuJoCo configs cut them: an update after every rollout; a learning
    # rate without decay, a scalar.
    ('envpool', dict(rollout_length=4, bootstrap_truncated=True,
                     learning_rate_decay=None), None),
    # Members of two variants, each as its single run. Every episode ends
    # at step 10 and fills the memory: two updates of 4 Adam steps; the
    # first and third calls only collect.
    ('inprocess', {}, [
        dict(learning_rate=1e-3, discount=0.9, ppo_clip=0.2),
        dict(learning_rate=3e-3, discount=0.99, ppo_clip=0.1)])])
def test_members_train_as_single_runs(env_mode, overrides, variants):
    if env_mode == 'envpool':
        pytest.importorskip('envpool')
    config = _config(**overrides)
    stacked, batch_steps = _population(config, env_mode, 4, 5, variants)
    for index, seed in enumerate(_SEEDS):
        single = _single(config.copy(**variants[index]) if variants else (
            config), env_mode, seed, batch_steps, 5)
        assert single['num_updates:0'] >= 2
        for name, value in single.items():
            # Batched arithmetic rounds otherwise.
            np.testing.assert_allclose(
                stacked[name][index], value, rtol=1e-5, atol=1e-5,
                err_msg=name)


def test_trained_members_score_as_their_seeds_alone(tmp_path):
    # Two training phases of 40 steps, an update at the end of each, and
    # an evaluation after each on every member's evaluation environments.
    config = config_spec.complete_config(_config(
        num_agents=2, update_every=2, max_length=20, steps=80,
        eval_every=None, update_steps=None, chunk_length=10,
        logdir=str(tmp_path / 'run')))
    assert len(list(trainer.train(config, 'inprocess', seeds=_SEEDS))) == 2
    results = json.loads(
        (tmp_path / 'run' / population_run.RESULTS_NAME).read_text())
    scores = [row['final_score'] for row in results['members']]
    assert scores[0] != scores[1]
    for score, seed in zip(scores, _SEEDS):
        alone = config.copy(seed=seed, logdir=None)
        assert score == pytest.approx(
            list(trainer.train(alone, 'inprocess'))[-1], rel=1e-5)


def test_a_population_that_cannot_build_closes_its_environments(
        monkeypatch):
    # Batches of earlier tests, closed already, close again when collected.
    gc.collect()
    closed = []
    close = tools.BatchEnv.close
    monkeypatch.setattr(tools.BatchEnv, 'close', lambda self: (
        closed.append(len(self)), close(self)))
    config = _config(optimizer=tf.train.GradientDescentOptimizer)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='A population trains with Adam'):
            population.Population(config, _SEEDS, 'inprocess')
    # The members' training batch and their evaluation batch.
    assert closed == [6, 4]
