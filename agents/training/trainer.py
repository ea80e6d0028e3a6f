"""Training an agent: the loop of phases, and what stops it early."""

import contextlib
import functools
import logging
import random

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from agents import tools
from agents.tools import batch_env as batch_env_lib
from agents.training import config_io
from agents.training import config_spec
from agents.environments import env_modes
from agents.environments import graph_env
from agents.training import population_run
from agents.training import provenance
from agents.training import run_folder
from agents.training import simulation as simulation_lib
from agents.training import stopping
from agents.training import checkpoints
from agents.training import errors


def train(config, env_mode=None, on_report=None, *, env_processes=None,
          seeds=None, variants=None):
    """Train an agent; yield the mean evaluation score at every report. A
    new run folder (`config.logdir`, may be None) receives `config.yaml`
    once the graph is built; an existing one resumes. A ConfigError where
    the configuration, the environment or the run folder cannot be used; a
    TrainingError where an environment failed, a value was not finite or a
    checkpoint or summary could not be written.

    Args:
      env_mode: A mode of `env_modes.MODES`, None for 'auto', or a bool.
      on_report: None, or a function of the training steps and the score
          (and of a population, the members' scores), called at every
          report before the score is yielded.
      env_processes: The 2017 name of a boolean `env_mode`.
      seeds: None, or distinct seeds of a population
          (`population_run`): a member per seed; the scores pool the
          members' episodes.
      variants: None, or with `seeds` the variant settings of the
          population (tuples of `(key, text)` pairs of `--set`, see
          `population_run.split_settings`): a member per variant and seed.
    """
    env_mode = env_modes.env_mode_from_flags(env_mode, env_processes)
    config = config_spec.complete_config(config)
    with run_folder.locked(config.logdir) as lock:
        saved = checkpoints.saved_env(config.logdir)
        checkpoints.check_resumed_seeds(
            config.logdir, saved, seeds, variants,
            lock.resumed and config.get(checkpoints.POPULATION_KEY) or None)
        if seeds or config.get(checkpoints.POPULATION_KEY):
            # What config.yaml records (None: a single run).
            config = config.copy(**{checkpoints.POPULATION_KEY: seeds and (
                checkpoints.population_flags(seeds, variants)) or None})
        graph = tf.Graph()
        with graph.as_default():
            if config.seed is not None:
                random.seed(config.seed)
                np.random.seed(config.seed)
                tf.set_random_seed(config.seed)
            env_mode, simulation, batches = _define_run(
                config, env_mode, saved, seeds, variants)
            try:
                # No temporary state, but for that of an exact resumption.
                saver = checkpoints.define_saver(
                    exclude=(r'.*_temporary.*',),
                    include=tools.resume_variables())
            except BaseException:
                batches.close()
                raise
        yield from _run(
            config, env_mode, graph, simulation, saver, batches, lock,
            on_report)


def _define_run(config, env_mode, saved, seeds, variants):
    """The resolved env mode, the simulation and the `_Batches` of a run,
    or of a population of the `seeds` and `variants`, of a run folder's
    `SavedEnv`."""
    if not seeds:
        env_mode, batch_env, eval_batch_env = graph_env.define_run_batches(
            config, env_mode, hasattr(config.algorithm, 'evaluation_view'),
            saved)
        batches = _Batches(batch_env, eval_batch_env)
        try:
            with _settings_checked():
                return env_mode, simulation_lib.define_simulation(
                    batch_env, eval_batch_env, config), batches
        except BaseException:
            batches.close()
            raise
    with _settings_checked():
        simulation = population_run.define_population(
            config, seeds, env_mode, saved, variants)
    members = simulation.members
    if saved.kind is None:
        # Else the checkpoint holds the members.
        with simulation.unlocked:
            simulation.initialize = members.initialize
    return members.env_mode, simulation, _Batches(
        members.batch_env, members.eval_batch_env)


@contextlib.contextmanager
def _settings_checked():
    """Raise a ValueError (how algorithms and networks reject their
    settings) as a ConfigError of its first line."""
    try:
        yield
    except ValueError as error:
        raise config_io.ConfigError(
            str(error).strip().splitlines()[0]) from error


def _run(config, env_mode, graph, simulation, saver, batches, lock,
         on_report):
    """Write a new run's files; yield the phases' scores; save at any end."""
    # Without the scripts' signal handlers, a request that never comes.
    stop = stopping.active() or stopping.StopRequest(None)
    reports = simulation.get('reports')  # A population's (population_run).
    session_config = make_session_config(config, env_mode)
    try:
        if lock.run_dir and not lock.resumed:
            run_folder.write_provenance(lock.run_dir, provenance.record())
            config_io.save_config(config, lock.run_dir)
        with tf.Session(graph=graph, config=session_config) as sess:
            saver = checkpoints.restore_run(sess, saver, config, lock)
            if simulation.get('initialize'):
                simulation.initialize(sess)
            save = functools.partial(
                _save_checkpoint, sess, saver, simulation.step)
            # The stuck step changed no state that checkpoints hold.
            with stopping.watch(
                    batches, config.worker_timeout, functools.partial(
                        save, on_failure=True, consistent=False),
                    lock.release):
                stop.deferred = True
                scores = simulation.loop.run(
                    sess, saver, simulation.total_steps,
                    stop=stop.requested,
                    describe=reports and reports.describe)
                try:
                    for score in scores:
                        shown = simulation.loop.shown_step(
                            int(sess.run(simulation.step)))
                        report = (shown, score) + (
                            (reports.report(sess, shown),) if reports else ())
                        if on_report is not None:
                            on_report(*report)
                        yield score
                    # Still deferred, a signal during the final save waits
                    # for it; the script then says the run finished.
                    interrupted = stop.requested() and (
                        int(sess.run(simulation.step))
                        < simulation.total_steps)
                    save(on_failure=interrupted)
                    if reports and not interrupted:
                        reports.finish(sess)
                except GeneratorExit:
                    save(on_failure=True)
                    raise
                except KeyboardInterrupt:
                    # Raised anywhere, within an environment's step too.
                    save(on_failure=True, consistent=False)
                    raise
                except OSError as error:
                    # Summaries could not be written, e.g. on a full disk.
                    save(on_failure=True)
                    raise errors.TrainingError(str(error)) from error
                except tf.errors.OpError as error:
                    failure = batches.error
                    if failure is not None or stop.requested():
                        # Such a step changed no state that checkpoints hold.
                        save(on_failure=True, consistent=False)
                    if stop.requested():
                        raise stopping.Interrupted(stop.signum) from None
                    if failure is None:
                        raise errors.TrainingError(
                            'Training stopped at global step '
                            f'{int(sess.run(simulation.step))}: '
                            f'{errors.describe_op_error(error)}') from error
                    raise errors.TrainingError(
                        'Training stopped: '
                        f'{batch_env_lib.first_line(failure)}') from failure
                finally:
                    scores.close()
                    stop.deferred = False
                if interrupted:
                    raise stopping.Interrupted(stop.signum)
    finally:
        if reports:
            reports.close()
        batches.close()


def enable_determinism(config):
    """Turn on TensorFlow's op determinism where the config (or its default)
    seeds the run; entry points call it, as it holds for the process."""
    if config_spec.with_defaults(config).seed is not None:
        tf.compat.v2.config.experimental.enable_op_determinism()


def make_session_config(config, env_mode=None):
    """The `tf.ConfigProto` of training in a resolved env mode (or None)."""
    session_config = tf.ConfigProto(allow_soft_placement=True)
    session_config.gpu_options.allow_growth = True
    rewrite = session_config.graph_options.rewrite_options
    # One pass of Grappler over the whole graph, once per phase on its first
    # run (0.8 s instead of 1.6 s per phase for pendulum), steps as fast.
    rewrite.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    # Control-flow sinking orders constants differently per process, and so
    # the program XLA compiles and its key in the persistent cache.
    rewrite.experimental_conditional_code_motion = (
        rewriter_config_pb2.RewriterConfig.OFF)
    if env_modes.in_graph_mode(env_mode) and config.get(
            'compile_rollout') and config.get('compile_update'):
        # XLA optimizes them; Grappler would spend a second or more a run.
        rewrite.disable_meta_optimizer = True
    if config.session_threads:
        # Small networks step faster on one thread than on a pool (see
        # benchmarks/profile_step.py).
        session_config.inter_op_parallelism_threads = config.session_threads
        session_config.intra_op_parallelism_threads = config.session_threads
        session_config.use_per_session_threads = True
    return session_config


def _save_checkpoint(sess, saver, step, on_failure=False, consistent=True):
    """Save a checkpoint, if any; `on_failure`: log errors, not raise."""
    if saver is None:
        return
    try:
        path = saver.save(
            sess, None, int(sess.run(step)), consistent=consistent)
    except errors.CheckpointError as error:
        if not on_failure:
            raise
        logging.getLogger('agents').warning('%s', error)
        return
    logging.getLogger('agents').info('Saved checkpoint %s.', path)


class _Batches:
    """Both batches, for the watchdog (`busy`, `[index]`) and closing."""

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

    @property
    def error(self):
        """The error of either batch's failed environment step, or None."""
        return next((
            batch.error for batch in self._batches
            if batch.error is not None), None)

    def __getitem__(self, index):
        return self._last[index]

    def close(self):
        """Close both batches, the second even when the first fails to."""
        try:
            self._batches[0].close()
        finally:
            for batch in self._batches[1:]:
                batch.close()
