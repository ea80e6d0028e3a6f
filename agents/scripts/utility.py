"""The 2017 call forms that research code imports from here; all but
`define_batch_env` live in `agents.training`."""

import tensorflow.compat.v1 as tf

from agents import tools
from agents.environments import env_construction
from agents.environments import env_modes
from agents.training import config_io
from agents.training.checkpoints import define_saver
from agents.training.checkpoints import initialize_variables
from agents.training.checkpoints import list_checkpoints
from agents.training.checkpoints import RunSaver
from agents.training.config_io import load_config
from agents.training.config_io import save_config
from agents.training.console import set_up_logging
from agents.training.errors import CheckpointError
from agents.training.errors import TrainingError
from agents.training.simulation import define_simulation_graph

__all__ = [
    'TrainingError', 'CheckpointError', 'RunSaver', 'set_up_logging',
    'define_batch_env', 'define_simulation_graph', 'define_saver',
    'initialize_variables', 'list_checkpoints', 'save_config', 'load_config',
]


def define_batch_env(
        constructor, num_agents, env_mode=None, seed=None, timeout=None,
        restart=False, *, env_processes=None):
    """Create a batch of environments wrapped into the graph.

    The 2017 call `define_batch_env(constructor, num_agents, env_processes)`
    works as it did: a constructor without arguments is called without the
    seed, and `env_processes` is a boolean env mode.

    Args:
      constructor: Callable taking a seed (or None) and returning an env,
          or one without arguments (2017).
      num_agents: Number of environments in the batch.
      env_mode: A name of `env_modes.mode_names()` or a boolean; None means
          'inprocess'.
      seed: Base seed; environment i gets `seed + i`, None leaves them
          unseeded.
      timeout: Seconds a worker may take to answer; None: the default of
          `ExternalProcess`.
      restart: Whether to replace a failing environment (in 'slices', its
          worker) instead of failing the step.
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
    constructor = env_construction.taking_seed(constructor)
    with tf.variable_scope('environments'):
        return tools.InGraphBatchEnv(env_modes.create_batch_env(
            constructor, num_agents, env_mode, seed, timeout, restart))
