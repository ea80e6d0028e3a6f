"""A run's batches in the graph, and the env mode 'graph'.

`define_run_batches` is the one call that builds a run's environments: from
a checked env mode and what the run folder's checkpoint says (`SavedEnv`,
plain values that the trainer reads), it resolves 'auto' and defines the
training and the evaluation batch in the graph, of Python environments or
of the config's in-graph task (`environments.TASKS`) behind the standard
wrappers as graph operations (`task.StandardTask`). The task's state is
checkpointed in the scope `task`, so a run resumes only with the kind of
batch that trained it (`check_resume`).
"""

import collections
import logging

import numpy as np
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.environments import env_construction
from agents.environments import env_modes
from agents.environments import in_graph_task
from agents.environments import task as task_lib
from agents.tools import batch_env as batch_env_lib
from agents.tools import resume_state
from agents.tools.run_errors import ConfigError
from agents.tools.run_errors import TrainingError

# A variable that every checkpoint of a graph-mode run holds, below the
# scope of the batch of environments.
TASK_VARIABLE = 'task/state'
# The variable of the env mode of a run's Python environments.
ENV_MODE_VARIABLE = 'env_mode_temporary/env_mode'


class SavedEnv(collections.namedtuple('SavedEnv', 'kind, mode, path')):
    """What the newest readable checkpoint of a run says of its environments,
    as the trainer reads it from the run folder (`checkpoints.saved_env`).

    Attributes:
      kind: 'graph' (it holds a task's state), 'python' or None (no
          readable checkpoint: a new run).
      mode: The Python env mode it recorded, or None (no record, or 'auto'
          had not chosen yet).
      path: The checkpoint's path, or None.
    """


# A run without a readable checkpoint.
NEW_RUN = SavedEnv(None, None, None)


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
      config: Completed configuration whose env has an in-graph task (see
          `check_task`).
      seed: The run's seed, or None for a random one (see
          `env_modes.task_seed`).
      evaluation: Whether to build the batch of `eval_episodes` for
          evaluation.

    Returns:
      `environments.InGraphTaskBatch`, whose variables live in the scope
      `task` below the current one.
    """
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
    scope, name = ENV_MODE_VARIABLE.split('/')
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


def check_resume(logdir, saved, graph_mode):
    """Raise a one-line ConfigError when a run resumes with the other kind
    of batch.

    Args:
      logdir: Run folder, or None.
      saved: `SavedEnv` of the run folder.
      graph_mode: Whether this run trains on the in-graph task.

    Raises:
      ConfigError: Naming the checkpoint and the env mode that resumes it.
    """
    kind, _, path = saved
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


def define_run_batches(config, env_mode, evaluation=True, saved=NEW_RUN):
    """Resolve 'auto' and define a run's batches.

    Args:
      config: Completed configuration (see `env_modes.make_batch_env`).
      env_mode: A checked name of `env_modes.mode_names()` (see
          `env_modes.check_env_mode`).
      evaluation: Whether to define an evaluation batch.
      saved: `SavedEnv` of the run folder; `NEW_RUN` for a new run.

    Raises:
      ConfigError: When the config or the run folder cannot be used with
          the mode (see `resolve_env_mode`).
      TrainingError: When an environment cannot start.

    Returns:
      Tuple of the resolved mode, the training batch (variable scope
      `environments`) and the evaluation batch (`eval_environments`) or
      None.
    """
    env_mode = resolve_env_mode(config, env_mode, saved)
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
        raise TrainingError(
            f'Cannot start the environments: {message}') from error
    return env_mode, train, evaluate


def resolve_env_mode(config, env_mode, saved=NEW_RUN):
    """The env mode of a run: 'graph', or the Python mode as given or
    recorded.

    'auto' resumes in the mode a checkpoint recorded, else becomes 'graph'
    where `picks_graph`; both are logged.

    Args:
      config: Completed configuration with `env` and `logdir`.
      env_mode: A checked name of `env_modes.mode_names()`.
      saved: `SavedEnv` of the run folder; `NEW_RUN` for a new run.

    Raises:
      ConfigError: In one line, when the env has no in-graph task for
          'graph', or the checkpoint was trained on the other kind of batch.
    """
    if env_mode == 'auto' and saved.mode in env_modes.MODES:
        # The environments' state in the checkpoint is that of this mode.
        env_mode = saved.mode
        logging.getLogger('agents').info(
            'Env mode auto: the run resumes in %s, the mode it trained in.',
            saved.mode)
    if env_mode == 'auto' and picks_graph(
            task_of(config) is not None, saved.kind):
        env_mode = 'graph'
        logging.getLogger('agents').info(
            'Env mode auto: %s has an in-graph task; using graph.',
            config.env)
    if env_modes.in_graph_mode(env_mode):
        check_task(config)
    check_resume(config.logdir, saved, env_modes.in_graph_mode(env_mode))
    return env_mode


def picks_graph(has_task, checkpoint_kind=None):
    """Whether 'auto' trains on the in-graph task.

    Args:
      has_task: Whether the config's env has an in-graph task.
      checkpoint_kind: None for a new run, else 'graph' or 'python' (see
          `SavedEnv`).

    Returns:
      True for a checkpoint of the task, or where the env has a task and
      no checkpoint of Python environments.
    """
    if checkpoint_kind == 'graph':
        return True
    return bool(has_task) and checkpoint_kind != 'python'


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
