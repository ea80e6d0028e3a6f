"""The exported policy: a `tf.Module` from raw observations to env actions.

The forward pass: RangeNormalize's map, PPO's observation normalizer, the
run's network, the mode or a sample, ClipAction and the map back.
"""

import functools
import json

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents import parts
from agents.tools import space_wrappers
from agents.training import config_io
from agents.training import config_spec

# PPO's observation normalizer: its variable scope and its arguments, as
# `agents.algorithms.ppo.PPO` creates it.
_OBSERV_FILTER = dict(center=True, scale=True, clip=5,
                      name='normalize_observ')
# The variable scope of the network template in PPO.
_NETWORK_SCOPE = 'network'


class ExportError(Exception):
    """A run folder, checkpoint, output folder or format that cannot export."""


class PolicyModule(tf.Module):
    """A policy's forward pass from raw observations to env actions.

    The functions trace the run's network function, whose variable requests
    a custom getter answers with `tf.Variable`s of the checkpoint's values,
    so the numbers are the training graph's.

    Args:
      config: Run configuration.
      observation_space: The environment's own Box observation space.
      action_space: The environment's own Box or Discrete action space.
      values: Object with `get(name, shape)` returning a variable's value.
      stochastic: Whether to sample actions.

    Raises:
      ExportError: When a variable is missing or has another shape, or
          seeded sampling meets an unknown distribution.
    """

    def __init__(
            self, config, observation_space, action_space, values,
            stochastic=False):
        super().__init__(name='policy')
        config = config_spec.with_defaults(config)
        # A partial, not the config: a module wraps dict attributes for
        # tracking.
        self._network_fn = functools.partial(config.network, config)
        self._stochastic = bool(stochastic)
        self._observ_shape = tuple(int(size) for size in
                                   observation_space.shape)
        self._discrete = isinstance(action_space, gym.spaces.Discrete)
        normalize = bool(config.normalize_ranges)
        self._observ_map, self._action_map = _range_maps(
            observation_space, action_space, normalize)
        if self._discrete:
            self._network_space = action_space
        else:
            # ClipAction's space, which the training graph's network saw.
            self._network_space = gym.spaces.Box(
                -np.inf, np.inf, action_space.shape, action_space.dtype)
        self._values = values
        self._variables_by_name = {}
        observ = tf.zeros((1,) + self._observ_shape, tf.float32)
        # The first pass creates the variables; it runs eagerly.
        output = self._network(observ, None, creating=True)
        self.weights = [
            self._variables_by_name[name]
            for name in sorted(self._variables_by_name)]
        self._values = None
        self._state_sizes = None
        if output.state is not None:
            self._state_sizes = [
                int(state.shape[-1])
                for state in tf.nest.flatten(output.state)]
            self._state_structure = tf.nest.map_structure(
                lambda unused_state: 0, output.state)
        if self._stochastic:
            self._check_distribution(output.policy)
        self._define_functions()
        # A JSON string: a module would wrap a dict attribute for tracking.
        self._metadata = json.dumps(dict(
            env=describe_env(config.env),
            # Whether `env` is the import path of a constructor, not an id.
            env_constructor=not isinstance(config.env, str),
            max_length=config.max_length,
            config_function=config.get(config_io.SOURCE_KEY),
            network=describe_callable(config.network),
            stochastic=self._stochastic,
            recurrent=self.recurrent,
            discrete=self._discrete,
            observ_shape=list(self._observ_shape),
            action_shape=list(action_space.shape),
            action_dtype=self._action_dtype().name,
            state_size=sum(self._state_sizes or []) or None,
            weights=int(sum(np.prod(variable.shape)
                            for variable in self.weights))))

    @property
    def metadata(self):
        """Dict describing the policy: env, layout, number of weights."""
        return json.loads(self._metadata)

    @property
    def recurrent(self):
        """Whether the policy carries a state from step to step."""
        return self._state_sizes is not None

    def serving_inputs(self):
        """TensorSpecs of the inputs of `serving_default`, in order."""
        inputs = [tf.TensorSpec(
            (None,) + self._observ_shape, tf.float32, name='observ')]
        if self.recurrent:
            inputs.append(tf.TensorSpec(
                [None, sum(self._state_sizes)], tf.float32, name='state'))
        return inputs

    def serving_function(self):
        """The `tf.function` of `serving_default`, returning a dict."""
        return self._serve

    def signatures(self):
        """The signatures to save: name -> concrete function."""
        inputs = self.serving_inputs()
        result = {}
        if self.recurrent:
            result['initial_state'] = (
                self._serve_initial_state.get_concrete_function(
                    tf.TensorSpec([], tf.int32, name='batch_size')))
        result['serving_default'] = self._serve.get_concrete_function(
            *inputs)
        if self._stochastic:
            result['seeded'] = self._serve_seeded.get_concrete_function(
                *inputs, tf.TensorSpec([], tf.int64, name='seed'))
        return result

    def _define_functions(self):
        """Trace the functions that the SavedModel keeps."""
        inputs = [tf.TensorSpec((None,) + self._observ_shape, tf.float32)]
        if self.recurrent:
            inputs.append(tf.TensorSpec(
                [None, sum(self._state_sizes)], tf.float32))

            def action(observ, state, seed=None):
                return self._act(observ, state, seed)

            def serve(observ, state, seed=None):
                action_, state = self._act(observ, state, seed)
                return {'action': action_, 'state': state}

            def initial_state(batch_size):
                return tf.zeros(
                    [batch_size, sum(self._state_sizes)], tf.float32,
                    name='initial_state')

            def serve_initial_state(batch_size):
                return {'state': initial_state(batch_size)}

            self.initial_state = tf.function(initial_state, autograph=False)
            self.initial_state.get_concrete_function(
                tf.TensorSpec([], tf.int32))
            self._serve_initial_state = tf.function(
                serve_initial_state, autograph=False)
        else:

            def action(observ, seed=None):
                return self._act(observ, None, seed)[0]

            def serve(observ, seed=None):
                return {'action': action(observ, seed)}

        self.action = tf.function(action, autograph=False)
        self.action.get_concrete_function(*inputs)
        self._serve = tf.function(serve, autograph=False)
        if self._stochastic:
            self.action.get_concrete_function(
                *inputs, tf.TensorSpec([], tf.int64))
            self._serve_seeded = tf.function(serve, autograph=False)

    def _act(self, observ, state, seed):
        """Action (and state) for a batch of raw observations."""
        observ = tf.convert_to_tensor(observ, tf.float32)
        nested_state = None
        if state is not None:
            parts_ = tf.split(state, self._state_sizes, axis=-1)
            nested_state = tf.nest.pack_sequence_as(
                self._state_structure, parts_)
        output = self._network(observ, nested_state)
        if not self._stochastic:
            action = output.policy.mode()
        elif seed is None:
            action = output.policy.sample()
        else:
            action = self._seeded_sample(output.policy, seed)
        action = self._to_env_action(action[:, 0])
        if state is None:
            return action, None
        state = tf.concat(tf.nest.flatten(output.state), -1, name='next_state')
        return action, state

    def _network(self, observ, state, creating=False):
        """Run the configured network on a batch of raw observations."""
        if self._observ_map is not None:
            dtype, center, half_range = self._observ_map
            observ = tf.cast(observ, dtype)
            observ = tf.cast((observ - center) / half_range, tf.float32)
        getter = self._create_variable if creating else self._lookup_variable
        with tf.compat.v1.variable_scope(
                '', custom_getter=getter, auxiliary_name_scope=False):
            observ_filter = parts.StreamingNormalize(
                observ[0], **_OBSERV_FILTER)
            observ = observ_filter.transform(observ)
            with tf.compat.v1.variable_scope(_NETWORK_SCOPE):
                return self._network_fn(
                    self._network_space, observ[:, None],
                    tf.ones(tf.shape(observ)[:1], tf.int32), state)

    def _create_variable(self, *unused_args, **kwargs):
        """Custom getter: a variable of the checkpoint's value."""
        name = kwargs['name']
        if name not in self._variables_by_name:
            value = self._values.get(name, kwargs.get('shape'))
            self._variables_by_name[name] = tf.Variable(
                value, trainable=False, name=name.replace('/', '.'))
        return self._variables_by_name[name]

    def _lookup_variable(self, *unused_args, **kwargs):
        """Custom getter: the variable created before."""
        return self._variables_by_name[kwargs['name']]

    def _to_env_action(self, action):
        """Clip and map a network action into the environment's space."""
        if self._discrete:
            return tf.cast(action, tf.int64, name='env_action')
        dtype, low, high, center, half_range = self._action_map
        action = tf.cast(action, dtype)
        action = tf.minimum(tf.maximum(action, low), high)
        return tf.identity(action * half_range + center, name='env_action')

    def _action_dtype(self):
        if self._discrete:
            return tf.int64
        return tf.as_dtype(self._action_map[0])

    @staticmethod
    def _check_distribution(policy):
        if not isinstance(policy, (parts.DiagonalGaussian, parts.Categorical)):
            raise ExportError(
                f'--stochastic supports the policies DiagonalGaussian and '
                f'Categorical, the network returns a '
                f'{type(policy).__name__}.')

    @staticmethod
    def _seeded_sample(policy, seed):
        """A sample drawn with stateless random ops keyed by `seed`."""
        key = tf.stack([tf.cast(seed, tf.int64), tf.constant(0, tf.int64)])
        if isinstance(policy, parts.DiagonalGaussian):
            noise = tf.random.stateless_normal(
                tf.shape(policy.mean), key, dtype=policy.mean.dtype)
            return policy.mean + policy.std * noise
        logits = policy.logits
        num_classes = tf.shape(logits)[-1]
        flat = tf.random.stateless_categorical(
            tf.reshape(logits, [-1, num_classes]), 1, key, dtype=tf.int32)
        return tf.reshape(flat, tf.shape(logits)[:-1])


def _range_maps(observation_space, action_space, normalize):
    """The affine maps of the env wrappers as constants.

    Those of `tools.space_wrappers.range_scales`, as training's
    `RangeNormalize` maps. Returns `(dtype, center, half_range)` for
    observations and `(dtype, low, high, center, half_range)` for Box
    actions (ClipAction's bounds in the normalised space, then the map
    back), each or None.
    """
    switch = None if normalize else False
    observ_scale, action_scale, _, clip_space = space_wrappers.range_scales(
        observation_space, action_space, switch, switch)
    observ_map = None
    if observ_scale is not None:
        observ_map = (
            observ_scale.center.dtype, observ_scale.center,
            observ_scale.half_range)
    if not isinstance(action_space, gym.spaces.Box):
        return observ_map, None
    dtype = action_space.dtype
    if action_scale is not None:
        center, half_range = action_scale.center, action_scale.half_range
    else:
        center = np.zeros(action_space.shape, dtype)
        half_range = np.ones(action_space.shape, dtype)
    return observ_map, (
        dtype, clip_space.low.astype(dtype), clip_space.high.astype(dtype),
        center, half_range)


def describe_env(env):
    """An env id as it is, a constructor as its import path."""
    if isinstance(env, str):
        return env
    return describe_callable(env)


def describe_callable(value):
    """The import path of a function, or its repr when it has none."""
    try:
        return config_io.callable_path(value)
    except config_io.ConfigError:
        return repr(value)
