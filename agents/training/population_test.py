"""Tests of a population: member `i` against a single run of seed `S_i`."""

import os
import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import population_update
from agents.environments import graph_env
from agents.scripts import configs
from agents.scripts import networks
from agents.training import config_spec
from agents.training import population
from agents.training import simulation
from agents.training import trainer

_SEEDS = (3, 8, 5)

# Two variants of every key that may vary: the first is the config of the
# members without variants too, so that their single runs are shared.
_FIRST, _SECOND = (
    dict(zip(population.GRAPH_KEYS + population.INITIAL_KEYS, values))
    for values in (
        (1e-3, 0.01, 0.02, 2.0, 1000.0, 0.9, 0.9, 0.2, 1.0, 0.5, 0.5,
         0.2, 1.0),
        (3e-3, 0.1, 0.001, 1.5, 10.0, 0.99, 0.5, 0.1, 0.1, 0.05, 2.0,
         1.0, 0.5)))


def _config(base=configs.pendulum, **overrides):
    config = tools.AttrDict(base())
    with config.unlocked:
        config.update(
            num_agents=4, update_every=4, max_length=10,
            policy_layers=(8,), value_layers=(8,), update_epochs=2,
            batch_size=2, steps=1000, seed=None)
        config.update(overrides)
    return config


def _session(config):
    """A session as the trainer opens it for an in-graph task."""
    # Without Grappler where both units compile: it would optimize the
    # graph again for every new set of fetches (the loads of `initialize`,
    # 0.3 s each).
    return tf.Session(config=trainer.make_session_config(config, 'graph'))


def _watched(algo, stacked):
    """The State's tensors and the weights and counters, by name."""
    # pylint: disable=protected-access
    env = algo._batch_env.rollout_env()
    state = (algo._read_state()._replace(env=env.initial()) if stacked is None
             else stacked)
    values = {
        f'{name}/{index}': tensor for name in state._fields
        if name not in ('score', 'episode_steps')  # Zeros from `_read_state`.
        for index, tensor in enumerate(tf.nest.flatten(getattr(state, name)))}
    variables = tf.trainable_variables() + [
        algo._penalty, algo._num_updates, algo._trained_steps]
    for variable in variables:
        values[variable.name] = getattr(variable, 'stacked', variable)
    return values


def _settings(variants):
    """Each variant's values as its `--set` settings."""
    return variants and [
        tuple((key, repr(value)) for key, value in variant.items())
        for variant in variants]


# Single runs by config, seed and steps: tests whose members have the same
# config and seed read one run.
_SINGLES = {}


def _single(config, seed, batch_steps, num_steps):
    """The watched values of a single run after `batch_steps` steps of
    calls of up to `num_steps`."""
    config = config.copy(seed=seed)
    key = repr(sorted(config.items())), batch_steps, num_steps
    if key not in _SINGLES:
        _SINGLES[key] = _run_single(config, batch_steps, num_steps)
    return _SINGLES[key]


def _run_single(config, batch_steps, num_steps):
    """`_single`, run."""
    seed = config.seed
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        switches, algo = population.build_member(config)
        step = switches.step
        steps_left = tf.placeholder(tf.int32, [])
        made = algo.collect(num_steps, steps_left)[0]
        advance = step.assign_add(tf.cast(made * 4, tf.int64))
        watched = _watched(algo, None)
        with _session(config) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(switches.is_training.assign(True))
            while sess.run(step) < 4 * batch_steps:
                sess.run(advance, {
                    steps_left: batch_steps - sess.run(step) // 4})
            return sess.run(watched)


def _population(config, calls, num_steps, seeds=_SEEDS[:2], variants=None):
    """The watched values of a population after `calls` collects, and its
    batch steps."""
    with tf.Graph().as_default():
        members = population.Population(
            config, seeds, variants=_settings(variants))
        made = members.collect(num_steps, tf.constant(1000))[0]
        advance = members.step.assign_add(tf.cast(made * 4, tf.int64))
        # pylint: disable=protected-access
        watched = _watched(members.algo, members._read_state(
            members.algo._batch_env.rollout_env()))
        with _session(config) as sess:
            members.initialize(sess)
            for _ in range(calls):
                batch_steps = sess.run(advance) // 4
            return sess.run(watched), batch_steps


def _assert_members_as_single_runs(
        config, calls, num_steps, tolerance, seeds=_SEEDS[:2], variants=None,
        population_config=None):
    """Run the population (of `population_config`, else `config`) for
    `calls` collects; assert each member's state and weights equal its
    seed's (and variant's) single run of `config` after as many steps."""
    stacked, batch_steps = _population(
        population_config or config, calls, num_steps, seeds, variants)
    _assert_as_single_runs(
        stacked, batch_steps, config, num_steps, tolerance, seeds, variants)
    return stacked


def _assert_as_single_runs(
        stacked, batch_steps, config, num_steps, tolerance, seeds=_SEEDS[:2],
        variants=None):
    """Assert each member's `stacked` values equal its seed's (and
    variant's) single run after `batch_steps` steps."""
    for index, seed in enumerate(seeds):
        single = _single(config.copy(**(variants or {})[index]) if (
            variants) else config, seed, batch_steps, num_steps)
        for name, value in single.items():
            # Batched arithmetic rounds otherwise.
            np.testing.assert_allclose(
                stacked[name][index], value, rtol=tolerance,
                atol=tolerance, err_msg=name)


@pytest.fixture(name='compiled', scope='module')
def _compiled(tmp_path_factory):
    """The population of `_config(**_FIRST)` after four collects of 5
    steps, run in a Python that logs XLA's compilations: its watched values,
    its batch steps and how many times each function compiled."""
    output = tmp_path_factory.mktemp('compiled') / 'population.pickle'
    code = textwrap.dedent(f"""
        import pickle
        from agents.training import population_test as test
        run = test._population(test._config(**test._FIRST), 4, 5)
        with open({str(output)!r}, 'wb') as file:
            pickle.dump(run, file)
        """)
    result = subprocess.run(
        [sys.executable, '-c', code], capture_output=True, text=True,
        check=False, timeout=600, env=dict(
            os.environ, TF_CPP_MIN_LOG_LEVEL='0',
            TF_CPP_VMODULE='device_compilation_profiler=1'))
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output, 'rb') as file:
        stacked, batch_steps = pickle.load(file)
    return stacked, batch_steps, dict(re.findall(
        r'Compiled __inference_(\w+?)_\d+ (\d+) times', result.stderr))


def test_members_train_as_single_runs(compiled):
    # Every episode ends at step 10 and fills the memory: two updates of
    # 4 Adam steps, after which normalized observations differ by up to
    # 1.2e-6. The first and third calls only collect. The update as
    # TensorFlow's kernels run it: `test_variants_train_as_their_single_runs`.
    stacked, batch_steps, _ = compiled
    _assert_as_single_runs(stacked, batch_steps, _config(**_FIRST), 5, 1e-5)
    np.testing.assert_array_equal(stacked['num_updates:0'], [2, 2])


def test_members_of_uneven_episodes_as_single_runs(monkeypatch):
    # CartPole's episodes end at different steps: members train at
    # different calls, with episodes left pending by a full memory. Blocks
    # of two members: the second repeats the last member, whose first copy
    # is kept.
    monkeypatch.setattr(population_update, '_BLOCK', 2)
    stacked = _assert_members_as_single_runs(_config(
        configs.cartpole, max_length=30), 12, 10, 1e-5, _SEEDS)
    assert len(set(stacked['num_updates:0'])) > 1


def test_variants_train_as_their_single_runs():
    # Three members: seed 3 of two variants of every key that may vary,
    # seed 8 of the first; two updates each. Their update as TensorFlow's
    # kernels run it (`compile_update=False`), their single runs' as XLA
    # compiles it.
    assert _FIRST['max_gradient_norm'] == 0.5 and _SECOND['init_std'] == 2.0
    config = _config()
    stacked = _assert_members_as_single_runs(
        config, 4, 5, 1e-5, (3, 3, 8), [_FIRST, _SECOND, _FIRST],
        config.copy(compile_update=False))
    np.testing.assert_array_equal(stacked['num_updates:0'], [2, 2, 2])
    # The variants trained apart.
    assert not np.allclose(*stacked['penalty:0'][:2])


@pytest.mark.parametrize('variants, message', [
    ([{'num_agents': 2}, {'num_agents': 4}], 'num_agents cannot vary among '
     'the members of a population: it changes the shapes or the structure '
     'of the graph; keys that may: learning_rate, '),
    ([{'ppo_clip': 0.2}, {'ppo_clip': 0}], 'ppo_clip of 0.2, 0 '
     'switches a part of the graph off in some members only; vary it '
     'among values that are all set (or run apart).')])
def test_variants_that_change_the_graph_are_refused(variants, message):
    with tf.Graph().as_default():
        with pytest.raises(ValueError) as error:
            population.Population(
                _config(), (3, 3), variants=_settings(variants))
    assert str(error.value).startswith(message)


@pytest.mark.parametrize('seeds', [(), (1, 2, 1)])
def test_seeds_must_be_distinct(seeds):
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='needs distinct seeds, got'):
            population.Population(_config(), seeds)


def test_members_start_as_the_trainer_runs():
    config = config_spec.complete_config(_config(seed=7, eval_every=500))
    values = population.member_values(config, 7)
    with tf.Graph().as_default():
        # As `trainer.train` builds its graph.
        tf.set_random_seed(7)
        simulation.define_simulation(*graph_env.define_run_batches(
            config, 'graph')[1:], config)
        variables = tf.global_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            expected = dict(zip(
                [variable.name for variable in variables],
                sess.run(variables)))
    assert any('network' in name for name in values)
    for name, value in values.items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)


def test_the_update_compiles_once(compiled):
    # XLA compiles again for every new value of an argument that it must
    # take as a compile-time constant: the update did so at every call
    # while its gradients crossed the function of `pfor` (twice here).
    stacked, _, counts = compiled
    np.testing.assert_array_equal(stacked['num_updates:0'], [2, 2])
    assert counts == {'_traced': '1', '_group_update': '1'}


def test_a_member_not_finite_stops_the_update_naming_it():
    with tf.Graph().as_default():
        config = _config()
        # Named with its variant, as seed 8 could be of several.
        members = population.Population(config, (3, 8), variants=_settings(
            [dict(discount=0.9), dict(discount=0.99)]))
        made = members.collect(5, tf.constant(1000))[0]
        statistics = [variable for variable in tf.global_variables()
                      if variable.name.startswith('normalize_reward/') and
                      variable.dtype.base_dtype == tf.float32]
        with _session(config) as sess:
            members.initialize(sess)
            for variable in statistics:
                value = sess.run(variable)
                value[1] = np.nan  # Seed 8's.
                variable.load(value, sess)
            sess.run(made)  # Half the episodes: no update yet.
            weights = sess.run(tf.trainable_variables())
            with pytest.raises(tf.errors.InvalidArgumentError, match=(
                    'the loss or gradients of member discount=0.99/seed-8 : '
                    'Tensor had NaN values')):
                sess.run(made)
            after = sess.run(tf.trainable_variables())
    # Seed 3 trained; seed 8 took no step.
    for before, now in zip(weights, after):
        assert not np.array_equal(before[0], now[0])
        np.testing.assert_array_equal(before[1], now[1])


def test_recurrent_members_train_as_single_runs():
    # The members' steps and losses run one after another (`unroll`):
    # `pfor` turns the GRU's loop into lists XLA refuses.
    stacked = _assert_members_as_single_runs(_config(
        network=networks.recurrent_gaussian, chunk_length=5), 4, 5, 1e-5)
    np.testing.assert_array_equal(stacked['num_updates:0'], [2, 2])
