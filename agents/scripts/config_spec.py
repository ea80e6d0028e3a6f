"""Which configuration a run uses, and its completion before training.

A config spec names a function of `agents.scripts.configs`, a
'package.module:function' or a 'path/to/file.py:function'; the function
returns the configuration as a dict. `complete_config` then fills in the
values derived from the environment and checks the settings that training
reads, so that a bad configuration fails before anything is written.
"""

import inspect

import numpy as np

from agents import tools
from agents.scripts import config_io
from agents.scripts import configs
from agents.scripts import env_construction
from agents.scripts.config_io import ConfigError

# Seeds of NumPy's global generator, which the config's seed also sets.
MAX_SEED = 2**32 - 1


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
      ConfigError: Listing the valid names when `name` is unknown.

    Returns:
      Locked `tools.AttrDict`.
    """
    if name not in config_names():
        raise ConfigError(
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
      ConfigError: When the function cannot be found or does not
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
            raise ConfigError(
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


_REQUIRED_KEYS = (
    'algorithm', 'env', 'num_agents', 'steps', 'update_every',
    'eval_episodes')


def with_defaults(config):
    """A copy of the config with the keys it leaves out from the defaults.

    `configs.default()` is the one place of the defaults that training and
    PPO read; a config that lacks one of its keys (a 2017 config, say, from
    before the key existed) takes its value. Keys that `default()` does not
    define stay missing, so reading one still raises.

    Args:
      config: Configuration mapping.

    Returns:
      Locked `tools.AttrDict`.
    """
    config = tools.AttrDict(config)
    with config.unlocked:
        for key, value in configs.default().items():
            config.setdefault(key, value)
    config.lock()
    return config


def complete_config(config):
    """Fill in the defaults and the values derived from the environment.

    Builds one environment in this process, so that an unknown env id or an
    unsupported space fails before any worker starts or file is written.

    Args:
      config: Configuration mapping.

    Raises:
      ConfigError: When the environment cannot be built or used, or
          a setting is invalid.

    Returns:
      Locked copy of the configuration.
    """
    missing = [key for key in _REQUIRED_KEYS if key not in config]
    if missing:
        raise ConfigError(
            f"Config has no {', '.join(repr(key) for key in missing)}; "
            f"expected the keys {', '.join(_REQUIRED_KEYS)}.")
    config = with_defaults(config)
    with config.unlocked:
        config.setdefault('logdir', None)
        env = env_construction.create_environment(config)
        try:
            if not config.max_length:
                spec = env.spec
                config.max_length = spec.max_episode_steps if spec else None
        finally:
            env.close()
        if not config.max_length:
            raise ConfigError(
                'Config max_length is not set and the environment has '
                'no time limit; set max_length.')
    timeout = config.worker_timeout
    if timeout is not None and not (
            isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
            and 0 < timeout < float('inf')):
        raise ConfigError(
            f'Config worker_timeout={timeout!r} must be a positive number '
            'of seconds or None.')
    threads = config.session_threads
    if threads is not None and not (
            isinstance(threads, int) and not isinstance(threads, bool)
            and threads >= 1):
        raise ConfigError(
            f'Config session_threads={threads!r} must be a positive integer '
            'or None.')
    check_eval_every(config)
    if not isinstance(config.restart_workers, bool):
        raise ConfigError(
            f'Config restart_workers={config.restart_workers!r} must be '
            'True or False.')
    check_seed(config.seed, 'Config seed')
    config.lock()
    return config


def check_seed(seed, name):
    """Raise a ConfigError unless the seed is None or fits NumPy's seeds.

    Args:
      seed: The value.
      name: How the message names it, e.g. '--seed'.

    Raises:
      ConfigError: Naming the value and the valid range.
    """
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or (
            not 0 <= seed <= MAX_SEED):
        raise ConfigError(
            f'{name}={seed!r} must be an integer from 0 to {MAX_SEED}.')



def check_eval_every(config):
    """Refuse an evaluation schedule that cannot run.

    Raises `ConfigError` naming the key and what it expects when
    `eval_episodes` is not a positive integer, `eval_every` is not None or
    a positive number of steps up to the run's `steps`, or
    `eval_stochastic` is not a bool.
    """
    episodes = config.eval_episodes
    if isinstance(episodes, bool) or not isinstance(
            episodes, (int, np.integer)) or episodes < 1:
        raise ConfigError(
            f'Config eval_episodes={episodes!r} must be a positive integer: '
            'the number of evaluation environments, one episode each.')
    eval_every = config.eval_every
    steps = config.steps
    if eval_every is not None and (
            isinstance(eval_every, bool)
            or not isinstance(eval_every, (int, float, np.number))
            or not 1 <= eval_every <= steps):
        raise ConfigError(
            f'Config eval_every={eval_every!r} must be None or a number of '
            f'training steps from 1 to steps={steps:g}: the run evaluates '
            'after every eval_every steps and at its end.')
    if not isinstance(config.eval_stochastic, bool):
        raise ConfigError(
            f'Config eval_stochastic={config.eval_stochastic!r} must be True '
            '(sample actions) or False (the greedy mode).')
