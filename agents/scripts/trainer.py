"""Training an agent: the loop of phases, and what stops it early.

`train` builds the batch of environments and the simulation graph, runs the
training and evaluation phases in a session, yields the evaluation scores,
and turns every way training can end early (an interruption, a failed or
stuck environment, a non-finite value, a full disk) into a checkpoint of the
last complete step and one error. The script `train.py` parses the flags and
calls it.
"""

import contextlib
import functools
import logging
import math
import os
import random
import re

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from agents import tools
from agents.tools import batch_env as batch_env_lib
from agents.tools import compiled_rollout
from agents.scripts import config_io
from agents.scripts import config_spec
from agents.scripts import env_modes
from agents.scripts import provenance
from agents.scripts import run_folder
from agents.scripts import stopping
from agents.scripts import utility


# Seconds a step in progress has to end after SIGINT or SIGTERM before the
# watchdog stops the process without it.
_STUCK_STEP_GRACE = 2.0


def define_loop(
        graph, logdir, train_steps, eval_steps, caller_thread=True):
    """Alternate a training and an evaluation phase.

    The evaluation phase runs the evaluation tensors of the graph
    (`eval_done`, `eval_score`, `eval_summary`) and reports the mean score of
    its episodes once, at its end.

    Args:
      graph: AttrDict of the simulation graph's tensors (see
          `define_simulation`).
      logdir: Run folder for summaries and checkpoints, or None.
      train_steps: Env steps of each training phase.
      eval_steps: Env steps of each evaluation phase.
      caller_thread: Whether both phases run their ops in the calling
          thread rather than the inter-op pool (config `caller_thread`).

    Returns:
      `tools.Loop`.
    """
    loop = tools.Loop(
        logdir, graph.step, graph.should_log, graph.do_report,
        graph.force_reset)
    # How often a failed environment was replaced (`restart_workers`).
    restarts = tf.cond(
        graph.should_log,
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

    Training steps `batch_env` with the algorithm; its episodes go on
    across phases. Evaluation steps `eval_batch_env` with the algorithm's
    `evaluation_view(eval_batch_env, config.eval_stochastic)`: the same
    weights and normalizers, per-agent state of its own. Every evaluation
    phase begins all its episodes anew and scores the first episode of
    each environment (those that follow within the phase go unscored).

    An algorithm without `evaluation_view` (as those written for the 2017
    package) evaluates on the training batch as in 2017, with
    `is_training` false, and every phase then begins the episodes anew;
    `eval_batch_env` must be None then.

    Args:
      batch_env: In-graph batch of the training environments.
      eval_batch_env: In-graph batch of the evaluation environments, or
          None for an algorithm without `evaluation_view`.
      config: Completed configuration.

    Returns:
      AttrDict of step; the bool variables is_training, should_log,
      do_report, force_reset; algo, batch_env, done, score, summary of
      training; eval_batch_env, eval_done, eval_score, eval_summary,
      eval_feed (the feed of the evaluation phase) and eval_run_steps (the
      environment steps of one evaluation run, None for one batch step).
    """
    switches = utility.define_switches()
    should_log, force_reset = switches.should_log, switches.force_reset
    algo = config.algorithm(
        batch_env, switches.step, switches.is_training, should_log, config)
    separate = eval_batch_env is not None
    # Steps of a run of the evaluation phase; None: one batch step.
    eval_run_steps = None
    # Steps of a training run at most and those it made; None: one batch
    # step.
    run_steps = made_steps = None
    if separate and compiles_training(config, batch_env, algo):
        done, score, summary, made_steps = _compiled_training(
            algo, switches.step, config, len(batch_env))
        run_steps = config.max_length * len(batch_env)
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
    return utility.simulation_interface(
        switches, algo=algo, batch_env=batch_env, done=done, score=score,
        summary=summary, eval_batch_env=eval_batch_env, eval_done=eval_done,
        eval_score=eval_score, eval_summary=eval_summary,
        eval_feed=eval_feed, eval_run_steps=eval_run_steps,
        run_steps=run_steps, made_steps=made_steps)


def compiles_training(config, batch_env, algo):
    """Whether training runs many steps per compiled call.

    It does with `compile_rollout` where the environments are an in-graph
    task and the algorithm can collect on it in a compiled loop (PPO with
    a feed-forward network and whole episodes, see
    `PPO.compiles_collection`).
    """
    compiles = getattr(algo, 'compiles_collection', None)
    return bool(
        config.compile_rollout and compiles is not None and
        compiles(batch_env))


def _compiled_training(algo, step, config, num_agents):
    """Training runs of up to `max_length` batch steps in one compiled call.

    Returns:
      Tuple of the bool tensor of the agents whose episode ended in a run,
      their last scores, the summary, and the environment steps the run
      made (the most a run makes is `max_length * num_agents`).
    """
    train_steps, eval_steps = phase_steps(config)
    in_phase = tf.math.floormod(
        tf.cast(step, tf.int64), train_steps + eval_steps)
    steps_left = (train_steps - in_phase) // num_agents
    made, done, score, summary = algo.collect(config.max_length, steps_left)
    return done, score, summary, made * num_agents


def compiles_evaluation(config, eval_batch_env, view):
    """Whether evaluations run as one compiled call of all their steps.

    They do with `compile_rollout` where the evaluation environments are
    written in TensorFlow operations (`--env_mode=graph`) and the
    evaluation view has the pure policy step of
    `tools.compiled_rollout.Policy`.
    """
    return bool(
        config.compile_rollout and
        hasattr(eval_batch_env, 'transition') and
        hasattr(view, 'step'))


def _compiled_evaluation(eval_batch_env, view, max_length, log):
    """Score the first episode of every evaluation environment in one call.

    Args:
      eval_batch_env: In-graph batch of a task (`InGraphTaskBatch`).
      view: The algorithm's evaluation view.
      max_length: Steps of the evaluation, as the episodes' time limit.
      log: Bool tensor; whether the run writes summaries.

    Returns:
      Tuple of the bool tensor of the first episodes that ended, their
      scores, and a summary of their mean score.
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

    Args:
      done: Bool tensor of the episodes that ended in the step.
      score: Float tensor of their scores.
      reset: Bool variable, true on the first step of a phase.
      log: Bool tensor; whether the step writes summaries.

    Returns:
      Tuple of the bool tensor of the first episodes that ended in the step,
      the scores, and a summary of the mean score of the first episodes
      that ended since the last logged step.
    """
    with tf.variable_scope('evaluation_temporary'):
        ended = tf.Variable(
            lambda: tf.zeros(done.shape, tf.bool), trainable=False,
            name='ended')
        mean_score = tools.StreamingMean((), tf.float32, 'mean_score')
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


def train(config, env_mode, on_report=None):
    """Train an agent as the configuration describes.

    With `config.logdir`, a new run folder receives `config.yaml` once the
    graph is built, so that a configuration that fails to build leaves no
    folder behind; then summaries and checkpoints. An existing run folder
    keeps its `config.yaml` and resumes from its latest readable checkpoint.

    Training that stops early saves a checkpoint of the last complete step
    first: on `KeyboardInterrupt` (Ctrl-C, or SIGTERM in the script), when
    the generator is closed before the end, and when an environment fails.
    Non-finite values save none, since they may interrupt an update half
    way. Environments that fail are replaced instead when the config sets
    `restart_workers`; `worker_timeout` bounds the seconds a worker may take
    to answer.

    The run folder is locked while training (see `run_folder`); a second
    trainer on it fails with a `ConfigError`. Nothing can interrupt an
    environment stuck in this process: after `worker_timeout` seconds a
    watchdog thread saves the last completed step, prints the error and
    ends the process with exit code 1 (see `tools.StepWatchdog`). Under
    `main`, SIGINT and SIGTERM during a stuck step end it likewise, with 130
    or 143.

    Args:
      config: Configuration object; `config.logdir` may be None.
      env_mode: How to step the environments: 'auto', 'inprocess',
          'processes' or 'slices' (see `env_modes.MODES`), or 'graph' for
          the in-graph task (see `env_modes.resolve_env_mode`); True
          stands for 'processes' and False for 'inprocess'.
      on_report: None, or a function called with the global step and the
          score at every report, before the score is yielded (the sweep
          records both).

    Raises:
      config_io.ConfigError: When the configuration, the environment or the
          run folder cannot be used.
      utility.TrainingError: When an environment failed, a value was NaN
          or infinite, or a checkpoint or summary could not be written (a
          full disk); its cause is the original error.

    Yields:
      The mean evaluation score at every evaluation report.
    """
    env_mode = env_modes.check_env_mode(env_mode)
    if env_mode == env_modes.GRAPH:
        # Before `complete_config` builds the environment, whose loading
        # (MuJoCo's warnings, say) would print ahead of the one line.
        env_modes.check_graph_task(config)
    config = config_spec.complete_config(config)
    env_mode = env_modes.resolve_env_mode(config, env_mode)
    lock = None
    if config.logdir:
        lock = run_folder.RunLock(config.logdir)
        try:
            lock.acquire()
        except run_folder.RunFolderInUse as error:
            raise config_io.ConfigError(str(error)) from None
        except OSError as error:
            raise config_io.ConfigError(
                f'Cannot create the run folder {config.logdir}: '
                f'{error.strerror or error}.') from error
    try:
        yield from _train_locked(config, env_mode, lock, on_report)
    finally:
        if lock:
            # A new run that failed before it wrote its configuration leaves
            # no folder behind.
            lock.release(remove_created=not os.path.exists(
                os.path.join(config.logdir, 'config.yaml')))


def _train_locked(config, env_mode, lock, on_report):
    """`train` once the run folder is locked; see there."""
    graph = tf.Graph()
    with graph.as_default():
        if config.seed is not None:
            random.seed(config.seed)
            np.random.seed(config.seed)
            tf.set_random_seed(config.seed)
        separate = hasattr(config.algorithm, 'evaluation_view')
        batch_env = eval_batch_env = None
        try:
            with tf.variable_scope('environments'):
                batch_env = env_modes.define_in_graph_batch(
                    config, config.seed, env_mode)
            if separate:
                with tf.variable_scope('eval_environments'):
                    eval_batch_env = env_modes.define_in_graph_batch(
                        config, config.seed, env_mode, evaluation=True,
                        leader=batch_env)
        except Exception as error:
            if batch_env is not None:
                batch_env.close()
            # The same environment was built in this process already.
            message = batch_env_lib.first_line(error)
            raise utility.TrainingError(
                f'Cannot start the environments: {message}') from error
        batches = _Batches(batch_env, eval_batch_env)
        try:
            try:
                simulation = define_simulation(
                    batch_env, eval_batch_env, config)
            except ValueError as error:
                # The algorithm and network reject their settings this way.
                raise config_io.ConfigError(str(error)) from error
            saver = utility.define_saver(exclude=(r'.*_temporary.*',))
            resumed = bool(config.logdir) and os.path.exists(
                os.path.join(config.logdir, 'config.yaml'))
            if config.logdir and not resumed:
                # What produced the run, beside the configuration it keeps;
                # a resumed run keeps both of its first start.
                provenance.write(config.logdir, provenance.record())
                utility.save_config(config, config.logdir)
            loop = define_loop(
                simulation, config.logdir, *phase_steps(config),
                caller_thread=config.caller_thread)
        except BaseException:
            batches.close()
            raise
    total_steps = schedule_steps(config)
    session_config = make_session_config(config)
    try:
        with tf.Session(graph=graph, config=session_config) as sess:
            try:
                restored = utility.initialize_variables(
                    sess, saver, config.logdir)
            except ValueError as error:
                raise config_io.ConfigError(
                    f'Cannot resume {config.logdir}: {error}') from error
            if restored:
                logging.getLogger('agents').info(
                    'Restored checkpoint %s.', restored)
            elif resumed:
                logging.getLogger('agents').info(
                    'No checkpoint in %s yet; training starts at step 0.',
                    config.logdir)
            saver = utility.RunSaver(saver, config.logdir)
            abandon = functools.partial(_abandon, functools.partial(
                _save_checkpoint, sess, saver, simulation.step,
                config.logdir, on_failure=True), lock)
            stop = stopping.active()
            watchdog = tools.StepWatchdog(
                batches, timeout=config.worker_timeout or 600,
                grace=_STUCK_STEP_GRACE,
                on_hang=lambda error: abandon(
                    lambda: 'Error: Training stopped: '
                    f'{batch_env_lib.first_line(error)}', 1),
                on_stuck_signal=lambda signum: abandon(
                    lambda: stop.describe(signum), 128 + signum))
            with watchdog, (
                    watchdog.watch_signals() if stop
                    else contextlib.nullcontext()):
                yield from _run_loop(
                    loop, sess, saver, simulation, config.logdir,
                    total_steps, on_report)
    finally:
        batches.close()


def make_session_config(config):
    """The session configuration of training.

    Args:
      config: Configuration with `session_threads`.

    Returns:
      `tf.ConfigProto`.
    """
    session_config = tf.ConfigProto(allow_soft_placement=True)
    session_config.gpu_options.allow_growth = True
    # Grappler optimizes the whole graph, training branch included, once
    # per phase on its first run: one pass instead of two halves that cost
    # (about 0.8 s instead of 1.6 s per phase for pendulum) and steps as
    # fast afterwards.
    session_config.graph_options.rewrite_options.meta_optimizer_iterations = (
        rewriter_config_pb2.RewriterConfig.ONE)
    if config.session_threads:
        # Small networks step faster on one thread than on a pool that
        # hands every op to another thread (see benchmarks/profile_step.py).
        session_config.inter_op_parallelism_threads = config.session_threads
        session_config.intra_op_parallelism_threads = config.session_threads
        session_config.use_per_session_threads = True
    return session_config


def _run_loop(
        loop, sess, saver, simulation, logdir, total_steps, on_report=None):
    """Run the loop; save a checkpoint at its end and where it stops early.

    Args:
      loop: `tools.Loop` of the phases.
      sess: Session of the graph.
      saver: Saver of the checkpoints.
      simulation: AttrDict of the simulation graph's tensors.
      logdir: Run folder, or None to save nothing.
      total_steps: Global step at which training ends.
      on_report: None, or a function of the global step and the score,
          called at every report.

    Raises:
      utility.TrainingError: When an environment failed, a value was NaN or
          infinite, or a checkpoint or summary could not be written.

    Yields:
      The scores the loop yields.
    """
    save = functools.partial(
        _save_checkpoint, sess, saver, simulation.step, logdir)
    stop = stopping.active()
    if stop:
        stop.deferred = True
    scores = loop.run(
        sess, saver, total_steps, stop=stop and stop.requested)
    try:
        for score in scores:
            if on_report is not None:
                on_report(int(sess.run(simulation.step)), score)
            yield score
    except (KeyboardInterrupt, GeneratorExit):
        save(on_failure=True)
        raise
    except OSError as error:
        # Summaries could not be written, e.g. on a full disk.
        save(on_failure=True)
        raise utility.TrainingError(str(error)) from error
    except tf.errors.OpError as error:
        failure = simulation.batch_env.error
        if failure is None and simulation.eval_batch_env is not None:
            failure = simulation.eval_batch_env.error
        if stop and stop.requested():
            # Workers that the signal reached too may have failed the step;
            # either way it changed no state that checkpoints hold.
            save(on_failure=True)
            raise stopping.Interrupted(stop.signum) from None
        if failure is None:
            step = int(sess.run(simulation.step))
            raise utility.TrainingError(
                f'Training stopped at global step {step}: '
                f'{_describe_op_error(error)}') from error
        # A failed step changed no state that checkpoints hold.
        save(on_failure=True)
        message = batch_env_lib.first_line(failure)
        raise utility.TrainingError(
            f'Training stopped: {message}') from failure
    finally:
        scores.close()
        if stop:
            stop.deferred = False
    if stop and stop.requested():
        save(on_failure=True)
        raise stopping.Interrupted(stop.signum)
    save()


def _abandon(save, lock, message, code):
    """End the process from the watchdog's thread; see `stopping.abandon`.

    The stuck step changed no state that checkpoints hold, so the checkpoint
    holds the last completed step.

    Args:
      save: Saves a checkpoint, logging instead of raising its errors.
      lock: The `run_folder.RunLock` of the run folder, or None.
      message: Callable returning the line to print.
      code: Exit code.
    """
    stopping.abandon(save, lock and lock.release, message(), code)


def _save_checkpoint(sess, saver, step, logdir, on_failure=False):
    """Save the variables at the current global step, if there is a logdir.

    Args:
      sess: Session of the graph.
      saver: `utility.RunSaver` of the checkpoints.
      step: Global step tensor.
      logdir: Run folder, or None to save nothing.
      on_failure: Whether training is stopping for another reason, which an
          error of the saving should not hide; it is logged instead.

    Raises:
      utility.CheckpointError: When saving failed, unless `on_failure`.
    """
    if not logdir:
        return
    try:
        path = saver.save(sess, None, int(sess.run(step)))
    except utility.CheckpointError as error:
        if not on_failure:
            raise
        logging.getLogger('agents').warning('%s', error)
        return
    logging.getLogger('agents').info('Saved checkpoint %s.', path)


def _describe_op_error(error):
    """One line about an error of a graph operation."""
    lines = [line.strip() for line in error.message.splitlines()]
    for line in lines:
        # The text of `tf.debugging.check_numerics`, of its gradient, and
        # of the environment step's checks in NumPy.
        match = re.match(
            r'^(Not a number .* in gradient\. )?(?:ValueError: )?'
            r'(b\'(.+)\'|(.+?)) : Tensor had (.+) values$', line)
        if match:
            name = match.group(3) or match.group(4)
            where = 'the gradient of ' if match.group(1) else ''
            return (
                f"{where}'{name}' had {match.group(5)} values; expected "
                'finite numbers.')
    # Skip the lines that locate the failed node.
    ignore = ('Graph execution error', 'Detected at node', 'File ', 'Node:')
    lines = [line for line in lines if line and not line.startswith(ignore)]
    return lines[0] if lines else type(error).__name__


def phase_steps(config):
    """Environment steps of one training phase and of one evaluation phase.

    Evaluation has environments of its own, so training phases need not
    hold whole episodes. The run's `steps` are split into equal training
    phases of at most `eval_every` steps each (by default those of
    `update_every` full-length episodes, or of one per agent where there
    are more agents, but no more than `steps`), a whole number of batch
    steps each; so the run ends with an evaluation whatever `steps` is, and
    trains at most one batch step per phase more than `steps`. An
    evaluation runs `eval_episodes` environments for `max_length` steps.

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


def schedule_steps(config):
    """The global step at which a run ends: after its last evaluation.

    The global step counts the steps of training and evaluation phases.

    Args:
      config: Completed configuration.

    Returns:
      Integer.
    """
    train_steps, eval_steps = phase_steps(config)
    steps = max(1, int(math.ceil(config.steps)))
    phases = int(math.ceil(steps / train_steps))
    return phases * (train_steps + eval_steps)


class _Batches:
    """The training and the evaluation batch, for the watchdog and closing.

    `busy` is that of whichever batch steps, and `batch[index]` the
    environment of the batch that was busy last.
    """

    def __init__(self, batch_env, eval_batch_env):
        self._batches = [
            batch for batch in (batch_env, eval_batch_env)
            if batch is not None]
        self._last = self._batches[0]

    @property
    def busy(self):
        """The `busy` record of the batch that steps, or None."""
        for batch in self._batches:
            busy = getattr(batch, 'busy', None)
            if busy:
                self._last = batch
                return busy
        return None

    def __getitem__(self, index):
        return self._last[index]

    def close(self):
        """Close both batches, the second even when the first fails to."""
        try:
            self._batches[0].close()
        finally:
            for batch in self._batches[1:]:
                batch.close()
