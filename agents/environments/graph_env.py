"""A run's batches in the graph, and the env mode 'graph'.

`define_run_batches` is the one call that builds a run's environments: it
checks the env mode, resolves 'auto', and defines the training and the
evaluation batch in the graph, of Python environments or of the config's
in-graph task (`environments.TASKS`) behind the standard wrappers as graph
operations (`task.StandardTask`). The task's state is checkpointed in the
scope `task`, so a run resumes only with the kind of batch that trained it
(`check_resume`).
"""

import logging

import numpy as np
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.environments import auto_batch_env
from agents.environments import env_construction
from agents.environments import env_modes
from agents.environments import in_graph_task
from agents.environments import task as task_lib
from agents.tools import batch_env as batch_env_lib
from agents.tools import resume_state
from agents.training import checkpoints
from agents.training import errors
from agents.training.config_io import ConfigError

# A variable that every checkpoint of a graph-mode run holds, below the
# scope of the batch of environments.
_TASK_VARIABLE = 'task/state'
# The variable of the env mode of a run's Python environments.
_ENV_MODE_VARIABLE = 'env_mode_temporary/env_mode'


def task_of(config):
    """The in-graph task class of the config's env.

    Args:
      config: Configuration with `env`, a gymnasium id or a constructor.

    Returns:
      A class of `environments.TASKS`, or None.
    """
    env = config.get('env')
    if not isinstance(env, str):
        return None
    return environments.TASKS.get(env)


def check_task(config):
    """Raise a one-line ConfigError when the config's env has no task.

    Args:
      config: Configuration with `env`.

    Raises:
      ConfigError: Naming the env and the ids that have an in-graph task.
    """
    if task_of(config) is not None:
        return
    env = config.get('env')
    if isinstance(env, str):
        name = repr(env)
    else:
        name = getattr(env, '__qualname__', None) or repr(env)
    raise ConfigError(
        f'--env_mode=graph: the config env {name} has no in-graph task; '
        f"tasks with one: {', '.join(sorted(environments.TASKS))}.")


def define_task_batch(config, seed, evaluation=False):
    """The in-graph batch of the config's task, with its standard wrappers.

    The recipe of `env_construction.standard_wrappers` as graph operations;
    episodes end at the `LimitDuration` or gymnasium's registry limit,
    whichever comes first.

    Args:
      config: Completed configuration.
      seed: The run's seed, or None for a random one (see
          `env_modes.task_seed`).
      evaluation: Whether to build the batch of `eval_episodes` for
          evaluation.

    Raises:
      ConfigError: When the env has no in-graph task.

    Returns:
      `environments.InGraphTaskBatch`, whose variables live in the scope
      `task` below the current one.
    """
    check_task(config)
    task = task_of(config)()
    recipe = dict(
        env_construction.standard_wrappers(config, task.action_space))
    task = task_lib.StandardTask(task, 'RangeNormalize' in recipe)
    limit = task.max_episode_steps
    if 'LimitDuration' in recipe:
        limit = min(limit, int(recipe['LimitDuration']['duration']))
    count = config.eval_episodes if evaluation else config.num_agents
    return in_graph_task.InGraphTaskBatch(
        task, count, env_modes.task_seed(seed, evaluation), limit)


def define_env_mode_record(batch_env, env_mode):
    """Record in checkpoints the env mode of a run's Python environments.

    Args:
      batch_env: The in-graph batch of the run's training environments.
      env_mode: The run's Python env mode; for 'auto', the mode it chooses
          (`AutoBatchEnv.mode`) is recorded once chosen.
    """
    scope, name = _ENV_MODE_VARIABLE.split('/')
    with tf.variable_scope(scope):
        variable = tf.Variable(env_mode, trainable=False, name=name)
    tools.keep_for_resume(variable)

    def chosen():
        """The name of the mode, as a numpy string."""
        mode = getattr(batch_env, 'mode', None) if env_mode == 'auto' else (
            env_mode)
        return np.array((mode or env_mode).encode('utf-8'), object)

    record = variable.assign(tf.numpy_function(
        chosen, [], tf.string, stateful=True))
    resume_state.on_save(record, record, tf.constant(''))


def saved_env_mode(logdir):
    """The env mode that the newest readable checkpoint of a run recorded.

    Args:
      logdir: Run folder, or None.

    Returns:
      The name of a Python env mode, or None (no record, or 'auto' had not
      chosen yet).
    """
    _, path = checkpoint_env_kind(logdir)
    if path is None:
        return None
    try:
        names = [name for name, _ in tf.train.list_variables(path)]
        name = _variable_named(names, _ENV_MODE_VARIABLE)
        if name is None:
            return None
        mode = tf.train.load_variable(path, name).decode('utf-8')
    except (tf.errors.OpError, ValueError):
        return None
    return None if mode == 'auto' else mode


def checkpoint_env_kind(logdir):
    """Which kind of batch the newest readable checkpoint of a run trained.

    Args:
      logdir: Run folder, or None.

    Returns:
      Tuple of 'graph' (it holds a task's state), 'python' or None (no
      readable checkpoint), and the checkpoint's path or None.
    """
    if not logdir:
        return None, None
    for path in checkpoints.list_checkpoints(logdir):
        try:
            names = [name for name, _ in tf.train.list_variables(path)]
        except (tf.errors.OpError, ValueError):
            continue
        graph = _variable_named(names, _TASK_VARIABLE) is not None
        return ('graph' if graph else 'python'), path
    return None, None


def _variable_named(names, variable):
    """The name in `names` of `variable`, maybe below a scope, or None."""
    return next((
        name for name in names
        if name == variable or name.endswith('/' + variable)), None)


def check_resume(logdir, graph_mode):
    """Raise a one-line ConfigError when a run resumes with the other kind
    of batch.

    Args:
      logdir: Run folder, or None.
      graph_mode: Whether this run trains on the in-graph task.

    Raises:
      ConfigError: Naming the checkpoint and the env mode that resumes it.
    """
    kind, path = checkpoint_env_kind(logdir)
    if kind is None or (kind == 'graph') == bool(graph_mode):
        return
    if kind == 'python':
        raise ConfigError(
            f'Cannot resume {logdir} with --env_mode=graph: checkpoint '
            f'{path} holds no in-graph task state (task/*), it was trained '
            'on Python environments; resume with --env_mode=auto or a '
            'Python env mode.')
    raise ConfigError(
        f'Cannot resume {logdir} on Python environments: checkpoint {path} '
        'holds the state of an in-graph task (task/*), it was trained with '
        '--env_mode=graph; resume with --env_mode=graph or auto.')


def define_run_batches(config, env_mode, evaluation=True):
    """Check the env mode, resolve 'auto' and define a run's batches.

    Args:
      config: Completed configuration (see `env_modes.make_batch_env`).
      env_mode: A name of `env_modes.mode_names()` or a boolean.
      evaluation: Whether to define an evaluation batch.

    Raises:
      ConfigError: When the mode, the config or the run folder cannot be
          used (see `env_modes.check_env_mode`, `resolve_env_mode`).
      errors.TrainingError: When an environment cannot start.

    Returns:
      Tuple of the resolved mode, the training batch (variable scope
      `environments`) and the evaluation batch (`eval_environments`) or
      None.
    """
    env_mode = resolve_env_mode(config, env_modes.check_env_mode(env_mode))
    train = evaluate = None
    try:
        with tf.variable_scope('environments'):
            train = define_in_graph_batch(config, config.seed, env_mode)
        if evaluation:
            with tf.variable_scope('eval_environments'):
                evaluate = define_in_graph_batch(
                    config, config.seed, env_mode, evaluation=True,
                    leader=train)
    except Exception as error:
        if train is not None:
            train.close()
        # The same environment was built in this process already.
        message = batch_env_lib.first_line(error)
        raise errors.TrainingError(
            f'Cannot start the environments: {message}') from error
    return env_mode, train, evaluate


def resolve_env_mode(config, env_mode):
    """The env mode of a run: 'graph', or the Python mode as given or
    recorded.

    'auto' resumes in the mode a checkpoint recorded, else becomes 'graph'
    where `auto_batch_env.picks_graph`; both are logged.

    Args:
      config: Completed configuration with `env` and `logdir`.
      env_mode: A checked name of `env_modes.mode_names()`.

    Raises:
      ConfigError: In one line, when the env has no in-graph task for
          'graph', or the checkpoint was trained on the other kind of batch.
    """
    saved = saved_env_mode(config.logdir)
    if env_mode == 'auto' and saved in env_modes.MODES:
        # The environments' state in the checkpoint is that of this mode.
        env_mode = saved
        logging.getLogger('agents').info(
            'Env mode auto: the run resumes in %s, the mode it trained in.',
            saved)
    if env_mode == 'auto':
        kind, _ = checkpoint_env_kind(config.logdir)
        if auto_batch_env.picks_graph(task_of(config) is not None, kind):
            env_mode = 'graph'
            logging.getLogger('agents').info(
                'Env mode auto: %s has an in-graph task; using graph.',
                config.env)
    if env_modes.in_graph_mode(env_mode):
        check_task(config)
    check_resume(config.logdir, env_modes.in_graph_mode(env_mode))
    return env_mode


def define_in_graph_batch(
        config, seed, env_mode, evaluation=False, leader=None):
    """One batch of a run in the graph, below the current scope.

    Args:
      config, seed, evaluation, leader: See `env_modes.make_batch_env`.
      env_mode: A name that `resolve_env_mode` returned.

    Returns:
      The task batch for 'graph', else a `tools.InGraphBatchEnv`.
    """
    if env_modes.in_graph_mode(env_mode):
        return define_task_batch(config, seed, evaluation)
    # pylint: disable-next=not-callable
    batch_env = tools.InGraphBatchEnv(env_modes.make_batch_env(
        config, seed, env_mode, evaluation, leader))
    if not evaluation:
        define_env_mode_record(batch_env, env_mode)
    return batch_env
