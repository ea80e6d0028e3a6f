"""Tests of config specs and their completion."""

import logging

import pytest

from agents import tools
from agents.training import config_io
from agents.training import config_overrides
from agents.training import config_spec
from agents.scripts import configs


def test_unknown_config_name_lists_the_choices():
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.load_config_spec('pendulm')
    assert str(error.value) == (
        "Unknown config 'pendulm'; valid configs: "
        f"{', '.join(config_spec.config_names())}.")
    assert 'pendulum' in config_spec.config_names()
    assert 'default' not in config_spec.config_names()


def test_config_spec_records_its_source():
    config = config_spec.load_config_spec('pendulum')
    assert config[config_io.SOURCE_KEY] == 'agents.scripts.configs:pendulum'
    assert config_spec.config_label('my_package.my_configs:walker') == (
        'walker')


def test_complete_config_fills_what_is_left_out_from_the_defaults():
    config = tools.AttrDict(
        algorithm=configs.default()['algorithm'], env='Pendulum-v1',
        num_agents=2, steps=100,
        update_every=2, eval_episodes=2, bootstrap_truncated=False)
    config = config_spec.complete_config(config)
    default = configs.default()
    assert config.bootstrap_truncated is False
    assert config.max_length == 200  # The env's time limit.
    assert config.logdir is None
    # Without chunk_length and batch_size, a config of the 2017 package.
    assert (config.chunk_length, config.batch_size) == (None, None)
    assert all(
        config[key] == value for key, value in default.items()
        if key not in ('algorithm', 'num_agents', 'update_every',
                       'eval_episodes', 'bootstrap_truncated', 'max_length',
                       'chunk_length', 'batch_size'))


@pytest.mark.parametrize('given, expected', [
    # 2017: whole episodes, all in one mini-batch; once chunks of 50 in
    # batches of 20, silently.
    ({}, (None, None)),
    (dict(chunk_length=10), (10, 20)),
    (dict(batch_size=4), (50, 4)),
])
def test_a_config_without_chunks_and_batches_keeps_2017s_updates(
        given, expected):
    config = config_spec.with_defaults(dict(env='Pendulum-v1', **given))
    assert (config.chunk_length, config.batch_size) == expected


def test_keys_that_nothing_reads_get_one_warning(caplog):
    """Once ignored silently."""
    config = tools.AttrDict(
        configs.pendulum(), update_epochs_policy=64, update_epochs_value=64,
        init_logstd=-1, my_own_key=1)
    with caplog.at_level(logging.WARNING, logger='agents'):
        config_spec.complete_config(config)
    assert [record.getMessage() for record in caplog.records] == [
        'Config keys of the 2017 package that nothing reads now: '
        'update_epochs_policy, update_epochs_value, init_logstd; set '
        'init_std, update_epochs instead.']


def test_complete_config_names_the_missing_keys():
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.complete_config(tools.AttrDict(env='Pendulum-v1'))
    assert str(error.value) == (
        "Config has no 'algorithm', 'num_agents', 'steps', 'update_every', "
        "'eval_episodes'; expected the keys algorithm, env, num_agents, "
        'steps, update_every, eval_episodes.')


@pytest.mark.parametrize('seed', [-1, 2**32, 1.5, True, '3'])
def test_check_seed_names_the_value_and_the_range(seed):
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.check_seed(seed, '--seed')
    assert str(error.value) == (
        f'--seed={seed!r} must be an integer from 0 to 4294967295.')
    config_spec.check_seed(None, '--seed')
    config_spec.check_seed(7, '--seed')


@pytest.mark.parametrize('text, seeds', [
    ('0-3', [0, 1, 2, 3]), ('0,3,7', [0, 3, 7]), (' 9 , 2-3,4', [9, 2, 3, 4]),
    ('5-5', [5]), ('4294967295', [2**32 - 1])])
def test_parse_seeds_reads_seeds_and_ranges_in_order(text, seeds):
    assert config_spec.parse_seeds(text) == seeds


def test_parse_seeds_names_the_flag_of_the_text():
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.parse_seeds('1,x', '--other')
    assert str(error.value) == (
        "--other=1,x: 'x' is not a seed or a range of seeds; expected e.g. "
        '--other=0-15 or --other=0,3,7.')


def test_rules_cover_every_default_key_and_every_config_passes():
    assert not set(configs.default()) - set(config_spec.RULES)
    for name in config_spec.config_names():
        config_spec.check_config(config_spec.load_named_config(name))


def _pendulum(**values):
    config = tools.AttrDict(configs.pendulum())
    with config.unlocked:
        config.update(values)
    return config


@pytest.mark.parametrize('key, value, message', [
    # The probes of issue 24.
    ('steps', float('nan'),
     'steps=nan must be a finite number of environment steps from 1 to '
     '1e12.'),
    ('steps', 1e300,
     'steps=1e+300 must be a finite number of environment steps from 1 to '
     '1e12.'),
    ('steps', -5,
     'steps=-5 must be a finite number of environment steps from 1 to '
     '1e12.'),
    ('steps', 0,
     'steps=0 must be a finite number of environment steps from 1 to 1e12.'),
    ('max_length', -1,
     'max_length=-1 must be an integer from 1 to 2097152 or None.'),
    ('num_agents', 0,
     'num_agents=0 must be an integer from 1 to max_agents=1024.'),
    ('num_agents', -3,
     'num_agents=-3 must be an integer from 1 to max_agents=1024.'),
    ('num_agents', 1000000,
     'num_agents=1000000 must be an integer from 1 to max_agents=1024: it '
     'would build 1000000 environments; raise max_agents where the machine '
     'holds that many.'),
    ('num_agents', 8.0,
     'num_agents=8.0 must be an integer from 1 to max_agents=1024.'),
    # Types.
    ('steps', '1e5',
     "steps='1e5' must be a finite number of environment steps from 1 to "
     '1e12.'),
    ('learning_rate', float('inf'),
     'learning_rate=inf must be a finite number > 0.'),
    ('use_gpu', 'yes', "use_gpu='yes' must be True or False."),
    ('compile_update', 1, 'compile_update=1 must be True or False.'),
    ('policy_layers', (64, 0),
     'policy_layers=(64, 0) must be a list of 1 to 64 layer sizes from 1 '
     'to 65536, with at most 2^27 = 134217728 weights between the '
     'layers.'),
    ('network', 'feed_forward',
     "network='feed_forward' must be a function of (config, action_space, "
     'observations, length), the network.'),
    ('weight_summaries', {'all': '('},
     "weight_summaries={'all': '('} must be None or a mapping of names to "
     'regular expressions.'),
    ('max_agents', 0, 'max_agents=0 must be an integer from 1 to 16777216.'),
    # The checks that PPO made, with their words.
    ('discount', 2, 'discount=2 must be in [0, 1].'),
    ('update_every', 0, 'update_every=0 must be an integer from 1 to 83886.'),
    ('rollout_length', 0,
     'rollout_length=0 must be an integer from 1 to 16777216 or None.'),
    ('kl_target', 0, 'kl_target=0 must be a finite number > 0.'),
    ('gae_lambda', 1.5, 'gae_lambda=1.5 must be in [0, 1] or None.'),
    ('reward_normalization', 'returns',
     "reward_normalization='returns' must be one of ('reward', 'return', "
     'None).'),
    ('learning_rate_decay', 'cosine',
     "learning_rate_decay='cosine' must be one of (None, 'linear')."),
    ('kl_penalty', False,
     'kl_penalty=False needs ppo_clip, the policy objective would have no '
     'trust region otherwise.'),
    # The probes of issue 39: callables by signature or on a probe.
    ('network', print,
     'network=<built-in function print> must be a function of (config, '
     'action_space, observations, length), the network.'),
    ('activation', print,
     'activation=<built-in function print> must be a function mapping a '
     'float32 tensor to one of its shape, the activation.'),
    ('activation', len,
     'activation=<built-in function len> must be a function mapping a '
     'float32 tensor to one of its shape, the activation.'),
    ('optimizer', print,
     'optimizer=<built-in function print> must be a callable taking the '
     'learning rate, the optimizer class.'),
    ('algorithm', print,
     'algorithm=<built-in function print> must be a class taking '
     '(batch_env, step, is_training, should_log, config), the algorithm.'),
    # Finite in float32, the graph's dtype.
    ('init_std', 1e300,
     'init_std=1e+300 must be a finite number > 0: it is inf in float32, '
     'the dtype of the graph.'),
    ('init_std', 1e-300,
     'init_std=1e-300 must be a finite number > 0: it is 0.0 in float32, '
     'the dtype of the graph.'),
    ('learning_rate', 1e300,
     'learning_rate=1e+300 must be a finite number > 0: it is inf in '
     'float32, the dtype of the graph.'),
    # Limits of every size, with their reasons.
    ('max_length', 10**9,
     'max_length=1000000000 must be an integer from 1 to 2097152 or None: '
     'the episodes of num_agents=8 agents are held in one buffer of at '
     'most 2^24 steps.'),
    ('update_every', 10**9,
     'update_every=1000000000 must be an integer from 1 to 83886: the '
     'update memory holds update_every episodes of max_length=200 steps, '
     'at most 2^24 steps.'),
    ('chunk_length', 10**9,
     'chunk_length=1000000000 must be an integer from 1 to 2097152 or '
     'None: the update pads each of the update_every=8 episodes to whole '
     'chunks, at most 2^24 steps in all.'),
    ('batch_size', 10**9,
     'batch_size=1000000000 must be an integer from 1 to 335544 or None: a '
     'mini-batch holds batch_size chunks of chunk_length=50 steps, at most '
     '2^24 steps.'),
    ('update_epochs', 10**6,
     'update_epochs=1000000 must be an integer from 1 to 10000: an update '
     'is one session call, which a first signal waits for.'),
    ('eval_episodes', 10**8,
     'eval_episodes=100000000 must be an integer from 1 to max_agents=1024: '
     'the number of evaluation environments, one episode each; it would '
     'build 100000000 environments; raise max_agents where the machine '
     'holds that many.'),
    ('policy_layers', (100000, 100000),
     'policy_layers=(100000, 100000) must be a list of 1 to 64 layer sizes '
     'from 1 to 65536, with at most 2^27 = 134217728 weights between the '
     'layers: these layers would hold 10000000000 weights, 40 GB in '
     'float32.'),
    ('session_threads', 10**6,
     'session_threads=1000000 must be an integer from 1 to 1024 (threads '
     "of each of TensorFlow's pools) or None."),
    ('worker_timeout', 1e300,
     'worker_timeout=1e+300 must be a positive number of seconds up to 1e7 '
     '(16 weeks) or None.'),
    ('policy_layers', (1,) * 100,
     'policy_layers=(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, '
     '1, 1, 1, 1, 1, 1, 1, 1... must be a list of 1 to 64 layer sizes '
     'from 1 to 65536, with at most 2^27 = 134217728 weights between the '
     'layers.'),
    # The networks' choices.
    ('weight_init', 'he',
     "weight_init='he' must be one of ('glorot', 'orthogonal')."),
    ('mean_activation', 'relu',
     "mean_activation='relu' must be one of ('tanh', None)."),
])
def test_invalid_value_names_the_key_the_value_and_what_is_expected(
        key, value, message):
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.complete_config(_pendulum(**{key: value}))
    assert str(error.value) == 'Config ' + message


def test_worker_timeout_and_eval_every_take_what_the_docs_say():
    """Any positive number of seconds; any eval_every from 1 to steps."""
    config = config_spec.complete_config(
        _pendulum(worker_timeout=2.5, eval_every=1))
    assert (config.worker_timeout, config.eval_every) == (2.5, 1)


@pytest.mark.parametrize('setting, message', [
    ('num_agents=.inf',
     'num_agents=inf must be an integer from 1 to max_agents=1024.'),
    ('num_agents=1e400',
     'num_agents=inf must be an integer from 1 to max_agents=1024.'),
    ('max_length=.inf',
     'max_length=inf must be an integer from 1 to 2097152 or None.'),
    ('num_agents=2.5',
     'num_agents=2.5 must be an integer from 1 to max_agents=1024.'),
])
def test_infinite_or_fractional_counts_name_the_key(setting, message):
    config = tools.AttrDict(configs.pendulum())
    config_overrides.apply_overrides(config, [setting])
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.check_config(config)
    assert str(error.value) == 'Config ' + message


class _Raises(Exception):
    pass


@pytest.mark.parametrize('spec, raised', [
    ('{path}:broken', 'RuntimeError: broken.'),
    ('os.path:join', "TypeError: join() missing 1 required positional "
     "argument: 'a'."),
])
def test_config_function_that_raises_is_one_line(tmp_path, spec, raised):
    path = tmp_path / 'config_spec_test_raising.py'
    path.write_text(
        'def broken():\n    raise RuntimeError("broken\\nsecond line")\n')
    spec = spec.format(path=path)
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.load_config_spec(spec)
    assert str(error.value) == f"Config function '{spec}' raised {raised}"


def test_env_constructor_that_raises_is_one_line():
    def make():
        raise _Raises('no simulator here')
    with pytest.raises(config_io.ConfigError) as error:
        config_spec.complete_config(_pendulum(env=make))
    assert str(error.value) == (
        "Config env 'agents.training.config_spec_test:"
        "test_env_constructor_that_raises_is_one_line.<locals>.make' cannot "
        'be built: _Raises: no simulator here.')


def test_max_agents_raises_the_limit_and_other_keys_are_left_alone():
    config = config_spec.complete_config(_pendulum(
        num_agents=2000, max_agents=4096, my_own_key=float('nan')))
    assert config.num_agents == 2000
    config_spec.check_config(_pendulum(kl_penalty=False, ppo_clip=0.2))
