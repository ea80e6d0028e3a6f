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
    """A `tools.InGraphBatchEnv` of `num_agents` environments; the 2017 call
    `define_batch_env(constructor, num_agents, env_processes)` works as it did.
    A ConfigError where `env_mode` is unknown, or both `env_mode` and
    `env_processes` are given.

    Args:
      constructor: Callable taking a seed (or None), or no argument (2017),
          and returning an env.
      env_mode: A name of `env_modes.mode_names()` or a boolean (the 2017
          `env_processes`); None: 'inprocess'.
      seed: Base seed; environment i gets `seed + i`; None: unseeded.
      timeout: Seconds a worker may take to answer; None: `ExternalProcess`'s.
      restart: Whether to replace a failing environment (in 'slices', its
          worker) instead of failing the step.
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
