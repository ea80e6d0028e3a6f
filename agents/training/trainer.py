"""Training an agent: the loop of phases, and what stops it early.

`train` builds the environments and the simulation graph, runs the training
and evaluation phases and yields the evaluation scores; every early end
becomes a checkpoint of the last complete step and one error (see
docs/reliability.md). The script `train.py` parses the flags and calls it.
"""

import contextlib
import functools
import logging
import os
import random

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from agents import tools
from agents.tools import batch_env as batch_env_lib
from agents.tools import resume_state
from agents.training import config_io
from agents.training import config_spec
from agents.environments import env_modes
from agents.environments import graph_env
from agents.training import provenance
from agents.training import run_folder
from agents.training import simulation as simulation_lib
from agents.training import stopping
from agents.training import checkpoints
from agents.training import errors


# Seconds a step in progress has to end after SIGINT or SIGTERM before the
# watchdog stops the process without it.
_STUCK_STEP_GRACE = 2.0


def train(config, env_mode=None, on_report=None, *, env_processes=None):
    """Train an agent as the configuration describes.

    A new run folder (`config.logdir`) receives `config.yaml` once the graph
    is built, so a config that fails to build leaves no folder; an existing
    one resumes from its latest readable checkpoint. The 'agents' logger
    names the folder ('Run folder PATH.' or 'Run folder PATH, resumed.'),
    which stays locked while training (see `run_folder`). Training that
    stops early (Ctrl-C, SIGTERM, a closed generator, a failed environment)
    saves a checkpoint of the last complete step first, except on
    non-finite values; a stuck step ends the process (see
    `tools.StepWatchdog` and docs/reliability.md).

    Args:
      config: Configuration object; `config.logdir` may be None.
      env_mode: 'auto', 'inprocess', 'processes', 'slices' or 'graph' (see
          `env_modes.MODES`); True stands for 'processes' and False for
          'inprocess'. None: 'auto'.
      on_report: None, or a function called with the training steps and
          the score at every report, before the score is yielded.
      env_processes: The 2017 name of a boolean `env_mode`.

    Raises:
      config_io.ConfigError: When the configuration, the environment or the
          run folder cannot be used.
      errors.TrainingError: When an environment failed, a value was not
          finite or a checkpoint or summary could not be written; its cause
          is the original error.

    Yields:
      The mean evaluation score at every evaluation report.
    """
    env_mode = env_modes.env_mode_from_flags(env_mode, env_processes)
    if env_modes.in_graph_mode(env_mode):
        # Before `complete_config` builds the environment, whose loading
        # (MuJoCo's warnings, say) would print ahead of the one line.
        graph_env.check_task(config)
    config = config_spec.complete_config(config)
    lock = None
    if config.logdir:
        # First, since visualize and export need it, and a long run may be
        # followed in TensorBoard from the start.
        logging.getLogger('agents').info(
            'Run folder %s%s.', config.logdir,
            ', resumed' if _has_config(config.logdir) else '')
        lock = _lock_run_folder(config.logdir)
    try:
        if lock:
            _check_own_checkpoints(config.logdir)
        # What the checkpoint says of the environments that trained it.
        saved = checkpoints.saved_env(config.logdir)
        yield from _train_locked(config, env_mode, saved, lock, on_report)
    finally:
        if lock:
            # A new run that failed before it wrote its configuration leaves
            # no folder behind.
            lock.release(remove_created=not _has_config(config.logdir))


def _has_config(logdir):
    """Whether the run folder holds its `config.yaml`."""
    return os.path.exists(os.path.join(logdir, 'config.yaml'))


def _lock_run_folder(logdir):
    """Acquire the `run_folder.RunLock` of the folder, or raise ConfigError."""
    lock = run_folder.RunLock(logdir)
    try:
        lock.acquire()
    except run_folder.RunFolderInUse as error:
        raise config_io.ConfigError(str(error)) from None
    except OSError as error:
        raise config_io.ConfigError(
            f'Cannot create the run folder {logdir}: '
            f'{error.strerror or error}.') from error
    return lock


def _check_own_checkpoints(run_dir):
    """Refuse a new run in a folder that holds checkpoints of another.

    Restoring them would train on from another trainer's weights (one whose
    folder moved away kept saving to its old path, say).
    """
    if _has_config(run_dir):
        return
    found = checkpoints.list_checkpoints(run_dir)
    if found:
        raise config_io.ConfigError(
            f'Run folder {run_dir} holds checkpoints of another run '
            f'({os.path.basename(found[0])}) but no config.yaml; a '
            'new run restores none it did not write: pass another '
            '--timestamp.')


def _train_locked(config, env_mode, saved, lock, on_report):
    """`train` once the run folder is locked; see there."""
    graph = tf.Graph()
    with graph.as_default():
        if config.seed is not None:
            random.seed(config.seed)
            np.random.seed(config.seed)
            tf.set_random_seed(config.seed)
        env_mode, batch_env, eval_batch_env = graph_env.define_run_batches(
            config, env_mode, hasattr(config.algorithm, 'evaluation_view'),
            saved)
        batches = _Batches(batch_env, eval_batch_env)
        try:
            resumed = bool(config.logdir) and _has_config(config.logdir)
            simulation, saver, loop = _define_run(
                config, batch_env, eval_batch_env, resumed)
        except BaseException:
            batches.close()
            raise
    total_steps = simulation_lib.schedule_steps(config)
    session_config = make_session_config(config, env_mode)
    try:
        with tf.Session(graph=graph, config=session_config) as sess:
            _restore(sess, saver, config, resumed)
            saver = checkpoints.RunSaver(
                saver, config.logdir, check=lock and lock.check)
            save = functools.partial(
                _save_checkpoint, sess, saver, simulation.step,
                config.logdir, on_failure=True, consistent=False)
            with _watch(batches, config, save, lock):
                yield from _run_loop(
                    loop, sess, saver, simulation, config.logdir,
                    total_steps, on_report)
    finally:
        batches.close()


def _define_run(config, batch_env, eval_batch_env, resumed):
    """Define the simulation, the saver and the loop; save a new run's files.

    Returns:
      Tuple of the simulation's AttrDict, the `tf.train.Saver` and the
      `tools.Loop`.
    """
    try:
        simulation = simulation_lib.define_simulation(
            batch_env, eval_batch_env, config)
    except ValueError as error:
        # The algorithm and network reject their settings this way;
        # templates append where they were defined, in more lines.
        raise config_io.ConfigError(
            str(error).strip().splitlines()[0]) from error
    # Model checkpoints leave out temporary state, but the state of an
    # exact resumption is kept (see `tools.resume_state`).
    saver = checkpoints.define_saver(
        exclude=(r'.*_temporary.*',), include=tools.resume_variables())
    if config.logdir and not resumed:
        # What produced the run, beside the configuration it keeps; a
        # resumed run keeps both of its first start.
        provenance.write(config.logdir, provenance.record())
        config_io.save_config(config, config.logdir)
    loop = simulation_lib.define_loop(
        simulation, config.logdir, *simulation_lib.phase_steps(config),
        caller_thread=config.caller_thread)
    return simulation, saver, loop


def _restore(sess, saver, config, resumed):
    """Initialize the variables or restore the latest checkpoint."""
    try:
        restored = checkpoints.initialize_variables(sess, saver, config.logdir)
    except checkpoints.CheckpointShapeError as error:
        raise config_io.ConfigError(
            f'Cannot resume {config.logdir}: '
            f'{_describe_shape_change(config, error)}') from error
    except ValueError as error:
        raise config_io.ConfigError(
            f'Cannot resume {config.logdir}: {error}') from error
    if restored:
        logging.getLogger('agents').info('Restored checkpoint %s.', restored)
        _apply_environment_state(sess)
    elif resumed:
        logging.getLogger('agents').info(
            'No checkpoint in %s yet; training starts at step 0.',
            config.logdir)


@contextlib.contextmanager
def _watch(batches, config, save, lock):
    """Run the body under the run's `tools.StepWatchdog`.

    `save` saves a checkpoint, logging instead of raising its errors. The
    stuck step changed no state that checkpoints hold, so the checkpoint
    holds the last completed step (see `stopping.abandon`).
    """
    stop = stopping.active()
    release = lock and lock.release
    watchdog = tools.StepWatchdog(
        batches, timeout=config.worker_timeout or 600,
        grace=_STUCK_STEP_GRACE,
        on_hang=lambda error: stopping.abandon(
            save, release,
            f'Error: Training stopped: {batch_env_lib.first_line(error)}', 1),
        on_stuck_signal=lambda signum: stopping.abandon(
            save, release, stop.describe(signum), 128 + signum),
        # As the handler does, where Python calls it twice.
        on_second_signal=lambda signum: stopping.exit_now(
            stop.describe(signum, again=True), 128 + signum))
    with watchdog, (
            watchdog.watch_signals() if stop and stop.abandon_stuck
            else contextlib.nullcontext()):
        yield


def make_session_config(config, env_mode=None):
    """The `tf.ConfigProto` of training.

    Args:
      config: Configuration with `session_threads`, `compile_rollout` and
          `compile_update`.
      env_mode: The resolved env mode, or None where unknown.
    """
    session_config = tf.ConfigProto(allow_soft_placement=True)
    session_config.gpu_options.allow_growth = True
    rewrite = session_config.graph_options.rewrite_options
    # Grappler optimizes the whole graph, training branch included, once
    # per phase on its first run: one pass instead of two halves that cost
    # (about 0.8 s instead of 1.6 s per phase for pendulum) and steps as
    # fast afterwards.
    rewrite.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
    # Grappler's control-flow sinking moves constants into the branches of
    # conditions in an order that changes from process to process, and so
    # the program XLA compiles from them and its key in the persistent
    # cache: a second run of the same graph would compile again.
    rewrite.experimental_conditional_code_motion = (
        rewriter_config_pb2.RewriterConfig.OFF)
    if fully_compiled(config, env_mode):
        # XLA optimizes the steps and the update itself; Grappler would
        # spend a second or more per run on the functions it compiles.
        rewrite.disable_meta_optimizer = True
    if config.session_threads:
        # Small networks step faster on one thread than on a pool that
        # hands every op to another thread (see benchmarks/profile_step.py).
        session_config.inter_op_parallelism_threads = config.session_threads
        session_config.intra_op_parallelism_threads = config.session_threads
        session_config.use_per_session_threads = True
    return session_config


def fully_compiled(config, env_mode):
    """Whether training and its update run as XLA calls: an in-graph task
    with `compile_rollout` and `compile_update`."""
    return bool(
        env_modes.in_graph_mode(env_mode) and config.get('compile_rollout')
        and config.get('compile_update'))


def _run_loop(
        loop, sess, saver, simulation, logdir, total_steps, on_report=None):
    """Run the loop and yield its scores; save at its end or early end."""
    save = functools.partial(
        _save_checkpoint, sess, saver, simulation.step, logdir)
    stop = stopping.active()
    if stop:
        stop.deferred = True
    scores = loop.run(
        sess, saver, total_steps, stop=stop and stop.requested)
    interrupted = False
    try:
        for score in scores:
            if on_report is not None:
                on_report(
                    loop.shown_step(int(sess.run(simulation.step))), score)
            yield score
        interrupted = bool(stop and stop.requested()) and (
            int(sess.run(simulation.step)) < total_steps)
        if interrupted:
            save(on_failure=True)
        else:
            # The run finished. Still deferred, a signal during the final
            # save waits for it; the script then says the run finished.
            save()
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
        failure = simulation.batch_env.error
        if failure is None and simulation.eval_batch_env is not None:
            failure = simulation.eval_batch_env.error
        if stop and stop.requested():
            # Workers that the signal reached too may have failed the step;
            # either way it changed no state that checkpoints hold.
            save(on_failure=True, consistent=False)
            raise stopping.Interrupted(stop.signum) from None
        if failure is None:
            step = int(sess.run(simulation.step))
            raise errors.TrainingError(
                f'Training stopped at global step {step}: '
                f'{errors.describe_op_error(error)}') from error
        # A failed step changed no state that checkpoints hold.
        save(on_failure=True, consistent=False)
        message = batch_env_lib.first_line(failure)
        raise errors.TrainingError(
            f'Training stopped: {message}') from failure
    finally:
        scores.close()
        if stop:
            stop.deferred = False
    if interrupted:
        raise stopping.Interrupted(stop.signum)


# Keys whose values are sizes of variables, and where in a variable's name
# a key's size may appear (None: anywhere).
_SHAPE_KEYS = (
    ('num_agents', None), ('eval_episodes', None), ('update_every', None),
    ('max_length', None), ('rollout_length', None),
    ('policy_layers', '/policy/'), ('value_layers', '/value/'))


def _describe_shape_change(config, error):
    """The text after 'Cannot resume RUN: ' naming the keys of new sizes."""
    if len(error.saved) == len(error.current):
        sizes = {
            new for old, new in zip(error.saved, error.current) if old != new}
    else:
        sizes = set(error.current)
    keys = []
    for key, where in _SHAPE_KEYS:
        value = config.get(key)
        values = value if isinstance(value, (tuple, list)) else (value,)
        if (where is None or where in f'/{error.name}/') and sizes & {
                size for size in values if isinstance(size, int)}:
            keys.append(f'{key}={value!r}')
    cause = (
        f"config.yaml's {' or '.join(keys)}" if keys
        else 'config.yaml, a size in it,')
    return (
        f'{cause} changes the shape of {error.name} from {error.saved} in '
        f'{os.path.basename(error.path)} to {error.current}; a resumed run '
        'keeps the shapes it started with: restore the value, or start a '
        'new run with another --timestamp.')


def _apply_environment_state(sess):
    """Continue the environments where the checkpoint left them, or say not."""
    reasons = resume_state.apply_saved(sess)
    if reasons:
        logging.getLogger('agents').warning(
            'Resumed with new episodes: %s; scores differ from those of a '
            'run straight through.', reasons[0])


def _save_checkpoint(
        sess, saver, step, logdir, on_failure=False, consistent=True):
    """Save a checkpoint at the global step, if there is a logdir.

    With `on_failure` training stops for another reason, which an error of
    the saving should not hide: it is logged instead of raised.
    `consistent`: see `checkpoints.RunSaver.save`.
    """
    if not logdir:
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
