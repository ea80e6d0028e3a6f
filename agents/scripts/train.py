r"""Train a reinforcement learning agent in the TensorFlow graph.

Command line:

  python -m agents.scripts.train --logdir=~/logdir --config=pendulum

A run folder `<logdir>/<timestamp>-<config>` receives `config.yaml`,
checkpoints, and `train/` and `eval/` TensorBoard summaries. Passing the
`--timestamp` of an existing run resumes it from its last checkpoint with its
saved configuration.

`--env_mode` picks how the environments step: in this process
(`inprocess`), one worker process each (`processes`, also
`--env_processes`), a few workers that step a slice of the batch each
(`slices`), or `auto`, the default, which times `inprocess` and `slices`
for a fraction of a second at start and keeps the faster.

Two settings guard long runs against flaky simulators: `worker_timeout`, the
seconds an environment worker may take to answer before it counts as failed
(default 600), and `restart_workers`, whether to replace a failed environment
by a new one and drop its episode instead of stopping (default False).

Exit codes: 0 when training finished; 1 when it stopped because an
environment failed or a value was NaN or infinite; 2 when the flags, the
configuration or the run folder cannot be used, before anything was written;
128 + the signal number (130, 143) after SIGINT or SIGTERM, which save a
checkpoint first. Errors print one line to stderr.

One trainer at a time may use a run folder: a second one exits with code 2.
"""

import contextlib
import datetime
import functools
import inspect
import logging
import os
import random
import re
import signal
import sys

from agents.scripts import quiet_start

if __name__ == '__main__':
    # Before anything imports TensorFlow.
    quiet_start.quiet_tensorflow()

# pylint: disable=wrong-import-position,wrong-import-order,ungrouped-imports
from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from agents import tools
from agents.tools import batch_env as batch_env_lib
from agents.scripts import config_io
from agents.scripts import configs
from agents.scripts import env_modes
from agents.scripts import run_folder
from agents.scripts import stopping
from agents.scripts import utility
# pylint: enable=wrong-import-position,wrong-import-order,ungrouped-imports


FLAGS = flags.FLAGS
flags.DEFINE_string(
    'logdir', None, 'Base directory of the run folders; without it the run '
    'trains without writing anything.')
flags.DEFINE_string(
    'config', None, 'Configuration function: a name in '
    'agents/scripts/configs.py, package.module:function, or '
    'path/to/file.py:function.')
flags.DEFINE_string(
    'timestamp', None, 'Sub directory prefix (letters, digits, ".", "_", '
    '"+", "-"); an existing run folder is resumed from its last checkpoint.')
flags.DEFINE_string('env_mode', None, env_modes.flag_help())
flags.DEFINE_boolean(
    'env_processes', None, 'Shorthand for --env_mode=processes; '
    '--noenv_processes for --env_mode=inprocess.')
flags.DEFINE_multi_string(
    'set', [], 'KEY=VALUE: replace a value of the config; VALUE is YAML '
    '(or JSON), e.g. --set=learning_rate=5e-4 --set=policy_layers=[64,64]. '
    'Recorded in config.yaml; a resumed run refuses changes.',
    # Scripts that import this one may define their own --set.
    allow_override=True)
flags.DEFINE_integer(
    'seed', None, 'Seed of TensorFlow, NumPy and the environments '
    '(overrides the config).')


def config_names():
    """Names of the configuration functions in `agents.scripts.configs`."""
    return sorted(
        name for name, value in inspect.getmembers(configs, inspect.isfunction)
        if value.__module__ == configs.__name__ and name != 'default'
        and not name.startswith('_'))


def load_named_config(name):
    """Build the locked configuration of a config function by name.

    Args:
      name: Name of a function in `agents.scripts.configs`.

    Raises:
      utility.ConfigError: Listing the valid names when `name` is unknown.

    Returns:
      Locked `tools.AttrDict`.
    """
    if name not in config_names():
        raise utility.ConfigError(
            f"Unknown config '{name}'; valid configs: "
            f"{', '.join(config_names())}.")
    config = tools.AttrDict(getattr(configs, name)())
    config.lock()
    return config


def load_config_spec(spec):
    """Build the locked configuration of a config function and record it.

    Args:
      spec: Name of a function in `agents.scripts.configs`,
          'package.module:function', or 'path/to/file.py:function'.

    Raises:
      utility.ConfigError: When the function cannot be found or does not
          return a mapping.

    Returns:
      Locked `tools.AttrDict` whose `config_function` (see
      `config_io.SOURCE_KEY`) records where it came from.
    """
    if ':' not in spec:
        config = load_named_config(spec)
        source = f'{configs.__name__}:{spec}'
    else:
        function, source = config_io.import_config_function(spec)
        values = function()
        if not isinstance(values, dict):
            raise utility.ConfigError(
                f"Config function '{spec}' returned a "
                f'{type(values).__name__}; expected a dict such as '
                'dict(configs.default(), **locals()).')
        config = tools.AttrDict(values)
    with config.unlocked:
        config[config_io.SOURCE_KEY] = source
    config.lock()
    return config


def config_label(spec):
    """The name of a config spec in run folder names: the function's."""
    return spec.rpartition(':')[2]


# Seeds of NumPy's global generator, which the config's seed also sets.
_MAX_SEED = 2**32 - 1
# Seconds a step in progress has to end after SIGINT or SIGTERM before the
# watchdog stops the process without it.
_STUCK_STEP_GRACE = 2.0


def _define_loop(
        graph, logdir, train_steps, eval_steps, caller_thread=True):
    """Alternate a training and an evaluation phase.

    Args:
      graph: AttrDict of the simulation graph's tensors.
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
        caller_thread=caller_thread)
    loop.add_phase(
        'eval', graph.done, graph.score, summary, eval_steps,
        report_every=eval_steps,
        log_every=max(1, eval_steps // 2),
        checkpoint_every=10 * eval_steps,
        feed={graph.is_training: False},
        caller_thread=caller_thread)
    return loop


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
          'processes' or 'slices' (see `env_modes.MODES`); True
          stands for 'processes' and False for 'inprocess'.
      on_report: None, or a function called with the global step and the
          score at every report, before the score is yielded (the sweep
          records both).

    Raises:
      utility.ConfigError: When the configuration, the environment or the
          run folder cannot be used.
      utility.TrainingError: When an environment failed, a value was NaN
          or infinite, or a checkpoint or summary could not be written (a
          full disk); its cause is the original error.

    Yields:
      The mean evaluation score at every evaluation report.
    """
    env_mode = env_modes.check_env_mode(env_mode)
    config = _complete_config(config)
    lock = None
    if config.logdir:
        lock = run_folder.RunLock(config.logdir)
        try:
            lock.acquire()
        except run_folder.RunFolderInUse as error:
            raise utility.ConfigError(str(error)) from None
        except OSError as error:
            raise utility.ConfigError(
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
        try:
            # The standard wrappers act on the stacked arrays of the batch.
            batch_env = utility.define_batch_env(
                env_modes.environment_constructor(
                    config, batch_wrappers=True),
                config.num_agents, env_mode, config.seed,
                timeout=config.worker_timeout,
                restart=config.restart_workers,
                wrap=env_modes.batch_wrapper(config))
        except Exception as error:
            # The same environment was built in this process already.
            message = batch_env_lib.first_line(error)
            raise utility.TrainingError(
                f'Cannot start the environments: {message}') from error
        try:
            try:
                simulation = utility.define_simulation_graph(
                    batch_env, config.algorithm, config)
            except ValueError as error:
                # The algorithm and network reject their settings this way.
                raise utility.ConfigError(str(error)) from error
            saver = utility.define_saver(exclude=(r'.*_temporary.*',))
            if config.logdir and not os.path.exists(
                    os.path.join(config.logdir, 'config.yaml')):
                utility.save_config(config, config.logdir)
            loop = _define_loop(
                simulation, config.logdir, *phase_steps(config),
                caller_thread=config.get('caller_thread', True))
        except BaseException:
            batch_env.close()
            raise
    train_steps, eval_steps = phase_steps(config)
    total_steps = int(config.steps / train_steps * (train_steps + eval_steps))
    session_config = make_session_config(config)
    try:
        with tf.Session(graph=graph, config=session_config) as sess:
            try:
                restored = utility.initialize_variables(
                    sess, saver, config.logdir)
            except ValueError as error:
                raise utility.ConfigError(
                    f'Cannot resume {config.logdir}: {error}') from error
            if restored:
                logging.getLogger('agents').info(
                    'Restored checkpoint %s.', restored)
            saver = utility.RunSaver(saver, config.logdir)
            abandon = functools.partial(_abandon, functools.partial(
                _save_checkpoint, sess, saver, simulation.step,
                config.logdir, on_failure=True), lock)
            stop = stopping.active()
            watchdog = tools.StepWatchdog(
                batch_env, timeout=config.worker_timeout or 600,
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
        batch_env.close()


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
    if config.get('session_threads'):
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

    A training phase lasts `eval_every` steps, by default those of
    `update_every` full-length episodes, or of one per agent where there are
    more agents: every evaluation restarts the training episodes, so a
    shorter phase would end no episode. The evaluation that follows runs
    `eval_episodes` episodes of `max_length` steps.

    Args:
      config: Completed configuration (with `max_length`).

    Returns:
      Tuple of two integers.
    """
    train_steps = config.get('eval_every') or (
        max(config.update_every, config.num_agents) * config.max_length)
    return int(train_steps), int(config.eval_episodes * config.max_length)


_REQUIRED_KEYS = (
    'algorithm', 'env', 'num_agents', 'steps', 'update_every',
    'eval_episodes')


def _complete_config(config):
    """Fill in defaults and values derived from the environment.

    Builds one environment in this process, so that an unknown env id or an
    unsupported space fails before any worker starts or file is written.

    Args:
      config: Configuration mapping.

    Raises:
      utility.ConfigError: When the environment cannot be built or used, or
          a setting is invalid.

    Returns:
      Locked copy of the configuration.
    """
    config = tools.AttrDict(config)
    missing = [key for key in _REQUIRED_KEYS if key not in config]
    if missing:
        raise utility.ConfigError(
            f"Config has no {', '.join(repr(key) for key in missing)}; "
            f"expected the keys {', '.join(_REQUIRED_KEYS)}.")
    with config.unlocked:
        config.setdefault('logdir', None)
        config.setdefault('seed', None)
        config.setdefault('worker_timeout', None)
        config.setdefault('restart_workers', False)
        config.setdefault('session_threads', None)
        env = env_modes.create_environment(config)
        try:
            if not config.get('max_length'):
                spec = env.spec
                config.max_length = spec.max_episode_steps if spec else None
        finally:
            env.close()
        if not config.max_length:
            raise utility.ConfigError(
                'Config max_length is not set and the environment has '
                'no time limit; set max_length.')
    timeout = config.worker_timeout
    if timeout is not None and not (
            isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
            and 0 < timeout < float('inf')):
        raise utility.ConfigError(
            f'Config worker_timeout={timeout!r} must be a positive number '
            'of seconds or None.')
    threads = config.session_threads
    if threads is not None and not (
            isinstance(threads, int) and not isinstance(threads, bool)
            and threads >= 1):
        raise utility.ConfigError(
            f'Config session_threads={threads!r} must be a positive integer '
            'or None.')
    utility.check_eval_every(config)
    if not isinstance(config.restart_workers, bool):
        raise utility.ConfigError(
            f'Config restart_workers={config.restart_workers!r} must be '
            'True or False.')
    _check_seed(config.seed, 'Config seed')
    config.lock()
    return config


def _check_seed(seed, name):
    """Raise a ConfigError unless the seed is None or fits NumPy's seeds.

    Args:
      seed: The value.
      name: How the message names it, e.g. '--seed'.

    Raises:
      utility.ConfigError: Naming the value and the valid range.
    """
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or (
            not 0 <= seed <= _MAX_SEED):
        raise utility.ConfigError(
            f'{name}={seed!r} must be an integer from 0 to {_MAX_SEED}.')


def _prepare_run(logdir, config_name, timestamp, settings=()):
    """Decide the run folder and its configuration (resumed or new).

    The run folder is `<logdir>/<timestamp>-<config>`; an existing one with
    a `config.yaml` is resumed. Nothing is written: the run folder is
    created when training starts.

    Args:
      logdir: Base directory of the run folders, or None.
      config_name: Config spec (see `load_config_spec`), or None to resume.
      timestamp: Prefix of the run folder, or None for the current time.
      settings: 'KEY=VALUE' overrides of config values; a resumed run
          accepts only those that match its saved configuration.

    Raises:
      utility.ConfigError: When the config is unknown or missing, the
          timestamp is invalid, the run folder of the timestamp belongs to
          another config, an override is invalid or would change a resumed
          run, the saved configuration cannot be loaded, or `logdir` is not
          writable.

    Returns:
      Tuple of the configuration, the run folder (or None) and the
      timestamp.
    """
    if not logdir:
        if not config_name:
            raise utility.ConfigError('Pass --config (and usually --logdir).')
        config = load_config_spec(config_name)
        config_io.apply_overrides(config, settings)
        return config, None, None
    logdir = os.path.expanduser(logdir)
    if timestamp is not None:
        run_folder.check_timestamp(timestamp)
    timestamp = timestamp or datetime.datetime.now().strftime(
        '%Y%m%dT%H%M%S')
    runs = run_folder.runs_of_timestamp(logdir, timestamp)
    label = config_name and config_label(config_name)
    if config_name and runs and label not in runs:
        name, = runs[:1]
        raise utility.ConfigError(
            f"Run folder {os.path.join(logdir, f'{timestamp}-{name}')} of "
            f"--timestamp={timestamp} has the config '{name}', not "
            f"'{label}'; pass --config={name} or no --config to "
            'resume it, or another --timestamp for a new run.')
    if not config_name and len(runs) > 1:
        raise utility.ConfigError(
            f'Several run folders have --timestamp={timestamp} in {logdir}, '
            f"of the configs {', '.join(runs)}; pass --config to choose.")
    if runs:
        run_dir = os.path.join(
            logdir, f'{timestamp}-{label if label in runs else runs[0]}')
        logging.getLogger('agents').info('Resuming run %s.', run_dir)
        config = utility.load_config(run_dir)
        _check_resume_overrides(config, settings, run_dir)
        with config.unlocked:
            config.logdir = run_dir
        return config, run_dir, timestamp
    if not config_name:
        raise utility.ConfigError(
            'Pass --config to start a new run (no run folder with timestamp '
            f"'{timestamp}' in {logdir}).")
    config = load_config_spec(config_name)
    config_io.apply_overrides(config, settings)
    run_dir = os.path.join(logdir, f'{timestamp}-{config_label(config_name)}')
    _check_writable(logdir)
    with config.unlocked:
        config.logdir = run_dir
    return config, run_dir, timestamp


def _check_resume_overrides(config, settings, run_dir):
    """Refuse overrides that would change the saved config of a run.

    Raises:
      utility.ConfigError: Naming the first setting that differs from the
          saved value.
    """
    changed = tools.AttrDict(config)
    for setting in settings:
        key, value = next(iter(
            config_io.apply_overrides(changed, [setting]).items()))
        if config[key] != value:
            raise utility.ConfigError(
                f'--set={setting} would change {key} of the resumed run '
                f'{run_dir} from {config[key]!r} to {value!r}; a resumed '
                'run keeps its config.yaml. Start a new run (another '
                '--timestamp) to change it.')


def _check_writable(logdir):
    """Fail early with one line when the log directory cannot be written.

    Creates nothing: checks the deepest part of the path that exists.
    """
    existing = os.path.abspath(logdir)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise utility.ConfigError(
            f'--logdir {logdir} cannot be created: {existing} is a file, '
            'expected a directory.')
    if not os.access(existing, os.W_OK | os.X_OK):
        raise utility.ConfigError(
            f'--logdir {logdir} is not writable: {existing} denies writing.')


def main(argv):
    """Parse flags, prepare the run folder, and train."""
    del argv
    utility.set_up_logging()
    run_dir = timestamp = None

    def describe_interrupt(signum, again=False):
        message = f'Interrupted by {signal.Signals(signum).name}'
        if again:
            message += ' twice: stopped without saving'
        if run_dir and os.path.exists(os.path.join(run_dir, 'config.yaml')):
            message += (
                f'; resume with --logdir={FLAGS.logdir} '
                f'--timestamp={timestamp}')
        return message + '.'

    try:
        env_mode = env_modes.env_mode_from_flags(
            FLAGS.env_mode, FLAGS.env_processes)
        _check_seed(FLAGS.seed, '--seed')
        config, run_dir, timestamp = _prepare_run(
            FLAGS.logdir, FLAGS.config, FLAGS.timestamp, FLAGS.set)
        if FLAGS.seed is not None:
            with config.unlocked:
                config.seed = FLAGS.seed
        _check_seed(config.get('seed'), 'Config seed')
        if config.get('seed') is not None:
            # Process-wide, so set here and never in library code: kernels
            # without a deterministic implementation raise instead of
            # silently varying between runs (this matters on GPUs).
            tf.compat.v2.config.experimental.enable_op_determinism()
        # Closing the generator also saves when the interruption lands
        # outside of it, between two scores.
        stop = stopping.StopRequest(describe_interrupt)
        with stop.install(), contextlib.closing(
                train(config, env_mode)) as scores:
            for _ in scores:
                pass
    except utility.ConfigError as error:
        _exit(f'Error: {error}', 2)
    except utility.TrainingError as error:
        _exit(f'Error: {error}', 1)
    except KeyboardInterrupt as interrupt:
        signum = getattr(interrupt, 'signum', signal.SIGINT)
        _exit(describe_interrupt(signum), 128 + signum)


def _exit(message, code):
    """Print one line to stderr and exit with the code."""
    print(message, file=sys.stderr)
    sys.exit(code)


def parse_flags(argv):
    """Parse the command line; a bad flag exits with one line and code 2.

    Args:
      argv: The command line, program name first.

    Returns:
      The arguments left after the flags.
    """
    try:
        return FLAGS(argv)
    except flags.Error as error:
        _exit(f'Error: {error}', 2)
        raise  # Unreachable; sys.exit raised.


if __name__ == '__main__':
    app.run(main, flags_parser=parse_flags)
