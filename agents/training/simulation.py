"""The simulation graph of a run: training, evaluation, their phases."""

import logging
import math

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import compiled_rollout
from agents.tools import phase_schedule
from agents.tools import rollout_env
from agents.training import config_spec

# Most environment steps of a training call behind the numpy_function bridge:
# signals take effect between calls (the cheetah config's: 0.3-0.6 s).
BRIDGE_RUN_ENV_STEPS = 512
# Most environment steps of an evaluation in one call behind the bridge.
BRIDGE_EVAL_ENV_STEPS = 2048


def define_loop(
        graph, logdir, train_steps, eval_steps, caller_thread=True):
    """The `tools.Loop` alternating a training and an evaluation phase of
    `train_steps` and `eval_steps` env steps, over `define_simulation`'s
    `graph`; `caller_thread`: whether they run ops in the calling thread."""
    # Progress lines and summaries show training steps, so that a config's
    # `steps` is the last step shown; checkpoints keep the global step.
    loop = tools.Loop(
        logdir, graph.step, graph.should_log, graph.do_report,
        graph.force_reset, step_phases=('train',))
    # Failed environments replaced, read once the run's steps counted them.
    restarts = tf.cond(
        tools.identity_after([graph.summary], graph.should_log),
        lambda: tf.summary.scalar(
            'worker_restarts', graph.batch_env.restarts),
        str)
    summary = tf.summary.merge([graph.summary, restarts])
    loop.add_phase(
        'train', graph.done, graph.score, summary, train_steps,
        report_every=None, log_every=max(1, train_steps // 2),
        checkpoint_every=None, feed={graph.is_training: True},
        caller_thread=caller_thread, run_steps=graph.get('run_steps'),
        made_steps=graph.get('made_steps'))
    loop.add_phase(
        'eval', graph.eval_done, graph.eval_score, graph.eval_summary,
        eval_steps, report_every=eval_steps, log_every=eval_steps,
        checkpoint_every=10 * eval_steps, feed=graph.eval_feed,
        caller_thread=caller_thread, run_steps=graph.get('eval_run_steps'))
    return loop


def define_simulation(batch_env, eval_batch_env, config):
    """The training and the evaluation simulation of a run, and its loop:
    an AttrDict of the switches (step, is_training, should_log, do_report,
    force_reset); algo, batch_env, done, score, summary, run_steps and
    made_steps; eval_batch_env, eval_done, eval_score, eval_summary,
    eval_feed and eval_run_steps (None: one batch step); `loop`, and
    `total_steps`. An algorithm without `evaluation_view` (of 2017)
    evaluates on the training batch (`eval_batch_env` is None) with
    `is_training` false."""
    switches, algo = define_algorithm(batch_env, config.algorithm, config)
    separate = eval_batch_env is not None
    run_steps = made_steps = None
    compiles = getattr(algo, 'compiles_collection', None)
    if separate and config.compile_rollout and compiles and compiles(
            batch_env):
        (made, done, score, summary), run_steps = collect_in_phase(
            algo.collect, batch_env, switches.step, config)
        made_steps = made * len(batch_env)
    else:
        # With evaluation environments, episodes go on across phases.
        done, score, summary = tools.simulate(  # pylint: disable=not-callable
            batch_env, algo, switches.should_log,
            False if separate else switches.force_reset)
    if separate:
        eval_done, eval_score, eval_summary, eval_run_steps = (
            _define_evaluation(algo, eval_batch_env, switches, config))
        eval_feed = {}
    else:
        eval_done, eval_score, eval_summary = done, score, summary
        eval_run_steps, eval_feed = None, {switches.is_training: False}
    return define_phases(
        config, switches, algo=algo, batch_env=batch_env, done=done,
        score=score, summary=summary, eval_batch_env=eval_batch_env,
        eval_done=eval_done, eval_score=eval_score, eval_summary=eval_summary,
        eval_feed=eval_feed, eval_run_steps=eval_run_steps,
        run_steps=run_steps, made_steps=made_steps)


def define_phases(config, switches, **parts):
    """The `interface` of the switches and parts of a simulation, with
    `total_steps` and the `loop` of its phases."""
    train_steps, eval_steps = phase_steps(config)
    graph = interface(switches, total_steps=schedule_steps(config), **parts)
    with graph.unlocked:
        graph.loop = define_loop(
            graph, config.logdir, train_steps, eval_steps,
            config.caller_thread)
    return graph


def collect_in_phase(collect, batch_env, step, config):
    """The outputs of `collect(num_steps, steps_left)`, a training call of
    many steps up to the end of the phase at the global `step`, and the
    environment steps of such a call."""
    train_steps, eval_steps = phase_steps(config)
    length = run_length(config, batch_env)
    in_phase = tf.math.floormod(
        tf.cast(step, tf.int64), train_steps + eval_steps)
    return collect(length, (train_steps - in_phase) // len(batch_env)), (
        length * len(batch_env))


def _define_evaluation(algo, eval_batch_env, switches, config):
    """Evaluation's done, score, summary and steps of a call (or None)."""
    with tf.variable_scope('evaluation'):
        view = algo.evaluation_view(eval_batch_env, config.eval_stochastic)
        if compiles_evaluation(config, eval_batch_env, view):
            return _compiled_evaluation(
                eval_batch_env, view, config.max_length, switches.should_log
            ) + (len(eval_batch_env) * config.max_length,)
        done, score, _ = tools.simulate(  # pylint: disable=not-callable
            eval_batch_env, view, False, switches.force_reset)
        return _first_episodes(
            done, score, switches.force_reset, switches.should_log) + (None,)


def run_length(config, batch_env):
    """Batch steps of a training call of many steps (bridged: fewer)."""
    env = rollout_env.rollout_env(batch_env)
    if env is not None and env.jit_compile:
        return config.max_length
    return max(1, min(
        config.max_length, BRIDGE_RUN_ENV_STEPS // len(batch_env)))


def compiles_evaluation(config, eval_batch_env, view):
    """Whether evaluations run as one session call of all their steps: with
    `compile_rollout`, where the view has the pure policy step of
    `compiled_rollout.first_episodes` and the environments are in-graph or
    behind the bridge with at most `BRIDGE_EVAL_ENV_STEPS` steps."""
    if not (config.compile_rollout and hasattr(view, 'step')):
        return False
    env = rollout_env.rollout_env(eval_batch_env)
    if env is None:
        return False
    return bool(env.jit_compile or len(eval_batch_env) * config.max_length
                <= BRIDGE_EVAL_ENV_STEPS)


def _compiled_evaluation(eval_batch_env, view, max_length, log):
    """Done, score and summary of every env's first episode, in one call."""
    done, score = compiled_rollout.first_episodes(
        eval_batch_env, view, max_length)
    return done, score, mean_score_summary(done, score, log)


def mean_score_summary(done, score, log):
    """The `mean_score` summary of the episodes `done` (of any shape) where
    the bool `log` is true and some ended, else the empty one."""

    def _summary():
        ended = tf.boolean_mask(score, done)
        return tf.cond(
            tf.size(ended) > 0,
            lambda: tf.summary.scalar('mean_score', tf.reduce_mean(ended)),
            str)

    # tf.cond(pred, fn, str): the empty summary where nothing is logged.
    return tf.cond(tools.identity_after([done, score], log), _summary, str)


def _first_episodes(done, score, reset, log):
    """Done, score and summary of each env's first episode in a phase."""
    with tf.variable_scope('evaluation_temporary'):
        ended = tf.Variable(
            lambda: tf.zeros(done.shape, tf.bool), trainable=False,
            name='ended')
        mean_score = tools.StreamingMean((), tf.float32, 'mean_score')
    # A phase resumed half way goes on scoring first episodes only.
    tools.keep_for_resume((ended, mean_score.variables))
    with tf.name_scope('first_episodes'):
        # Environments whose first episode of the phase ended before.
        before = tf.logical_and(
            ended.read_value(), tf.logical_not(tf.convert_to_tensor(reset)))
        first = tf.logical_and(done, tf.logical_not(before))
        store = ended.assign(tf.logical_or(before, done))
        submit = mean_score.submit(tf.boolean_mask(score, first))
        summary = tf.cond(
            tools.identity_after([store, submit], log),
            lambda: tf.cond(
                mean_score.count > 0,
                lambda: tf.summary.scalar('mean_score', mean_score.clear()),
                str),
            str)
        return (
            tools.identity_after([summary], first),
            tools.identity_after([summary], score), summary)


def phase_steps(config):
    """Environment steps of one training phase and of one evaluation phase:
    `steps` split into equal training phases of whole batch steps, at most
    `eval_every` each (default: `max(update_every, num_agents)` full
    episodes), so that a run ends with an evaluation."""
    steps = max(1, int(math.ceil(config.steps)))
    every = config.eval_every or min(
        steps, max(config.update_every, config.num_agents) *
        config.max_length)
    phases = int(math.ceil(steps / every))
    batches = int(math.ceil(steps / phases / config.num_agents))
    train_steps = batches * config.num_agents
    return train_steps, int(config.eval_episodes * config.max_length)


def training_steps(config, global_step):
    """The training steps of a run at a global step (of a checkpoint)."""
    return phase_schedule.phase_steps_at(global_step, phase_steps(config))[0]


def schedule_steps(config):
    """The global step (of both phases) at which a run ends."""
    train_steps, eval_steps = phase_steps(config)
    phases = math.ceil(max(1, math.ceil(config.steps)) / train_steps)
    return phases * (train_steps + eval_steps)


def define_simulation_graph(batch_env, algo_cls, config):
    """Define the algorithm and the simulation operation; an AttrDict of
    the switches, algo, done, score and summary. Missing config keys take
    their defaults."""
    config_spec.warn_retired_keys(config)
    config = config_spec.with_defaults(config)
    switches, algo = define_algorithm(batch_env, algo_cls, config)
    done, score, summary = tools.simulate(  # pylint: disable=not-callable
        batch_env, algo, switches.should_log, switches.force_reset)
    return interface(
        switches, algo=algo, batch_env=batch_env, done=done, score=score,
        summary=summary)


def define_algorithm(batch_env, algo_cls, config):
    """The switches (step and bool variables) and the algorithm, built as
    a run builds them (a population's members start as such runs)."""
    switches = define_switches()
    return switches, algo_cls(
        batch_env, switches.step, switches.is_training, switches.should_log,
        config)


def define_switches():
    """The global step and the bool switches of a run's loop."""
    step = tf.train.get_or_create_global_step()
    with tf.variable_scope('simulation_temporary'):
        return tools.AttrDict(step=step, **{
            name: tf.Variable(False, trainable=False, name=name)
            for name in ('is_training', 'should_log', 'do_report',
                         'force_reset')})


def interface(switches, **parts):
    """AttrDict of the switches and parts; logs the count of weights."""
    num_weights = tools.count_weights()  # pylint: disable=not-callable
    logging.getLogger('agents').info(
        'Graph contains %d trainable variables.', num_weights)
    return tools.AttrDict(switches, **parts)
