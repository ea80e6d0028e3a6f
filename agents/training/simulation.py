"""The simulation graph of a run: training and evaluation, and their phases.

`define_simulation` builds training and evaluation, one session call per
batch step or many steps per call (see docs/architecture.md);
`define_loop` alternates them as the phases of a `tools.Loop`.
"""

import logging
import math

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import compiled_rollout
from agents.tools import loop as loop_lib
from agents.tools import rollout_env
from agents.training import config_spec

# Most environment steps of a training call on environments behind the
# numpy_function bridge. Signals take effect between session calls, so a call
# must stay short: 512 steps of the cheetah config take 0.3-0.6 s on 2 loaded
# cores, whole episodes of 1,000 batch steps 1.3-2.4 s.
BRIDGE_RUN_ENV_STEPS = 512
# Most environment steps of an evaluation behind the bridge that runs in one
# session call (the cheetah config's: 0.5-0.8 s); longer ones step per call.
BRIDGE_EVAL_ENV_STEPS = 2048


def define_loop(
        graph, logdir, train_steps, eval_steps, caller_thread=True):
    """The `tools.Loop` alternating a training and an evaluation phase.

    The evaluation phase reports the mean score of its episodes at its end.

    Args:
      graph: AttrDict of `define_simulation`.
      logdir: Run folder for summaries and checkpoints, or None.
      train_steps: Env steps of each training phase.
      eval_steps: Env steps of each evaluation phase.
      caller_thread: Whether the phases run their ops in the calling thread
          rather than the inter-op pool (config `caller_thread`).
    """
    # Progress lines and summaries show training steps, so that a config's
    # `steps` is the last step shown; checkpoints keep the global step.
    loop = tools.Loop(
        logdir, graph.step, graph.should_log, graph.do_report,
        graph.force_reset, step_phases=('train',))
    # How often a failed environment was replaced (`restart_workers`), read
    # once the run's steps assigned the count: the predicate waits for them.
    restarts = tf.cond(
        tools.identity_after([graph.summary], graph.should_log),
        lambda: tf.summary.scalar(
            'worker_restarts', graph.batch_env.restarts),
        str)
    summary = tf.summary.merge([graph.summary, restarts])
    loop.add_phase(
        'train', graph.done, graph.score, summary, train_steps,
        report_every=None,
        log_every=max(1, train_steps // 2),
        checkpoint_every=None,
        feed={graph.is_training: True},
        caller_thread=caller_thread,
        run_steps=graph.get('run_steps'), made_steps=graph.get('made_steps'))
    loop.add_phase(
        'eval', graph.eval_done, graph.eval_score, graph.eval_summary,
        eval_steps,
        report_every=eval_steps,
        log_every=eval_steps,
        checkpoint_every=10 * eval_steps,
        feed=graph.eval_feed,
        caller_thread=caller_thread,
        run_steps=graph.get('eval_run_steps'))
    return loop


def define_simulation(batch_env, eval_batch_env, config):
    """The training and the evaluation simulation of a run.

    Training episodes go on across phases. Evaluation steps `eval_batch_env`
    with `algo.evaluation_view(eval_batch_env, config.eval_stochastic)`;
    every evaluation phase begins its episodes anew and scores the first
    episode of each environment. An algorithm without `evaluation_view` (of
    the 2017 package) evaluates on the training batch with `is_training`
    false, as in 2017; `eval_batch_env` is None then.

    Args:
      batch_env: In-graph batch of the training environments.
      eval_batch_env: In-graph batch of the evaluation environments, or
          None for an algorithm without `evaluation_view`.
      config: Completed configuration.

    Returns:
      AttrDict of step; the bool variables is_training, should_log,
      do_report, force_reset; algo, batch_env, done, score, summary,
      run_steps, made_steps of training; eval_batch_env, eval_done,
      eval_score, eval_summary, eval_feed and eval_run_steps (None: one
      batch step per run).
    """
    switches = define_switches()
    should_log, force_reset = switches.should_log, switches.force_reset
    algo = config.algorithm(
        batch_env, switches.step, switches.is_training, should_log, config)
    separate = eval_batch_env is not None
    # Steps of a run (at most, and made); None: one batch step.
    eval_run_steps = run_steps = made_steps = None
    if separate and compiles_training(config, batch_env, algo):
        length = run_length(config, batch_env)
        done, score, summary, made_steps = _compiled_training(
            algo, switches.step, config, len(batch_env), length)
        run_steps = length * len(batch_env)
    else:
        # Training episodes go on across phases when evaluation has its own
        # environments; the first step begins them, as every `done` starts
        # true.
        done, score, summary = tools.simulate(  # pylint: disable=not-callable
            batch_env, algo, should_log, False if separate else force_reset)
    if separate:
        with tf.variable_scope('evaluation'):
            view = algo.evaluation_view(
                eval_batch_env, config.eval_stochastic)
            if compiles_evaluation(config, eval_batch_env, view):
                eval_done, eval_score, eval_summary = _compiled_evaluation(
                    eval_batch_env, view, config.max_length, should_log)
                eval_run_steps = len(eval_batch_env) * config.max_length
            else:
                eval_done, eval_score, _ = tools.simulate(  # pylint: disable=not-callable
                    eval_batch_env, view, False, force_reset)
                eval_done, eval_score, eval_summary = _first_episodes(
                    eval_done, eval_score, force_reset, should_log)
        eval_feed = {}
    else:
        eval_done, eval_score, eval_summary = done, score, summary
        eval_feed = {switches.is_training: False}
    return simulation_interface(
        switches, algo=algo, batch_env=batch_env, done=done, score=score,
        summary=summary, eval_batch_env=eval_batch_env, eval_done=eval_done,
        eval_score=eval_score, eval_summary=eval_summary,
        eval_feed=eval_feed, eval_run_steps=eval_run_steps,
        run_steps=run_steps, made_steps=made_steps)


def compiles_training(config, batch_env, algo):
    """Whether training runs many steps per session call.

    With `compile_rollout`, where the algorithm can collect in a loop (see
    `PPO.compiles_collection`).
    """
    compiles = getattr(algo, 'compiles_collection', None)
    return bool(
        config.compile_rollout and compiles is not None and
        compiles(batch_env))


def run_length(config, batch_env):
    """Batch steps of a training call of many steps, at most.

    `max_length` on an in-graph task; behind the numpy_function bridge at
    most `BRIDGE_RUN_ENV_STEPS` environment steps.

    Args:
      config: Completed configuration.
      batch_env: In-graph batch of the training environments.

    Returns:
      Positive integer.
    """
    if hasattr(batch_env, 'transition'):
        return config.max_length
    return max(1, min(
        config.max_length, BRIDGE_RUN_ENV_STEPS // len(batch_env)))


def _compiled_training(algo, step, config, num_agents, length):
    """Training runs of up to `length` batch steps in one session call.

    Returns done, score, summary and the environment steps the run made.
    """
    train_steps, eval_steps = phase_steps(config)
    in_phase = tf.math.floormod(
        tf.cast(step, tf.int64), train_steps + eval_steps)
    steps_left = (train_steps - in_phase) // num_agents
    made, done, score, summary = algo.collect(length, steps_left)
    return done, score, summary, made * num_agents


def compiles_evaluation(config, eval_batch_env, view):
    """Whether evaluations run as one session call of all their steps.

    With `compile_rollout`, where the view has the pure policy step of
    `compiled_rollout.first_episodes` and the environments are in-graph or
    behind the bridge with at most `BRIDGE_EVAL_ENV_STEPS` steps.
    """
    if not (config.compile_rollout and hasattr(view, 'step')):
        return False
    env = rollout_env.rollout_env(eval_batch_env)
    if env is None:
        return False
    return bool(env.jit_compile or len(eval_batch_env) * config.max_length
                <= BRIDGE_EVAL_ENV_STEPS)


def _compiled_evaluation(eval_batch_env, view, max_length, log):
    """Score the first episode of every evaluation environment in one call.

    Returns done, score and a summary of the mean score.
    """
    done, score = compiled_rollout.first_episodes(
        eval_batch_env, view, max_length)

    def _summary():
        ended = tf.boolean_mask(score, done)
        return tf.cond(
            tf.size(ended) > 0,
            lambda: tf.summary.scalar('mean_score', tf.reduce_mean(ended)),
            str)

    # tf.cond(pred, fn, str): the empty summary where nothing is logged.
    summary = tf.cond(tools.identity_after([done, score], log), _summary, str)
    return done, score, summary


def _first_episodes(done, score, reset, log):
    """Keep the first episode of every environment in an evaluation phase.

    `reset` is true on the first step of a phase. Returns done (of first
    episodes), score and a summary of their mean score since the last log.
    """
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
        # tf.cond(pred, fn, str): the empty summary where nothing is logged.
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
    """Environment steps of one training phase and of one evaluation phase.

    `steps` is split into equal training phases of whole batch steps, at
    most `eval_every` each (default: `max(update_every, num_agents)`
    full-length episodes, at most `steps`), so a run ends with an
    evaluation. An evaluation runs `eval_episodes` environments for
    `max_length` steps.

    Args:
      config: Completed configuration (with `max_length`).

    Returns:
      Tuple of two integers.
    """
    steps = max(1, int(math.ceil(config.steps)))
    every = config.eval_every or min(
        steps, max(config.update_every, config.num_agents) *
        config.max_length)
    phases = int(math.ceil(steps / every))
    batches = int(math.ceil(steps / phases / config.num_agents))
    train_steps = batches * config.num_agents
    return train_steps, int(config.eval_episodes * config.max_length)


def training_steps(config, global_step):
    """The training steps of a run at a global step (of a checkpoint).

    Args:
      config: Completed configuration.
      global_step: Integer global step, training and evaluation steps.

    Returns:
      Integer.
    """
    return loop_lib.phase_steps_at(global_step, phase_steps(config))[0]


def schedule_steps(config):
    """The global step (of both phases) at which a run ends.

    Args:
      config: Completed configuration.

    Returns:
      Integer.
    """
    train_steps, eval_steps = phase_steps(config)
    steps = max(1, int(math.ceil(config.steps)))
    phases = int(math.ceil(steps / train_steps))
    return phases * (train_steps + eval_steps)


def define_simulation_graph(batch_env, algo_cls, config):
    """Define the algorithm and the simulation operation.

    Args:
      batch_env: In-graph batch environment.
      algo_cls: Constructor of the algorithm.
      config: Configuration of the algorithm; keys it lacks take their
          default (`config_spec.with_defaults`); retired keys get a warning.

    Returns:
      AttrDict of the graph's interface: step; the bool variables
      is_training, should_log, do_report, force_reset; algo, done, score,
      summary.
    """
    config_spec.warn_retired_keys(config)
    config = config_spec.with_defaults(config)
    switches = define_switches()
    algo = algo_cls(
        batch_env, switches.step, switches.is_training, switches.should_log,
        config)
    # Pylint takes these exports for their same-named modules.
    done, score, summary = tools.simulate(  # pylint: disable=not-callable
        batch_env, algo, switches.should_log, switches.force_reset)
    return simulation_interface(
        switches, algo=algo, batch_env=batch_env, done=done, score=score,
        summary=summary)


def define_switches():
    """The global step and the switches of a simulation graph, all false.

    Variables rather than placeholders, so that `tools.Loop` sets them in
    the graph and session runs need no feeds.

    Returns:
      AttrDict of step and the bool variables is_training, should_log,
      do_report and force_reset.
    """
    step = tf.train.get_or_create_global_step()
    with tf.variable_scope('simulation_temporary'):
        switches = {
            name: tf.Variable(False, trainable=False, name=name)
            for name in ('is_training', 'should_log', 'do_report',
                         'force_reset')}
    return tools.AttrDict(step=step, **switches)


def simulation_interface(switches, **parts):
    """The interface of a finished simulation graph; logs its weights.

    Args:
      switches: AttrDict of `define_switches`.
      **parts: The algorithm and the tensors of the simulation.

    Returns:
      AttrDict of the switches and the parts.
    """
    num_weights = tools.count_weights()  # pylint: disable=not-callable
    logging.getLogger('agents').info(
        'Graph contains %d trainable variables.', num_weights)
    return tools.AttrDict(switches, **parts)
