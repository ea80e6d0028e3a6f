"""Which configuration a run uses, and its completion and check by
`config_rules.RULES` before training."""

import inspect
import logging
import re

from agents import tools
from agents.tools import run_errors
from agents.training import config_io
from agents.scripts import configs
from agents.environments import env_construction
from agents.training.config_io import ConfigError
from agents.training.config_rules import RULES

# The parts of a list of seeds: a seed, or a range `LOW-HIGH` of them.
_SEED = re.compile(r'[+-]?[0-9]+')
_SEED_RANGE = re.compile(r'([0-9]+)-([0-9]+)')
# Most seeds of a list; more would only fill the memory before a check.
MOST_SEEDS = 2 ** 16


def config_names():
    """Names of the configuration functions in `agents.scripts.configs`."""
    return sorted(
        name for name, value in inspect.getmembers(configs, inspect.isfunction)
        if value.__module__ == configs.__name__ and name != 'default'
        and not name.startswith('_'))


def load_named_config(name):
    """The locked `tools.AttrDict` of a function of `agents.scripts.configs`
    (a ConfigError listing the valid names where `name` is unknown)."""
    if name not in config_names():
        raise ConfigError(
            f"Unknown config '{name}'; valid configs: "
            f"{', '.join(config_names())}.")
    config = tools.AttrDict(getattr(configs, name)())
    config.lock()
    return config


def load_config_spec(spec):
    """The locked `tools.AttrDict` of a config spec (a function's name in
    `agents.scripts.configs`, 'package.module:function' or
    'path/to/file.py:function'), recorded under `config_io.SOURCE_KEY`; a
    ConfigError where the function is not found, raises or returns no dict."""
    if ':' not in spec:
        config = load_named_config(spec)
        source = f'{configs.__name__}:{spec}'
    else:
        function, source = config_io.import_config_function(spec)
        try:
            values = function()
        except Exception as error:  # pylint: disable=broad-exception-caught
            raise ConfigError(
                f"Config function '{spec}' raised "
                f'{run_errors.describe_exception(error)}') from error
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

# What a 2017 config, which lacks both keys, gets: PPO updated on whole
# episodes, all of them in one mini-batch.
_KEYS_OF_2017 = dict(chunk_length=None, batch_size=None)

# Keys of 2017 configs that nothing reads now, and those in their place.
RETIRED_KEYS = dict(
    update_epochs_policy='update_epochs', update_epochs_value='update_epochs',
    policy_optimizer='optimizer', value_optimizer='optimizer',
    policy_lr='learning_rate', value_lr='learning_rate',
    init_mean_factor='init_output_factor', init_logstd='init_std')


def with_defaults(config):
    """A locked copy of the config with the keys it lacks from the defaults
    (where it has neither `chunk_length` nor `batch_size`, those of 2017)."""
    config = tools.AttrDict(config)
    with config.unlocked:
        if not any(key in config for key in _KEYS_OF_2017):
            config.update(_KEYS_OF_2017)
        for key, value in configs.default().items():
            config.setdefault(key, value)
    config.lock()
    return config


def warn_retired_keys(config):
    """Log one warning naming the keys of `RETIRED_KEYS` a config has."""
    retired = [key for key in RETIRED_KEYS if key in config]
    if not retired:
        return
    instead = sorted({RETIRED_KEYS[key] for key in retired})
    logging.getLogger('agents').warning(
        'Config keys of the 2017 package that nothing reads now: %s; '
        'set %s instead.', ', '.join(retired), ', '.join(instead))


def complete_config(config):
    """A locked copy with the defaults and the values derived from the env,
    checked before the env is built; a ConfigError where either fails."""
    missing = [key for key in _REQUIRED_KEYS if key not in config]
    if missing:
        raise ConfigError(
            f"Config has no {', '.join(repr(key) for key in missing)}; "
            f"expected the keys {', '.join(_REQUIRED_KEYS)}.")
    warn_retired_keys(config)
    config = with_defaults(config)
    with config.unlocked:
        config.setdefault('logdir', None)
        check_config(config)
        env = env_construction.create_environment(config)
        try:
            if not config.max_length:
                spec = tools.forwarding.spec_of(env)
                config.max_length = spec.max_episode_steps if spec else None
        finally:
            env.close()
        if not config.max_length:
            raise ConfigError(
                'Config max_length is not set and the environment has '
                'no time limit; set max_length.')
    check_config(config)
    config.lock()
    return config


def check_config(config):
    """Check every value of a configuration that `RULES` knows; the
    ConfigError names the first invalid key, its value and what is expected."""
    # Rules that read another key (max_agents, ppo_clip) find its default
    # where the config leaves it out.
    full = with_defaults(config)
    for key, rule in RULES.items():
        problem = key in config and rule(config[key], full)
        if problem:
            raise ConfigError(
                f'Config {key}={config_io.shorten(repr(config[key]))} '
                f'{problem}.')


def check_seed(seed, name):
    """Raise a ConfigError naming `name` (e.g. '--seed') unless the seed is
    None or fits NumPy's."""
    problem = RULES['seed'](seed, {})
    if problem:
        raise ConfigError(f'{name}={seed!r} {problem}.')


def parse_seeds(text, name='--seeds'):
    """The seeds of a flag's text: seeds and ranges `LOW-HIGH` (both
    included) separated by commas, e.g. '0-15' or '0,3,7'; a ConfigError
    naming `name` and the text where a part is neither, a seed is out of
    range or repeats, or the list is empty or longer than `MOST_SEEDS`."""
    flag = f'{name}={text}'
    example = f'expected e.g. {name}=0-15 or {name}=0,3,7'
    if not text.strip():
        raise ConfigError(f'{flag} lists no seeds; {example}.')
    parts = []
    for part in (part.strip() for part in text.split(',')):
        bounds = _SEED_RANGE.fullmatch(part)
        if bounds:
            low, high = int(bounds[1]), int(bounds[2])
            if low > high:
                raise ConfigError(
                    f'{flag}: the range {part} is empty; expected LOW-HIGH '
                    'with LOW <= HIGH.')
        elif _SEED.fullmatch(part):
            low = high = int(part)
        else:
            raise ConfigError(
                f"{flag}: '{part}' is not a seed or a range of seeds; "
                f'{example}.')
        parts.append(range(low, high + 1))
    count = sum(part.stop - part.start for part in parts)
    if count > MOST_SEEDS:
        raise ConfigError(
            f'{flag} lists {count} seeds; expected at most {MOST_SEEDS}.')
    seeds = [seed for part in parts for seed in part]
    seen = set()
    for seed in seeds:
        problem = RULES['seed'](seed, {})
        if problem:
            raise ConfigError(f'{flag}: seed {seed} {problem}.')
        if seed in seen:
            raise ConfigError(
                f'{flag} lists seed {seed} twice; expected each once.')
        seen.add(seed)
    return seeds
