"""Tests of the simulation graph: the schedule, evaluation and compiled
runs; `train_test` trains end to end."""

import functools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.testing import xla_ops
from agents.training import config_spec
from agents.environments import graph_env
from agents.scripts import configs
from agents.scripts import networks
from agents.scripts import train
from agents.training import simulation


@pytest.mark.parametrize('overrides, expected, total', [
    # Two episodes of 20 steps per training phase by default, two for
    # evaluation; 120 steps are three phases.
    (dict(update_every=2), (40, 40), 240),
    # The default phase is no longer than the run.
    (dict(update_every=4, steps=40), (40, 40), 80),
    (dict(update_every=1, eval_every=60, eval_episodes=3), (60, 60), 240),
    # Equal phases of at most eval_every steps, whole batch steps each: the
    # run ends with an evaluation whatever its steps.
    (dict(eval_every=100), (60, 40), 200),
    (dict(eval_every=50, steps=25), (26, 40), 66),
    (dict(steps=2000, eval_every=2000, num_agents=8), (2000, 40), 2040),
    (dict(steps=2500, eval_every=2000, num_agents=8), (1256, 40), 2592),
])
def test_phase_steps(overrides, expected, total):
    config = tools.AttrDict(
        num_agents=2, max_length=20, eval_episodes=2, eval_every=None,
        update_every=2, steps=120)
    with config.unlocked:
        config.update(overrides)
    assert simulation.phase_steps(config) == expected
    assert simulation.schedule_steps(config) == total


def _config(**overrides):
    """A tiny PPO config on mock environments."""
    config = tools.AttrDict(configs.default())
    with config.unlocked:
        config.update(
            env=functools.partial(tools.MockEnvironment, durations=(2, 3)),
            policy_layers=(4,), value_layers=(4,), num_agents=2,
            update_every=2, eval_episodes=3, max_length=5, update_epochs=1,
            batch_size=2, chunk_length=5, steps=20, logdir=None, seed=0,
            normalize_ranges=False, compile_update=False)
        config.update(overrides)
    return config_spec.complete_config(config)


def _batch(envs, scope):
    with tf.variable_scope(scope):
        return tools.InGraphBatchEnv(tools.BatchEnv(envs, blocking=True))


@pytest.mark.parametrize('network', [
    networks.feed_forward_gaussian, networks.recurrent_gaussian])
def test_evaluation_leaves_training_state_and_normalizer_alone(network):
    """An evaluation phase reads the weights and normalizer, changes none of
    the training agents' state, and scores the first episode of each
    evaluation environment."""
    # One session call per training step, so that the count of steps is
    # that of the calls.
    config = _config(network=network, compile_rollout=False)
    train_envs = [tools.MockEnvironment(durations=(4,)) for _ in range(2)]
    eval_envs = [tools.MockEnvironment(durations=(2, 3)) for _ in range(3)]
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        graph = simulation.define_simulation(
            _batch(train_envs, 'environments'),
            _batch(eval_envs, 'eval_environments'), config)
        watched = [
            variable for variable in tf.global_variables()
            if not variable.name.startswith(
                ('eval_environments/', 'evaluation/'))]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(graph.is_training.assign(True))
            for _ in range(6):
                sess.run(graph.summary)
            before = sess.run(watched)
            assert [env.steps for env in train_envs] == [[4, 2]] * 2
            dones, scores = [], []
            for index in range(5):
                sess.run(graph.force_reset.assign(index == 0))
                done, score = sess.run([graph.eval_done, graph.eval_score])
                dones.append(done.tolist())
                scores.append(score[done].tolist())
            after = sess.run(watched)
            sess.run(graph.summary)
    # Every evaluation environment ran an episode of 2 steps (score 3) and
    # one of 3 (score 6); only the first counts.
    assert dones == [[False] * 3, [True] * 3] + [[False] * 3] * 3
    assert scores == [[], [3.0] * 3, [], [], []]
    assert [env.steps for env in eval_envs] == [[2, 3]] * 3
    names = [variable.name for variable in watched]
    assert any('normalize_observ' in name for name in names)
    for name, old, new in zip(names, before, after):
        np.testing.assert_array_equal(old, new, err_msg=name)
    # The training episodes went on where they were.
    assert [env.steps for env in train_envs] == [[4, 3]] * 2


@pytest.mark.parametrize('compile_rollout', [False, True])
@pytest.mark.parametrize('stochastic', [False, True])
def test_evaluation_acts_greedily_unless_stochastic(
        stochastic, compile_rollout):
    # A narrow policy keeps the samples inside the mock's action space.
    config = _config(
        eval_stochastic=stochastic, compile_rollout=compile_rollout,
        init_std=0.05)
    eval_envs = [tools.MockEnvironment(durations=(5,)) for _ in range(3)]
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        graph = simulation.define_simulation(
            _batch([tools.MockEnvironment() for _ in range(2)],
                   'environments'),
            _batch(eval_envs, 'eval_environments'), config)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for index in range(3):
                sess.run(graph.force_reset.assign(index == 0))
                sess.run(graph.eval_done)
    actions = np.array([env.actions for env in eval_envs])
    # The environments see the same observations: the mode is the same
    # action for all, samples differ.
    same = [np.array_equal(actions[0], other) for other in actions[1:]]
    assert same == ([False, False] if stochastic else [True, True])


def test_runs_score_first_evaluation_episodes_exactly():
    """The evaluation of a 2-phase run on mock environments scores 6 twice:
    each phase begins anew and keeps the first of its episodes."""
    config = _config()
    assert list(train.train(config, 'inprocess')) == [6.0, 6.0]


def test_a_short_cartpole_run_ends_with_an_evaluation():
    """A last phase shorter than eval_every (2000) ends with an evaluation
    too. Runs of whole phases: `test_phase_steps` and
    `test_runs_score_first_evaluation_episodes_exactly`."""
    config = tools.AttrDict(configs.cartpole())
    with config.unlocked:
        # Small networks: the test is about the schedule.
        config.update(
            steps=3000, seed=0, logdir=None, policy_layers=(8,),
            value_layers=(8,), update_epochs=2)
    scores = list(train.train(config, 'inprocess'))
    assert len(scores) == 2
    assert all(np.isfinite(scores))


def _graph_config(name, **overrides):
    """A config of the module with small networks and two update epochs:
    the tests here are about the collection and evaluation calls."""
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.update(dict(
            logdir=None, seed=5, update_epochs=2, policy_layers=(16,),
            value_layers=(16,)))
        config.update(overrides)
    return config


# Scores of the graph-mode runs of the module by config name and
# overrides: tests that train the same config share its run.
_SCORES = {}


def _graph_scores(name, **overrides):
    """The scores of a graph-mode run of `_graph_config(name, **overrides)`.
    """
    key = name, tuple(sorted(overrides.items()))
    if key not in _SCORES:
        _SCORES[key] = list(train.train(
            _graph_config(name, **overrides), 'graph'))
    return _SCORES[key]


# A recurrent policy's greedy evaluation, as the stochastic evaluation test
# runs it.
_RECURRENT = dict(
    steps=800, eval_every=800, eval_episodes=3,
    network=networks.recurrent_gaussian)


@pytest.mark.parametrize('name, overrides', [
    ('pendulum', dict(steps=1600, eval_every=800, eval_episodes=4)),
    ('pendulum', _RECURRENT),
    ('cartpole', dict(steps=2000, eval_episodes=3)),
])
def test_compiled_runs_score_as_the_one_step_path(name, overrides):
    """On in-graph tasks, training runs many steps and an evaluation all its
    steps in one compiled call; they score as one session call per step
    does, to float tolerance: XLA rounds some functions otherwise, which
    the updates carry on (`ppo_step_test` compares step by step)."""
    scores = {
        compiled: _graph_scores(name, compile_rollout=compiled, **overrides)
        for compiled in (True, False)}
    assert len(scores[True]) == len(scores[False]) >= 1
    np.testing.assert_allclose(scores[True], scores[False], rtol=1e-2)


def test_compiled_stochastic_evaluation_repeats_with_the_seed():
    """Sampled evaluation actions come from stateless random ops keyed by
    the environments' seed and counter: a seed repeats its scores, which
    differ from those of the greedy evaluation."""
    scores = [
        list(train.train(_graph_config(
            'pendulum', eval_stochastic=True, **_RECURRENT), 'graph'))
        for _ in range(2)]
    greedy = _graph_scores('pendulum', compile_rollout=True, **_RECURRENT)
    assert scores[0] == scores[1] != greedy


def test_which_evaluations_compile():
    """In-graph tasks and, up to `BRIDGE_EVAL_ENV_STEPS`, environments
    behind the bridge evaluate in one call with `compile_rollout`, where
    the view has the pure policy step."""
    config = _config()
    view = type('View', (), {'step': None})()
    # An in-graph task's view of a loop (`TaskRolloutEnv`) compiles.
    task_view = type('TaskView', (), {'jit_compile': True})()
    task_batch = type('Batch', (), {'rollout_env': lambda self: task_view})()
    with tf.Graph().as_default():
        bridge_batch = _batch(
            [tools.MockEnvironment() for _ in range(3)], 'eval_environments')
    assert simulation.compiles_evaluation(config, task_batch, view)
    assert simulation.compiles_evaluation(config, bridge_batch, view)
    assert not simulation.compiles_evaluation(config, object(), view)
    assert not simulation.compiles_evaluation(config, task_batch, object())
    with config.unlocked:
        config.max_length = simulation.BRIDGE_EVAL_ENV_STEPS // 3 + 1
    assert simulation.compiles_evaluation(config, task_batch, view)
    assert not simulation.compiles_evaluation(config, bridge_batch, view)
    with config.unlocked:
        config.compile_rollout = False
    assert not simulation.compiles_evaluation(config, task_batch, view)


@pytest.mark.parametrize('transition, agents, max_length, expected', [
    # In-graph tasks: whole episodes per compiled call.
    (True, 16, 1000, 1000),
    # Python and C environments: at most BRIDGE_RUN_ENV_STEPS env steps.
    (False, 2, 1000, simulation.BRIDGE_RUN_ENV_STEPS // 2),
    (False, 16, 1000, simulation.BRIDGE_RUN_ENV_STEPS // 16),
    (False, 4, 50, 50),
    (False, 4096, 1000, 1),
])
def test_run_length(transition, agents, max_length, expected):
    """Training calls of many steps stay short on the numpy_function
    bridge, so that signals take effect between them."""
    config = tools.AttrDict(max_length=max_length)
    members = {'__len__': lambda self: agents}
    if transition:
        # An in-graph task's view of a loop (`TaskRolloutEnv`) compiles.
        view = type('TaskView', (), {'jit_compile': True})()
        members['rollout_env'] = lambda self: view
    batch_env = type('Batch', (), members)()
    assert simulation.run_length(config, batch_env) == expected


@pytest.mark.parametrize('name', ['pendulum', 'cartpole'])
def test_compiled_programs_translate_to_xla_directly(name):
    """The compiled rollouts and update hold none of the operations that
    XLA translates one at a time (`testing.xla_ops`), at 8 ms each per
    start of a run, but for the few without a direct equivalent."""
    config = config_spec.complete_config(_graph_config(name))
    with tf.Graph().as_default() as graph:
        _, batch_env, eval_batch_env = graph_env.define_run_batches(
            config, 'graph')
        # The loop's phases call the compiled rollouts.
        simulation.define_simulation(batch_env, eval_batch_env, config)
    counts = xla_ops.compiled_op_types(graph)
    slow = {
        op: count for op, count in counts.items()
        if op in xla_ops.SLOW_TO_TRANSLATE}
    # The policy's tanh, exp and log-softmax, and the tasks' cosine.
    assert set(slow) <= {'Tanh', 'Exp', 'LogSoftmax', 'Cos'}, slow
    assert sum(slow.values()) <= 16, slow
    assert counts['SelectV2'] > 0 and counts['Maximum'] > 0
