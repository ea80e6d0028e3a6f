"""Checkpoints of a run folder: the saver, saving, finding and restoring."""

import contextlib
import logging
import os
import re
import threading
import shutil

from google.protobuf import text_format
import tensorflow.compat.v1 as tf

from agents.environments import graph_env
from agents.tools import resume_state
from agents.tools.run_errors import ConfigError
from agents.training import errors
from agents.training import member_checkpoint


def define_saver(exclude=None, include=None, **kwargs):
    """A saver of the variables that match no regex of `exclude`, and of
    those of `include` all the same (the state of an exact resumption, which
    a checkpoint may lack); `kwargs` go to `tf.train.Saver`, whose index
    holds relative paths."""
    required = [
        variable for variable in tf.global_variables()
        if not any(re.match(pattern, variable.name)
                   for pattern in exclude or ())]
    optional = [
        variable for variable in include or ()
        if not any(variable is other for other in required)]
    saver = tf.train.Saver(required + optional, **{
        'max_to_keep': 5, 'save_relative_paths': True, **kwargs})
    saver.required, saver.optional = required, optional
    return saver


class CheckpointShapeError(ValueError):
    """A checkpoint (`path`) holds variable `name` in another shape."""

    def __init__(self, path, name, saved, current):
        super().__init__(
            f'checkpoint {os.path.basename(path)} holds {name} of shape '
            f'{saved}, the graph has {current}')
        self.path, self.name = path, name
        self.saved, self.current = saved, current


class RunSaver:
    """Saves a run folder's checkpoints with a `tf.train.Saver`, keeping
    `max_to_keep` across restarts, one thread at a time; a failed save
    removes what it began to write. `check` (or None) raises `RuntimeError`
    where the run folder must not be written. Other attributes: the saver's."""

    def __init__(self, saver, logdir, check=None):
        self._saver = saver
        self._logdir = logdir
        self._check = check
        self._lock = threading.Lock()

    def save(self, sess, unused_prefix=None, global_step=None,
             consistent=True):
        """Save the variables and the environments' state (none unless
        `consistent`: at the last completed step, not one that hung or
        failed); return the prefix, or raise a CheckpointError. The prefix
        argument is ignored (the signature of `tf.train.Saver.save`)."""
        prefix = os.path.join(self._logdir, f'model.ckpt-{int(global_step)}')
        with self._lock:
            if self._check:
                try:
                    self._check()
                except RuntimeError as error:
                    # An empty folder at the path is `tools.Loop`'s.
                    with contextlib.suppress(OSError):
                        os.rmdir(self._logdir)
                    raise errors.CheckpointError(str(error)) from error
            if prefix in self._saver.last_checkpoints and os.path.exists(
                    prefix + '.index'):
                return prefix
            self._drop_old_checkpoints()
            before = set(_listdir(self._logdir))
            try:
                # The session's graph is the default in its own thread only.
                with sess.graph.as_default():
                    resume_state.capture(sess, consistent)
                    return self._saver.save(
                        sess, os.path.join(self._logdir, 'model.ckpt'),
                        int(global_step))
            except (OSError, tf.errors.OpError) as error:
                # First, as rewriting the index may leave a temporary file.
                self._forget(prefix)
                self._remove_partial(before, os.path.basename(prefix))
                # The cause, without the path of TensorFlow's 'PATH; CAUSE'.
                cause = getattr(error, 'strerror', None) or errors.error_line(
                    error).rpartition('; ')[2]
                raise errors.CheckpointError(
                    f'Cannot save checkpoint {prefix}: {cause}.') from error

    def _drop_old_checkpoints(self):
        """Make room for one checkpoint within `max_to_keep`, restarts too."""
        keep = self._saver.saver_def.max_to_keep
        last = self._saver.last_checkpoints
        excess = len(last) + 1 - keep
        if not keep or excess <= 0:
            return
        for prefix in last[:excess]:
            directory, name = os.path.split(prefix)
            _remove(directory, [
                entry for entry in _listdir(directory)
                if entry.startswith(name + '.')])
        self._saver.recover_last_checkpoints(last[excess:])

    def _forget(self, prefix):
        """Leave no record of a failed save in the saver or the index."""
        remaining = [
            path for path in self._saver.last_checkpoints
            if path != prefix and os.path.exists(path + '.index')]
        self._saver.recover_last_checkpoints(remaining)
        if remaining:
            try:
                tf.train.update_checkpoint_state(
                    self._logdir, os.path.basename(remaining[-1]),
                    [os.path.basename(path) for path in remaining])
                return
            except (OSError, tf.errors.OpError):
                pass
        _remove(self._logdir, ['checkpoint'])

    def _remove_partial(self, before, name):
        """Remove the files of a failed save, and its temporary files."""
        _remove(self._logdir, [
            entry for entry in set(_listdir(self._logdir)) - before
            if entry.startswith((name + '.', name + '_temp'))
            or '.tmp' in entry or 'tempstate' in entry])

    def __getattr__(self, name):
        if name.startswith('_'):
            raise AttributeError(name)
        return getattr(self._saver, name)


def _listdir(directory):
    """The folder's entries; none where it is gone or no folder."""
    try:
        return os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _remove(directory, entries):
    """Remove files and folders of a directory, as far as possible."""
    for entry in entries:
        path = os.path.join(directory, entry)
        with contextlib.suppress(OSError):
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def initialize_variables(
        sess, saver, logdir=None, checkpoint=None, resume=None, restore=None):
    """Initialize the variables, or restore the newest readable checkpoint
    of `logdir` (or `checkpoint`, a path or a name in it) and return its path
    (else None); `resume`: whether to expect checkpoints (None: either);
    `restore(sess, saver, path)`: how (by default the saver's). A
    CheckpointShapeError where a variable's shape differs from the graph, a
    ValueError where `resume` is not met or no checkpoint is readable."""
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
    failures = []
    for path in candidates:
        try:
            (restore or _restore)(sess, saver, path)
            return path
        except CheckpointShapeError:
            raise
        except (tf.errors.OpError, ValueError) as error:
            message = errors.error_line(error)
            failures.append(f'{path}: {message}')
            logging.getLogger('agents').warning(
                'Cannot restore checkpoint %s (%s); trying the previous one.',
                path, message)
    raise ValueError('No readable checkpoint: ' + '; '.join(failures))


def restore_run(sess, saver, config, lock):
    """Initialize the variables or restore a run's latest checkpoint; the
    run's `RunSaver` (None without a run folder) under `lock`, its `RunLock`;
    a ConfigError where the run cannot resume (a size changed, say)."""
    logger = logging.getLogger('agents')
    try:
        restored = initialize_variables(sess, saver, config.logdir)
    except ValueError as error:
        cause = _describe_shape_change(config, error) if isinstance(
            error, CheckpointShapeError) else error
        raise ConfigError(f'Cannot resume {config.logdir}: {cause}') from error
    if restored:
        logger.info('Restored checkpoint %s.', restored)
        reasons = resume_state.apply_saved(sess)
        if reasons:
            logger.warning(
                'Resumed with new episodes: %s; scores differ from those of '
                'a run straight through.', reasons[0])
    elif lock.resumed:
        logger.info(
            'No checkpoint in %s yet; training starts at step 0.',
            config.logdir)
    if not config.logdir:
        return None
    return RunSaver(saver, config.logdir, check=lock.check)


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


def _restore(sess, saver, path):
    """Restore a checkpoint; one lacking optional variables, with one line."""
    shapes = dict(tf.train.list_variables(path))
    optional = getattr(saver, 'optional', [])
    # Only what this saver restores (evaluation's episodes may differ).
    for variable in getattr(saver, 'required', []) + optional:
        saved = shapes.get(variable.op.name)
        current = variable.shape.as_list()
        # Else it would fail at its first use, steps later.
        if (saved is not None and variable.shape.is_fully_defined()
                and list(saved) != current):
            raise CheckpointShapeError(
                path, variable.op.name, list(saved), current)
    missing = [
        variable for variable in optional if variable.op.name not in shapes]
    if not missing:
        saver.restore(sess, path)
        return
    present = [variable for variable in optional if variable.op.name in shapes]
    with sess.graph.as_default():
        partial = tf.train.Saver(saver.required + present)
    partial.restore(sess, path)
    logging.getLogger('agents').info(
        'Checkpoint %s holds no state for an exact resumption (%d variables '
        'such as %s); they begin from their initial values.', path,
        len(missing), missing[0].op.name)


def list_checkpoints(logdir, warn=False):
    """Checkpoint paths inside a run folder, newest first: the
    `model.ckpt-<step>` ones, then others that the `checkpoint` index names
    by base name (it may be damaged, stale, or of another folder); `warn`:
    whether to warn where the index disagrees."""
    matches = filter(None, map(_CHECKPOINT_INDEX.match, _listdir(logdir)))
    names = [match.group(1) for match in sorted(
        matches, key=lambda match: int(match.group(2)), reverse=True)]
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


def saved_env(logdir):
    """The newest readable checkpoint's `graph_env.SavedEnv`, or NEW_RUN."""
    for path in list_checkpoints(logdir) if logdir else ():
        try:
            reader = tf.train.load_checkpoint(path)
            names = reader.get_variable_to_shape_map()
        except (tf.errors.OpError, ValueError):
            continue
        graph = _variable_named(names, graph_env.TASK_VARIABLE) is not None
        mode = _variable_named(names, graph_env.ENV_MODE_VARIABLE)
        try:
            # The Python env mode the run recorded, if any.
            mode = mode and reader.get_tensor(mode).decode('utf-8')
        except (tf.errors.OpError, ValueError):
            mode = None
        members = member_checkpoint.saved_members(reader)
        seeds, variants = zip(*members) if members else (None, None)
        return graph_env.SavedEnv(
            'graph' if graph else 'python', None if mode == 'auto' else mode,
            path, seeds and list(seeds), variants and list(variants))
    return graph_env.NEW_RUN


def check_resumed_seeds(run_dir, saved, seeds, variants=None, recorded=None):
    """Raise a ConfigError where the run folder `run_dir` trained other
    members than those of the `seeds` (None: a single run) and the variant
    settings (see `member_checkpoint.members`): those of its
    `graph_env.SavedEnv`, or, before its first checkpoint, the population
    `recorded` in its config.yaml (`POPULATION_KEY`; None: not known)."""
    given = seeds and population_flags(seeds, variants)
    if saved.path is not None:
        if (member_checkpoint.members(seeds, variants) if seeds else None) == (
                saved.seeds and list(zip(saved.seeds, saved.variants))):
            return
        recorded = saved.seeds and population_flags(
            dict.fromkeys(saved.seeds), dict.fromkeys(saved.variants))
    elif not recorded or recorded == given:
        return
    trained, again = (
        ('a single run', 'without --seeds') if recorded is None else
        (f'a population of {recorded}', f'with {recorded}'))
    given = f'with {given}' if seeds else 'as a single run'
    raise ConfigError(
        f'Cannot resume {run_dir} {given}: it trained {trained}; resume it '
        f'{again}, or start a new run (another --timestamp).')


# The key of config.yaml that holds a population's `population_flags`, so
# that a run resumes with its own before its first checkpoint too.
POPULATION_KEY = 'population'


def population_flags(seeds, variants=None):
    """The `--seeds` flag of a list of seeds, and the `--set` flags of the
    variant settings."""
    texts = {}
    for setting in variants or ():
        for key, text in setting:
            texts.setdefault(key, {})[text] = None
    return ' '.join([f"--seeds={','.join(str(seed) for seed in seeds)}"] + [
        f'--set={key}={text}' for key, values in texts.items()
        for text in values])


def _variable_named(names, variable):
    """The name in `names` of `variable`, maybe below a scope, or None."""
    return next((
        name for name in names
        if name == variable or name.endswith('/' + variable)), None)


_CHECKPOINT_INDEX = re.compile(r'^(model\.ckpt-(\d+))\.index$')


def _read_checkpoint_index(logdir):
    """The base names the index lists, latest first, and why unreadable."""
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
