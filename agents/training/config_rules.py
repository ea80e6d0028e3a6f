"""The rules of a config's values (`RULES`): per key, a function of the
value and the config returning None where the value is valid, else what
follows 'Config KEY=VALUE ' in the error, e.g. 'must be >= 1'."""

import contextlib
import functools
import inspect
import io
import math
import re

import numpy as np
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import ppo
from agents.scripts import networks
from agents.tools.episode_wrappers import is_integer
from agents.training import config_io

# Seeds of NumPy's global generator, which the config's seed also sets.
MAX_SEED = 2**32 - 1
# Most environment steps of a run: eleven days at a million steps a second.
MAX_STEPS = 1e12
# Most steps one buffer of the graph holds: 2^24 steps of a few dozen float32
# stay below TensorFlow's 2 GB per tensor and int32 sizes.
MAX_BUFFER_STEPS = 2**24
# Most passes over the update memory per update.
MAX_UPDATE_EPOCHS = 10000
# 2^27 float32 weights are 512 MB, three times that with Adam's slots.
MAX_LAYER_UNITS = 65536
MAX_LAYERS = 64
MAX_HIDDEN_WEIGHTS = 2**27
MAX_THREADS = 1024
# Most seconds a worker may take to answer (16 weeks); Python's waits
# overflow on far larger ones.
MAX_TIMEOUT = 1e7


def _is_real(value):
    """Whether a value is a finite number and no bool."""
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_))
            and math.isfinite(value))


def _float32(value):
    """The value as the graph holds it: 1e300 is inf and 1e-300 is 0."""
    with np.errstate(over='ignore', under='ignore'):
        return np.float32(value)


def _is_number(value):
    """Whether a value is a number, finite in float32, the graph's dtype."""
    return _is_real(value) and bool(np.isfinite(_float32(value)))


def _rule(valid, expected):
    """Rule of a test of the value alone, and what is expected."""
    return lambda value, unused_config: (
        None if valid(value) else f'must be {expected}')


def _integer(low, high, optional=False, expected=None, reason=None):
    """Rule of an integer from `low` to `high` (or a function of config);
    `expected` and `reason` may name config keys, `reason` also `value`."""
    def rule(value, config):
        if value is None and optional:
            return None
        limit = high(config) if callable(high) else high
        if is_integer(value) and low <= value <= limit:
            return None
        text = expected.format_map(config) if expected else (
            f'an integer from {low} to {limit}' + (
                ' or None' if optional else ''))
        text = f'must be {text}'
        if reason and is_integer(value) and value > limit:
            # After a clause of `expected`, the reason is a second one.
            text += '; ' if ': ' in text else ': '
            text += reason.format_map(dict(config, value=value))
        return text
    return rule


def _number(low=-math.inf, high=math.inf, optional=False, above=False,
            expected=None):
    """Rule of a number finite in float32 in a range, or None if optional."""
    def inside(value):
        return (low < value if above else low <= value) and value <= high
    if expected is None:
        expected = f"a finite number {'>' if above else '>='} {low}" + (
            ' or None' if optional else '')

    def rule(value, unused_config):
        if value is None and optional or (
                _is_number(value) and inside(_float32(value))):
            return None
        if _is_real(value) and inside(value):
            # Valid in float64, not as the graph holds it.
            return (
                f'must be {expected}: it is {float(_float32(value))!r} in '
                'float32, the dtype of the graph')
        return f'must be {expected}'
    return rule


def _choice(choices):
    """Rule of one of some strings or None."""
    return _rule(lambda value: any(
        value is choice or (isinstance(value, str) and value == choice)
        for choice in choices), f'one of {choices}')


def _of_type(kinds, expected, optional=False):
    """Rule of a value of some types, or None where optional."""
    return _rule(lambda value: isinstance(value, kinds) or (
        optional and value is None), expected)


def _takes_positional(value, count):
    """Whether a callable takes `count` named positional arguments."""
    try:
        signature = inspect.signature(value)
        signature.bind(*range(count))
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY,
             inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return count <= sum(
        parameter.kind in kinds
        for parameter in signature.parameters.values())


def _signature(expected, count, is_class=False):
    """Rule of a callable (a class where `is_class`) of `count` arguments."""
    return _rule(lambda value: (
        (inspect.isclass(value) or not is_class) and callable(value)
        and _takes_positional(value, count)), expected)


@functools.lru_cache(maxsize=None)
def _maps_tensors(function):
    """Whether a function maps a float32 tensor to one of its shape."""
    if not _takes_positional(function, 1):
        return False
    try:
        with tf.Graph().as_default(), contextlib.redirect_stdout(
                io.StringIO()):
            probe = tf.zeros([2, 3], tf.float32)
            result = function(probe)
            return (isinstance(result, tf.Tensor)
                    and result.dtype == tf.float32
                    and result.shape.as_list() == [2, 3])
    except Exception:  # pylint: disable=broad-exception-caught
        return False


def _valid_activation(value):
    """Whether a value is an activation; unhashable values are none."""
    try:
        return callable(value) and _maps_tensors(value)
    except TypeError:
        return False


def _hidden_weights(sizes):
    return sum(int(a) * int(b) for a, b in zip(sizes[:-1], sizes[1:]))


def _layers(value, unused_config):
    """Rule of the sizes of hidden layers."""
    sizes = isinstance(value, (tuple, list)) and all(
        is_integer(size) and size >= 1 for size in value)
    weights = _hidden_weights(value) if sizes else 0
    too_large = sizes and (weights > MAX_HIDDEN_WEIGHTS or max(
        value, default=0) > MAX_LAYER_UNITS)
    if sizes and not too_large and len(value) <= MAX_LAYERS:
        return None
    message = (
        f'must be a list of 1 to {MAX_LAYERS} layer sizes from 1 to '
        f'{MAX_LAYER_UNITS}, with at most 2^27 = {MAX_HIDDEN_WEIGHTS} '
        'weights between the layers')
    if too_large:
        message += (
            f': these layers would hold {weights} weights, '
            f'{weights * 4 / 1e9:g} GB in float32')
    return message


def _valid_regexes(value):
    """Whether a value is None or maps names to regular expressions."""
    if value is None:
        return True
    if not isinstance(value, dict) or not all(
            isinstance(item, str) for item in (*value, *value.values())):
        return False
    try:
        return all(re.compile(pattern) for pattern in value.values())
    except re.error:
        return False


def _buffer(reason, *sizes, optional=True):
    """Rule of rows of a buffer of 2^24 steps of the first set `sizes`."""
    return _integer(1, lambda config: MAX_BUFFER_STEPS // next(
        (config[key] for key in sizes if config[key]), 1), optional,
                    reason=reason)


def _environments(purpose=''):
    """Rule of a number of environments from 1 to `max_agents`."""
    return _integer(
        1, lambda config: config.max_agents,
        expected='an integer from 1 to max_agents={max_agents}' + purpose,
        reason='it would build {value} environments; raise max_agents where '
        'the machine holds that many')


_BOOL = _of_type((bool, np.bool_), 'True or False')

# Every key of `configs.default()` and the task keys; `max_agents` before
# `num_agents`, which reads it.
RULES = dict([
    # Task.
    ('env', _rule(
        lambda value: (isinstance(value, str) and bool(value))
        or callable(value),
        'a gymnasium env id or a callable returning an env')),
    ('steps', _number(
        1, MAX_STEPS,
        expected='a finite number of environment steps from 1 to 1e12')),
    (config_io.SOURCE_KEY, _of_type(
        str, "a 'package.module:function' string", optional=True)),
    ('logdir', _of_type(str, 'a folder path or None', optional=True)),
    # General.
    ('algorithm', _signature(
        'a class taking (batch_env, step, is_training, should_log, '
        'config), the algorithm', 5, is_class=True)),
    ('max_agents', _buffer(
        'the agents share buffers of at most 2^24 steps', optional=False)),
    ('num_agents', _environments()),
    ('eval_episodes', _environments(
        ': the number of evaluation environments, one episode each')),
    ('eval_stochastic', _of_type(
        (bool, np.bool_), 'True (sample actions) or False (the greedy mode)')),
    ('use_gpu', _BOOL),
    ('seed', _integer(0, MAX_SEED, optional=True,
                      expected=f'an integer from 0 to {MAX_SEED}')),
    # Environment.
    ('normalize_ranges', _BOOL),
    ('max_length', _buffer(
        'the episodes of num_agents={num_agents} agents are held in one '
        'buffer of at most 2^24 steps', 'num_agents')),
    ('worker_timeout', _number(
        0, MAX_TIMEOUT, above=True, optional=True,
        expected='a positive number of seconds up to 1e7 (16 weeks) or '
        'None')),
    ('restart_workers', _BOOL),
    ('session_threads', _integer(
        1, MAX_THREADS, optional=True,
        expected=f'an integer from 1 to {MAX_THREADS} (threads of each of '
        "TensorFlow's pools) or None")),
    ('caller_thread', _BOOL),
    ('compile_rollout', _BOOL),
    ('eval_every', lambda value, config: None if value is None or (
        _is_number(value) and 1 <= value <= config.steps) else (
            'must be None or a number of training steps from 1 to '
            f'steps={config.steps:g}: the run evaluates after every '
            'eval_every steps and at its end')),
    # Network.
    ('network', _signature(
        'a function of (config, action_space, observations, length), the '
        'network', 4)),
    ('weight_summaries', _rule(
        _valid_regexes, 'None or a mapping of names to regular expressions')),
    ('policy_layers', _layers),
    ('value_layers', _layers),
    ('activation', _rule(
        _valid_activation, 'a function mapping a float32 tensor to one of '
        'its shape, the activation')),
    ('mean_activation', _choice(networks.MEAN_ACTIVATIONS)),
    ('weight_init', _choice(networks.WEIGHT_INITS)),
    ('init_output_factor', _number(0, above=True)),
    ('init_std', _number(0, above=True)),
    ('recurrent_value', _BOOL),
    # Optimization.
    ('update_every', _buffer(
        'the update memory holds update_every episodes of '
        'max_length={max_length} steps, at most 2^24 steps', 'max_length',
        optional=False)),
    ('update_steps', _buffer('the update memory holds at most 2^24 steps')),
    ('rollout_length', _buffer('the episode buffers hold at most 2^24 steps')),
    ('update_epochs', _integer(
        1, MAX_UPDATE_EPOCHS,
        reason='an update is one session call, which a first signal waits '
        'for')),
    ('optimizer', _signature(
        'a callable taking the learning rate, the optimizer class', 1)),
    ('learning_rate', _number(0, above=True)),
    ('learning_rate_decay', _choice((None, 'linear'))),
    ('chunk_length', _buffer(
        'the update pads each of the update_every={update_every} episodes '
        'to whole chunks, at most 2^24 steps in all', 'update_every')),
    ('batch_size', _buffer(
        'a mini-batch holds batch_size chunks of chunk_length={chunk_length} '
        'steps, at most 2^24 steps', 'chunk_length', 'max_length')),
    ('max_gradient_norm', _number(0, above=True, optional=True)),
    ('compile_update', _BOOL),
    # Losses.
    ('discount', _number(0, 1, expected='in [0, 1]')),
    ('gae_lambda', _number(0, 1, optional=True, expected='in [0, 1] or None')),
    ('bootstrap_truncated', _BOOL),
    ('reward_normalization', _choice(ppo.REWARD_NORMALIZATIONS)),
    ('value_loss_clip', _number(0, above=True, optional=True)),
    ('entropy_regularization', _number(0)),
    ('ppo_clip', _number(0, above=True, optional=True)),
    ('kl_penalty', lambda value, config: (
        'must be True or False' if not isinstance(value, (bool, np.bool_))
        else None if value or config.ppo_clip
        else 'needs ppo_clip, the policy objective would have no trust '
        'region otherwise')),
    ('kl_target', _number(0, above=True)),
    ('kl_cutoff_factor', _number(0, above=True)),
    ('kl_cutoff_coef', _number(0)),
    ('kl_init_penalty', _number(0)),
])
