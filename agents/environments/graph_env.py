"""A run's batches in the graph: `define_run_batches`, the one call that
builds a run's environments, and the env mode 'graph'."""

import collections
import logging

import numpy as np
import tensorflow.compat.v1 as tf

from agents import environments
from agents import tools
from agents.environments import env_modes
from agents.environments import in_graph_task
from agents.tools import batch_env as batch_env_lib
from agents.tools import resume_state
from agents.tools.run_errors import ConfigError
from agents.tools.run_errors import TrainingError

# A variable that every checkpoint of a graph-mode run holds.
TASK_VARIABLE = 'task/state'
# The variable of the env mode of a run's Python environments.
ENV_MODE_VARIABLE = 'env_mode_temporary/env_mode'


class SavedEnv(collections.namedtuple(
        'SavedEnv', 'kind, mode, path, seeds, variants',
        defaults=(None, None))):
    """A run's newest readable checkpoint: `kind` 'graph', 'python' or None (a
    new run), the recorded Python env `mode` or None, `path` or None, and its
    population members' `seeds` and variant settings (None: a single run's)."""


NEW_RUN = SavedEnv(None, None, None)


def check_task(config, flag='--env_mode=graph'):
    """Raise a ConfigError naming the `flag` that needs a task and the tasks
    if the env has none."""
    if _has_task(config):
        return
    env = config.get('env')
    name = repr(env) if isinstance(env, str) else (
        getattr(env, '__qualname__', None) or repr(env))
    raise ConfigError(
        f'{flag}: the config env {name} has no in-graph task; '
        f"tasks with one: {', '.join(sorted(environments.TASKS))}.")


def _has_task(config):
    """Whether the config's env is the id of an in-graph task."""
    env = config.get('env')
    return isinstance(env, str) and env in environments.TASKS


def define_run_batches(
        config, env_mode, evaluation=True, saved=NEW_RUN, seeds=None):
    """Resolve 'auto' and define a run's batches: return the resolved mode, the
    training batch (variable scope `environments`) and the evaluation batch
    (`eval_environments`) or None, of a checked `env_mode` and the `SavedEnv`
    of the run folder; with `seeds` (a population on Python environments),
    those of a run per seed in one batch, one after another. Raises as
    `resolve_env_mode`; a TrainingError where an environment cannot start."""
    env_mode = resolve_env_mode(config, env_mode, saved)
    batches = [None, None]
    scopes = ('environments', 'eval_environments')[:2 if evaluation else 1]
    try:
        for index, scope in enumerate(scopes):
            with tf.variable_scope(scope):
                batches[index] = define_in_graph_batch(
                    config, list(seeds) if seeds else config.seed, env_mode,
                    evaluation=index == 1, leader=batches[0])
    except Exception as error:
        if batches[0] is not None:
            batches[0].close()
        message = batch_env_lib.first_line(error)
        raise TrainingError(
            f'Cannot start the environments: {message}') from error
    return env_mode, batches[0], batches[1]


def resolve_env_mode(config, env_mode, saved=NEW_RUN):
    """The env mode of a run: 'auto' resumes in the mode a checkpoint
    recorded, else becomes 'graph' for a checkpoint of the task, or where
    the env has a task and no checkpoint of Python environments (logged);
    a ConfigError when the env has no task or the checkpoint another kind."""
    logger = logging.getLogger('agents')
    if env_mode == 'auto' and saved.mode in env_modes.MODES:
        # The environments' state in the checkpoint is that of this mode.
        env_mode = saved.mode
        logger.info(
            'Env mode auto: the run resumes in %s, the mode it trained in.',
            saved.mode)
    if env_mode == 'auto' and (saved.kind == 'graph' or (
            _has_task(config) and saved.kind != 'python')):
        env_mode = 'graph'
        logger.info(
            'Env mode auto: %s has an in-graph task; using graph.',
            config.env)
    graph_mode = env_modes.in_graph_mode(env_mode)
    if graph_mode:
        check_task(config)
    if saved.kind is None or (saved.kind == 'graph') == graph_mode:
        return env_mode
    if saved.kind == 'python':
        raise ConfigError(
            f'Cannot resume {config.logdir} with --env_mode=graph: checkpoint '
            f'{saved.path} holds no in-graph task state (task/*), it was '
            'trained on Python environments; resume with --env_mode=auto or '
            'a Python env mode.')
    raise ConfigError(
        f'Cannot resume {config.logdir} on Python environments: checkpoint '
        f'{saved.path} holds the state of an in-graph task (task/*), it was '
        'trained with --env_mode=graph; resume with --env_mode=graph or auto.')


def define_in_graph_batch(
        config, seed, env_mode, evaluation=False, leader=None):
    """One batch of a run in the graph: the config's `StandardTask` for
    'graph', else a `tools.InGraphBatchEnv` of `env_modes.make_batch_env`,
    whose training batch records its (chosen) mode in checkpoints."""
    if env_modes.in_graph_mode(env_mode):
        task = in_graph_task.StandardTask(
            environments.TASKS[config.env], config)
        return in_graph_task.InGraphTaskBatch(
            task, config.eval_episodes if evaluation else config.num_agents,
            env_modes.task_seed(seed, evaluation))
    # pylint: disable-next=not-callable
    batch_env = tools.InGraphBatchEnv(env_modes.make_batch_env(
        config, seed, env_mode, evaluation, leader))
    if evaluation:
        return batch_env
    scope, name = ENV_MODE_VARIABLE.split('/')
    with tf.variable_scope(scope):
        variable = tf.Variable(env_mode, trainable=False, name=name)
    tools.keep_for_resume(variable)

    def chosen():
        """The name of the mode."""
        mode = getattr(batch_env, 'mode', None) if env_mode == 'auto' else None
        return np.array((mode or env_mode).encode('utf-8'), object)

    record = variable.assign(tf.numpy_function(
        chosen, [], tf.string, stateful=True))
    resume_state.on_save(record, record, tf.constant(''))
    return batch_env
