"""Building blocks of the training and visualization scripts.

The in-graph batch of environments, the simulation graph, the saver and
checkpoints live here. How the environments are built and stepped lives in
`env_construction` and `env_modes`, the configuration file in `config_io`,
whose `save_config` and `load_config` are re-exported here as in 2017.
"""

import contextlib
import inspect
import logging
import os
import re
import shutil
import threading

from google.protobuf import text_format
import tensorflow.compat.v1 as tf

from agents import tools
from agents.scripts import config_io
from agents.scripts import config_spec
from agents.scripts import env_modes
from agents.scripts.config_io import load_config
from agents.scripts.config_io import save_config

__all__ = [
    'TrainingError', 'CheckpointError', 'RunSaver', 'set_up_logging',
    'define_batch_env', 'define_simulation_graph', 'define_saver',
    'initialize_variables', 'list_checkpoints', 'save_config', 'load_config',
]


class TrainingError(RuntimeError):
    """Training stopped: an environment failed or a value was not finite."""


class CheckpointError(TrainingError):
    """A checkpoint could not be saved; what it began to write is gone."""


def set_up_logging(level=logging.INFO):
    """Print the framework's progress lines and quiet TensorFlow's C++ logs.

    Args:
      level: Logging level of the 'agents' logger.
    """
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    logger = logging.getLogger('agents')
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        logger.addHandler(handler)
        logger.propagate = False
    tf.logging.set_verbosity(tf.logging.ERROR)
    if not getattr(threading.excepthook, 'quiet_event_writers', False):
        threading.excepthook = _quiet_event_writers(threading.excepthook)
    tf_logger = logging.getLogger('tensorflow')
    if not any(isinstance(item, _EventWriterErrors)
               for item in tf_logger.filters):
        tf_logger.addFilter(_EventWriterErrors())


class _EventWriterErrors(logging.Filter):
    """Leaves out TensorFlow's log of a failed event writer thread.

    The writer raises the error again where the loop writes next, which
    reports it in one line.
    """

    def filter(self, record):
        return not str(record.msg).startswith(
            'EventFileWriter writer thread error')


def _quiet_event_writers(excepthook):
    """A `threading.excepthook` that leaves out TensorFlow's event writers.

    The thread of a summary writer that fails (on a full disk, say) prints
    its traceback as it ends, and the writer raises the error again in the
    thread that writes next, where the script reports it in one line.
    """

    def hook(args):
        if type(args.thread).__name__ != '_EventLoggerThread':
            excepthook(args)

    hook.quiet_event_writers = True
    return hook


def define_batch_env(
        constructor, num_agents, env_mode=None, seed=None, timeout=None,
        restart=False, *, env_processes=None):
    """Create a batch of environments wrapped into the graph.

    Worker processes receive the constructor with cloudpickle and do not
    import the main module; `env_construction.create_environment` reaches
    them by reference without importing TensorFlow.

    The 2017 call `define_batch_env(constructor, num_agents, env_processes)`
    works as it did: a constructor without arguments is called without
    the seed, and `env_processes` (positional or by keyword) is a boolean
    env mode.

    Args:
      constructor: Callable taking a seed (or None) and returning an env,
          or a callable without arguments (the 2017 form).
      num_agents: Number of environments in the batch.
      env_mode: How to step the environments: a name of
          `env_modes.mode_names()` or a boolean (see
          `env_modes.check_env_mode`). 'auto' builds the candidates in the
          background and, when the batch is first used, times them, closes
          them, and builds the fastest anew, so that seeded runs match those
          of the chosen mode (see `auto_batch_env.AutoBatchEnv`).
      seed: Base seed; environment i gets `seed + i`. None leaves them
          unseeded.
      timeout: Seconds to wait for an answer of a worker process before it
          counts as failed; None uses the default of `ExternalProcess`.
      restart: Whether to replace an environment that fails by a new one
          from the same constructor and seed, instead of failing the step. In
          the 'slices' mode, this replaces the whole worker of the slice and
          restarts all of its environments.
      env_processes: The 2017 name of a boolean `env_mode`.

    Raises:
      config_io.ConfigError: When `env_mode` is unknown, or both `env_mode`
          and `env_processes` are given.

    Returns:
      `tools.InGraphBatchEnv`.
    """
    if env_processes is not None:
        if env_mode is not None:
            raise config_io.ConfigError(
                f'define_batch_env got env_mode={env_mode!r} and '
                f'env_processes={env_processes!r}; pass one of them.')
        env_mode = env_processes
    env_mode = env_modes.check_env_mode(
        'inprocess' if env_mode is None else env_mode)
    if not _takes_argument(constructor):
        constructor = _WithoutSeed(constructor)
    with tf.variable_scope('environments'):
        return tools.InGraphBatchEnv(env_modes.create_batch_env(
            constructor, num_agents, env_mode, seed, timeout, restart))


def _takes_argument(function):
    """Whether a callable accepts one positional argument."""
    try:
        inspect.signature(function).bind(None)
    except TypeError:
        return False
    except ValueError:
        # Some builtins have no signature; assume today's form.
        return True
    return True


class _WithoutSeed:
    """A 2017 constructor without arguments, called with a seed it ignores.

    A class rather than a closure, so that worker processes receive it
    with cloudpickle like any other constructor.
    """

    def __init__(self, constructor):
        self._constructor = constructor

    def __call__(self, unused_seed):
        return self._constructor()


def define_simulation_graph(batch_env, algo_cls, config):
    """Define the algorithm and the simulation operation.

    Args:
      batch_env: In-graph batch environment.
      algo_cls: Constructor of the algorithm.
      config: Configuration object for the algorithm; keys of
          `configs.default()` that it lacks take their default.

    Returns:
      AttrDict of the graph's interface: step; the bool variables
      is_training, should_log, do_report, force_reset; algo, done, score,
      summary.
    """
    # A config written for an older version of the package (a 2017 one,
    # say) takes today's defaults for the keys it does not have.
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

    Variables rather than placeholders: `tools.Loop` sets them inside the
    graph, which spares every session run its feeds.

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
      AttrDict of the switches followed by the parts.
    """
    num_weights = tools.count_weights()  # pylint: disable=not-callable
    logging.getLogger('agents').info(
        'Graph contains %d trainable variables.', num_weights)
    return tools.AttrDict(switches, **parts)


def define_saver(exclude=None, include=None, **kwargs):
    """Create a saver for the variables not matching any exclude pattern.

    The saver writes the `checkpoint` index with paths relative to the run
    folder, so that a copied or moved run folder still names its own files.

    Args:
      exclude: Regexes over variable names to leave out, e.g. temporary
          episode state.
      include: Variables to save even where an exclude pattern matches
          them, such as the state of an exact resumption
          (`tools.resume_variables()`). `initialize_variables` restores a
          checkpoint that lacks some of them (one of an older run) without
          them.
      **kwargs: Passed on to `tf.train.Saver`.

    Returns:
      `tf.train.Saver`.
    """
    variables = []
    exclude = exclude or ()
    for variable in tf.global_variables():
        if any(re.match(pattern, variable.name) for pattern in exclude):
            continue
        variables.append(variable)
    optional = [
        variable for variable in include or ()
        if not any(variable is other for other in variables)]
    kwargs.setdefault('max_to_keep', 5)
    kwargs.setdefault('save_relative_paths', True)
    if not optional:
        return tf.train.Saver(variables, **kwargs)
    return _ResumeSaver(variables, optional, **kwargs)


class _ResumeSaver(tf.train.Saver):
    """A saver that knows which of its variables a checkpoint may lack."""

    def __init__(self, variables, optional, **kwargs):
        """Save the variables and the optional ones.

        Args:
          variables: Variables that every checkpoint holds.
          optional: Further variables, which older checkpoints lack.
          **kwargs: Passed on to `tf.train.Saver`.
        """
        super().__init__(list(variables) + list(optional), **kwargs)
        self.required = list(variables)
        self.optional = list(optional)


class RunSaver:
    """Saves the checkpoints of a run folder for the loop and the script.

    Wraps a `tf.train.Saver` (other attributes are the saver's). A save of
    a step that is saved already returns its path. Before saving, it
    deletes the oldest checkpoints beyond the saver's `max_to_keep`, which
    may be more than one after a restart. A save that fails, for
    example on a full disk, removes the files it began to write (TensorFlow
    leaves temporary files behind), keeps the earlier checkpoints, and
    raises `CheckpointError` with one line naming the checkpoint and the
    cause. Saves from several threads (the watchdog's, see
    `tools.StepWatchdog`) happen one after another.
    """

    def __init__(self, saver, logdir):
        """Wrap a saver.

        Args:
          saver: `tf.train.Saver`, e.g. of `define_saver`.
          logdir: The run folder.
        """
        self._saver = saver
        self._logdir = logdir
        self._lock = threading.Lock()

    def save(self, sess, unused_prefix=None, global_step=None):
        """Save the variables as `<logdir>/model.ckpt-<global_step>`.

        Args:
          sess: Session of the graph.
          unused_prefix: Ignored; the prefix is always `model.ckpt` in the
              run folder (the signature of `tf.train.Saver.save`).
          global_step: Integer step of the checkpoint.

        Raises:
          CheckpointError: When saving failed.

        Returns:
          Path prefix of the checkpoint.
        """
        prefix = os.path.join(self._logdir, f'model.ckpt-{int(global_step)}')
        with self._lock:
            if prefix in self._saver.last_checkpoints and os.path.exists(
                    prefix + '.index'):
                return prefix
            self._drop_old_checkpoints()
            before = set(_listdir(self._logdir))
            try:
                # The session's graph is the default in its own thread only.
                with sess.graph.as_default():
                    return self._saver.save(
                        sess, os.path.join(self._logdir, 'model.ckpt'),
                        int(global_step))
            except (OSError, tf.errors.OpError) as error:
                self._remove_partial(before, os.path.basename(prefix))
                self._forget(prefix)
                raise CheckpointError(
                    f'Cannot save checkpoint {prefix}: '
                    f'{_error_cause(error)}.') from error

    def _drop_old_checkpoints(self):
        """Make room for one checkpoint within the saver's `max_to_keep`.

        The saver deletes one old checkpoint per save; the checkpoints of
        earlier runs (see `initialize_variables`) may be more.
        """
        keep = self._saver.saver_def.max_to_keep
        last = self._saver.last_checkpoints
        excess = len(last) + 1 - keep
        if not keep or excess <= 0:
            return
        for prefix in last[:excess]:
            directory, name = os.path.split(prefix)
            for entry in _listdir(directory):
                if entry.startswith(name + '.'):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(directory, entry))
        self._saver.recover_last_checkpoints(last[excess:])

    def _forget(self, prefix):
        """Leave no record of a failed save in the saver or the index file.

        TensorFlow updates the `checkpoint` index before it writes the meta
        graph, so a save that fails there (a full disk) leaves the index
        naming a checkpoint whose files are gone. The index is written anew
        with the checkpoints that remain, or removed where none remains or
        it cannot be written: `list_checkpoints` finds them in the folder.
        """
        remaining = [
            path for path in self._saver.last_checkpoints
            if path != prefix and os.path.exists(path + '.index')]
        self._saver.recover_last_checkpoints(remaining)
        index = os.path.join(self._logdir, 'checkpoint')
        if remaining:
            try:
                tf.train.update_checkpoint_state(
                    self._logdir, os.path.basename(remaining[-1]),
                    [os.path.basename(path) for path in remaining])
                return
            except (OSError, tf.errors.OpError):
                pass
        with contextlib.suppress(OSError):
            os.remove(index)

    def _remove_partial(self, before, name):
        """Remove the files of a failed save, and its temporary files."""
        for entry in set(_listdir(self._logdir)) - before:
            if not (entry.startswith(name + '.') or entry.startswith(
                    name + '_temp') or '.tmp' in entry
                    or 'tempstate' in entry):
                continue
            path = os.path.join(self._logdir, entry)
            with contextlib.suppress(OSError):
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._saver, name)


def _listdir(directory):
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def _error_cause(error):
    """The cause of an error of writing a file, without the file's path.

    TensorFlow's messages read 'PATH; CAUSE', followed by lines that locate
    the failed operation.
    """
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return _error_line(error).rpartition('; ')[2]


def _error_line(error):
    """The line of a TensorFlow error that says what went wrong."""
    message = getattr(error, 'message', None) or str(error)
    # Restores explain that the graph may have changed, then give the cause.
    message = message.rpartition('Original error:')[2]
    # Skip the lines of a failed session run that locate the node.
    ignore = (
        'Graph execution error', 'Detected at node', 'File ', 'Node:', '[[')
    lines = [
        line.strip() for line in message.splitlines()
        if line.strip() and not line.strip().startswith(ignore)]
    return lines[0] if lines else type(error).__name__


def initialize_variables(
        sess, saver, logdir=None, checkpoint=None, resume=None):
    """Initialize or restore the variables of a session.

    The newest checkpoint inside `logdir` is restored (see
    `list_checkpoints`); a truncated or corrupt one falls back to the
    previous checkpoint with a warning, and so does a damaged or stale
    `checkpoint` index. The saver then counts the checkpoints already in the
    folder, so that its `max_to_keep` holds across restarts.

    Args:
      sess: Session to initialize variables in.
      saver: Saver to restore variables.
      logdir: Directory to search for checkpoints.
      checkpoint: Specify a checkpoint (path or name in logdir) to restore.
      resume: Whether to expect checkpoints to restore from; None accepts
          either.

    Raises:
      ValueError: When resume is requested without checkpoints, or
          checkpoints exist when starting a new run, or none is readable.

    Returns:
      Path of the restored checkpoint, or None.
    """
    sess.run(tf.group(
        tf.local_variables_initializer(), tf.global_variables_initializer()))
    if resume and not (logdir or checkpoint):
        raise ValueError('Need a logdir or checkpoint to resume from.')
    candidates = []
    if logdir:
        candidates = list_checkpoints(logdir, warn=not checkpoint)
        # Oldest first, as the saver deletes them.
        saver.recover_last_checkpoints(candidates[::-1])
    if checkpoint:
        if logdir and not os.path.isabs(checkpoint):
            checkpoint = os.path.join(logdir, checkpoint)
        candidates = [checkpoint]
    if candidates and resume is False:
        raise ValueError(
            f'Found checkpoint {candidates[0]} when starting a new run in '
            f'{logdir}.')
    if not candidates:
        if resume:
            raise ValueError(f'No checkpoint found to resume in {logdir}.')
        return None
    errors = []
    for path in candidates:
        try:
            _restore(sess, saver, path)
        except (tf.errors.OpError, ValueError) as error:
            message = _error_line(error)
            errors.append(f'{path}: {message}')
            logging.getLogger('agents').warning(
                'Cannot restore checkpoint %s (%s); trying the previous one.',
                path, message)
            continue
        return path
    raise ValueError('No readable checkpoint: ' + '; '.join(errors))


def _restore(sess, saver, path):
    """Restore a checkpoint; one without the optional variables, too.

    A checkpoint of an older run lacks the state of an exact resumption
    that `define_saver(include=...)` adds: the variables it holds are
    restored, the others keep their initial values, and one line says so.
    """
    optional = getattr(saver, 'optional', None)
    if optional:
        names = {name for name, _ in tf.train.list_variables(path)}
        missing = [
            variable for variable in optional
            if variable.op.name not in names]
        if missing:
            present = [
                variable for variable in optional
                if variable.op.name in names]
            with sess.graph.as_default():
                partial = tf.train.Saver(saver.required + present)
            partial.restore(sess, path)
            logging.getLogger('agents').info(
                'Checkpoint %s holds no state for an exact resumption (%d '
                'variables such as %s); they begin from their initial '
                'values.', path, len(missing), missing[0].op.name)
            return
    saver.restore(sess, path)


def list_checkpoints(logdir, warn=False):
    """Checkpoint paths inside a run folder, newest first.

    The folder is scanned for `model.ckpt-<step>` checkpoints whose index
    file exists, the highest step first. The `checkpoint` index file that
    TensorFlow keeps adds checkpoints of other names, by their base names
    within the folder: its paths may be absolute paths of the folder the run
    was copied or moved from, and the file may be damaged or stale (an older
    saver's, which omits newer checkpoints).

    Args:
      logdir: Directory holding checkpoints.
      warn: Whether to log a warning when the `checkpoint` index is damaged
          or names another checkpoint as the latest than the newest found.

    Returns:
      List of checkpoint prefixes inside `logdir` whose index file exists.
    """
    found = []
    for name in os.listdir(logdir) if os.path.isdir(logdir) else ():
        match = _CHECKPOINT_INDEX.match(name)
        if match:
            found.append((int(match.group(2)), match.group(1)))
    names = [name for _, name in sorted(found, reverse=True)]
    indexed, problem = _read_checkpoint_index(logdir)
    for name in indexed:
        if name not in names and os.path.exists(
                os.path.join(logdir, name + '.index')):
            names.append(name)
    index = os.path.join(logdir, 'checkpoint')
    logger = logging.getLogger('agents')
    if warn and problem:
        logger.warning(
            'The checkpoint index %s is damaged (%s); using the checkpoints '
            'found in the folder.', index, problem)
    elif warn and indexed and indexed[0] not in names:
        newest = (
            f'trying {names[0]}, the newest found' if names
            else 'no other checkpoint is in the folder')
        logger.warning(
            'The checkpoint index %s names %s as the latest checkpoint, but '
            '%s.index is missing; %s.', index, indexed[0], indexed[0], newest)
    elif warn and indexed and indexed[0] != names[0]:
        logger.warning(
            'The checkpoint index %s names %s as the latest checkpoint, but '
            '%s is newer; trying the newest first.', index, indexed[0],
            names[0])
    return [os.path.join(logdir, name) for name in names]


_CHECKPOINT_INDEX = re.compile(r'^(model\.ckpt-(\d+))\.index$')


def _read_checkpoint_index(logdir):
    """The base names the `checkpoint` index file lists, latest first.

    Returns:
      Tuple of the names and, when the file cannot be read, the reason.
    """
    if not os.path.exists(os.path.join(logdir, 'checkpoint')):
        return [], None
    try:
        state = tf.train.get_checkpoint_state(logdir)
    except (ValueError, tf.errors.OpError, text_format.ParseError) as error:
        lines = str(error).strip().splitlines() or [type(error).__name__]
        return [], lines[0]
    if state is None or not state.model_checkpoint_path:
        return [], 'it names no checkpoint'
    paths = [state.model_checkpoint_path] + [
        path for path in reversed(state.all_model_checkpoint_paths)
        if path != state.model_checkpoint_path]
    return [os.path.basename(path) for path in paths], None
