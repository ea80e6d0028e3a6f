"""The configured environment: one built from a config (by gymnasium id or
constructor), and the standard wrappers, one recipe for an environment, a
batch and an in-graph task. No TensorFlow: worker processes import it."""

import collections
import inspect

import gymnasium as gym

from agents import tools
from agents.tools import run_errors
from agents.tools.run_errors import ConfigError


def create_environment(
        config, seed=None, render_mode=None, batch_wrappers=False):
    """Construct the environment of a config's `env`, `max_length` and
    `normalize_ranges` with the standard wrappers, unless `batch_wrappers`
    leaves them to the batch; a ConfigError for an env that cannot be built
    or is unsupported."""
    # Before MuJoCo compiles its first model, which may warn.
    tools.mujoco_warnings.install(config.env)
    if isinstance(config.env, str):
        check_env_id(config.env)
    kwargs = {'render_mode': render_mode} if render_mode else {}
    try:
        env = (gym.make(config.env, **kwargs) if isinstance(config.env, str)
               else config.env(**kwargs))
    except Exception as error:  # pylint: disable=broad-exception-caught
        # A missing simulator (Box2D's DependencyNotInstalled) or a
        # constructor that fails: one line with the type and message.
        raise ConfigError(
            f"Config env '{_env_name(config.env)}' cannot be built: "
            f'{run_errors.describe_exception(error)}') from error
    # A constructor may have imported MuJoCo just now.
    tools.mujoco_warnings.install()
    if not all(hasattr(env, name) for name in _ENV_ATTRIBUTES):
        raise ConfigError(
            f"Config env '{_env_name(config.env)}' returned "
            f'{run_errors.shorten(repr(env), 60)}, a '
            f'{type(env).__name__}; expected a gymnasium environment.')
    check_spaces(env)
    if not batch_wrappers:
        env = _apply_wrappers(config, env, tools.wrappers)
    if seed is not None:
        env.reset(seed=int(seed))
        env.action_space.seed(int(seed))
    return env


def _env_name(env):
    """How errors name a config's env: its id or the constructor's path."""
    if isinstance(env, str):
        return env
    name = getattr(env, '__qualname__', None) or repr(env)
    module = getattr(env, '__module__', None)
    return f'{module}:{name}' if module else name


def standard_wrappers(config, action_space):
    """The standard wrappers, one recipe for `tools.wrappers`,
    `tools.batch_wrappers` and `StandardTask`: a list of (wrapper class
    name, keyword arguments), innermost first."""
    recipe = []
    if config.max_length:
        recipe.append(('LimitDuration', dict(duration=config.max_length)))
    if config.normalize_ranges:
        recipe.append(('RangeNormalize', {}))
    if isinstance(action_space, gym.spaces.Box):
        recipe.append(('ClipAction', {}))
    recipe.append(('ConvertTo32Bit', {}))
    return recipe


def _apply_wrappers(config, env, module):
    """`env` inside the `standard_wrappers` of a module's classes."""
    for name, kwargs in standard_wrappers(config, env.action_space):
        env = getattr(module, name)(env, **kwargs)
    return env


def wrap_batch_env(config, batch_env):
    """A batch built with `batch_wrappers=True` inside the standard
    wrappers of `tools.batch_wrappers`."""
    return _apply_wrappers(config, batch_env, tools.batch_wrappers)


_ENV_ATTRIBUTES = ('observation_space', 'action_space', 'reset', 'step')
# The settings of a config that build its environment.
_ENV_KEYS = ('env', 'max_length', 'normalize_ranges')


class EnvironmentConstructor:
    """`create_environment` bound to the environment's settings of a
    config and `batch_wrappers`, which workers unpickle without TensorFlow."""

    def __init__(self, config, batch_wrappers=False):
        """Bind the settings of the configured environment."""
        self.config = tools.AttrDict({
            key: config[key] for key in _ENV_KEYS if key in config})
        self.batch_wrappers = batch_wrappers

    @property
    def env_id(self):
        """The gymnasium id where the batch applies the wrappers, else None."""
        if self.batch_wrappers and isinstance(self.config.env, str):
            return self.config.env
        return None

    def __call__(self, seed=None, render_mode=None):
        """Build one environment; see `create_environment`."""
        return create_environment(
            self.config, seed, render_mode, self.batch_wrappers)


def taking_seed(constructor):
    """A constructor taking a seed, a 2017 one wrapped to ignore it."""
    try:
        inspect.signature(constructor).bind(None)
    except TypeError:
        return _WithoutSeed(constructor)
    except ValueError:
        pass  # Some builtins have no signature; assume today's form.
    return constructor


class _WithoutSeed(collections.namedtuple('_WithoutSeed', 'constructor')):
    """A 2017 constructor without arguments, called with a seed it ignores
    (here, so that worker processes unpickle it without TensorFlow)."""

    def __call__(self, unused_seed):
        """Build the environment."""
        return self.constructor()


def check_env_id(env_id):
    """Raise a ConfigError listing the registered ids for an unknown id."""
    if env_id not in gym.envs.registry:
        choices = ', '.join(sorted(gym.envs.registry))
        raise ConfigError(f"Unknown env id '{env_id}'; valid ids: {choices}.")


def check_spaces(env):
    """Raise a ConfigError for spaces the in-graph environment cannot hold."""
    observ_space, action_space = env.observation_space, env.action_space
    if not isinstance(observ_space, gym.spaces.Box):
        raise ConfigError(
            f'Unsupported observation space {observ_space!r}; expected a Box.')
    if not isinstance(action_space, (gym.spaces.Box, gym.spaces.Discrete)):
        raise ConfigError(
            f'Unsupported action space {action_space!r}; expected a Box '
            'or Discrete.')
