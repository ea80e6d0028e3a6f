"""A run's policy: its folder's config and checkpoint, and the `tf.Module`
that maps raw observations to env actions (RangeNormalize's map, PPO's
observation normalizer, the network, ClipAction and the map back)."""

import functools
import json
import os

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents import parts
from agents.environments import env_construction
from agents.tools import space_wrappers
from agents.training import checkpoints
from agents.training import config_io
from agents.training import config_spec
from agents.training import errors
from agents.training import member_checkpoint

# PPO's observation normalizer, as `agents.algorithms.ppo` creates it.
_OBSERV_FILTER = dict(center=True, scale=True, clip=5, name='normalize_observ')


class ExportError(Exception):
    """A run folder, checkpoint, output folder or format that cannot export."""


def load_run(logdir, checkpoint=None, error=ExportError):
    """A run folder's config, completed with the defaults as training
    completes it, and the path prefix of `checkpoint` (a name in `logdir`,
    `model.ckpt-4000`, or a path; None: the newest); `error`: the exception
    class raised where the run cannot be used."""
    if not os.path.exists(logdir):
        raise error(f'Run folder {logdir} does not exist.')
    if not os.path.isdir(logdir):
        raise error(f'Run folder {logdir} is not a directory.')
    try:
        config = config_io.load_config(logdir)
    except config_io.ConfigError as cause:
        raise error(
            f'{errors.error_line(cause)} Expected a run folder written by '
            'agents.scripts.train.') from cause
    for key in ('env', 'algorithm'):
        if key not in config:
            raise error(f"The config.yaml of {logdir} has no '{key}'.")
    if isinstance(config.env, str):
        try:
            env_construction.check_env_id(config.env)
        except config_io.ConfigError as cause:
            raise error(str(cause)) from cause
    available = checkpoints.list_checkpoints(logdir)
    path = available[0] if available else None
    if checkpoint is not None:
        path = os.path.join(logdir, os.path.expanduser(checkpoint))
        if not os.path.exists(path + '.index'):
            names = ', '.join(os.path.basename(name) for name in available)
            raise error(
                f"No checkpoint '{checkpoint}' in {logdir}; available: "
                f"{names or 'none'}.")
    elif not available:
        raise error(
            f'Run folder {logdir} has no checkpoint yet; train until the '
            'first one is written.')
    return config_spec.with_defaults(config), path


def build_policy(config, checkpoint, stochastic=False, member=None):
    """The `PolicyModule` of a run configuration and checkpoint (of a
    population's: of `member`, see `member_checkpoint.find_member`), or an
    ExportError when the environment, the checkpoint or the member does not
    fit."""
    try:
        env = env_construction.create_environment(config, batch_wrappers=True)
    except config_io.ConfigError as error:
        raise ExportError(str(error)) from error
    env.close()
    try:
        reader = tf.train.load_checkpoint(checkpoint)
    except (tf.errors.OpError, ValueError) as error:
        raise ExportError(
            f'Cannot read checkpoint {checkpoint}: '
            f'{errors.error_line(error)}') from error
    shapes = reader.get_variable_to_shape_map()
    index, member = member_checkpoint.find_member(
        checkpoint, member, ExportError)

    def value(name, shape):
        mismatch = f'Checkpoint {checkpoint} does not match config.yaml: '
        if name not in shapes:
            raise ExportError(
                f'{mismatch}it has no variable {name}, which the configured '
                'network needs.')
        expected = tf.TensorShape(shape)
        saved = shapes[name]
        if index is not None and len(saved) == expected.ndims + 1:
            saved = saved[1:]  # The members' stack.
        if not expected.is_compatible_with(saved):
            raise ExportError(
                f'{mismatch}variable {name} has shape {list(shapes[name])}, '
                f'the configured network expects {expected.as_list()}.')
        return member_checkpoint.member_value(reader, name, shape, index)

    return PolicyModule(
        config, env.observation_space, env.action_space, value, stochastic,
        member)


class PolicyModule(tf.Module):
    """A policy's forward pass from raw observations to env actions, of the
    environment's own Box `observation_space` and Box or Discrete
    `action_space`: the run's network function, whose variables a custom
    getter makes of the values `value(name, shape)` returns; `stochastic`
    samples actions (an ExportError unless the policy is a DiagonalGaussian
    or Categorical)."""

    def __init__(
            self, config, observation_space, action_space, value,
            stochastic=False, member=None):
        super().__init__(name='policy')
        # The population's member whose policy it is (None: a single run).
        self.member = member
        # A partial, not the config: a module wraps dicts for tracking.
        self._network_fn = functools.partial(config.network, config)
        self._stochastic = bool(stochastic)
        self._observ_shape = tuple(
            int(size) for size in observation_space.shape)
        self._discrete = isinstance(action_space, gym.spaces.Discrete)
        # The maps of training's RangeNormalize, and ClipAction's bounds in
        # the normalised space.
        switch = None if config.normalize_ranges else False
        self._observ_scale, self._action_scale, _, clip_space = (
            space_wrappers.range_scales(
                observation_space, action_space, switch, switch))
        self._action_dtype = tf.int64 if self._discrete else tf.as_dtype(
            action_space.dtype)
        # ClipAction's space, which the training graph's network saw.
        self._network_space = action_space
        if not self._discrete:
            self._clip = tuple(
                bound.astype(action_space.dtype)
                for bound in (clip_space.low, clip_space.high))
            self._network_space = gym.spaces.Box(
                -np.inf, np.inf, action_space.shape, action_space.dtype)
        self._value = value
        self._variables_by_name = {}
        # The first pass creates the variables; it runs eagerly.
        output = self._network(
            tf.zeros((1,) + self._observ_shape, tf.float32), None)
        self.weights = [
            self._variables_by_name[name]
            for name in sorted(self._variables_by_name)]
        self._value = None
        self._state_sizes = None
        if output.state is not None:
            self._state_sizes = [
                int(state.shape[-1])
                for state in tf.nest.flatten(output.state)]
            self._state_structure = tf.nest.map_structure(
                lambda unused_state: 0, output.state)
        if self._stochastic and not isinstance(
                output.policy, (parts.DiagonalGaussian, parts.Categorical)):
            raise ExportError(
                f'--stochastic supports the policies DiagonalGaussian and '
                f'Categorical, the network returns a '
                f'{type(output.policy).__name__}.')
        self._define_functions()
        # A string: a module would wrap a dict attribute for tracking.
        self._metadata = json.dumps(dict(
            env=describe(config.env),
            # Whether `env` is the import path of a constructor, not an id.
            env_constructor=not isinstance(config.env, str),
            max_length=config.max_length,
            config_function=config.get(config_io.SOURCE_KEY),
            network=describe(config.network),
            stochastic=self._stochastic,
            recurrent=self.recurrent,
            discrete=self._discrete,
            observ_shape=list(self._observ_shape),
            action_shape=list(action_space.shape),
            action_dtype=self._action_dtype.name,
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

    def signatures(self):
        """The signatures to save: name -> concrete function."""
        inputs = self.serving_inputs()
        result = {
            'serving_default': self._serve.get_concrete_function(*inputs)}
        if self.recurrent:
            result['initial_state'] = (
                self._serve_initial_state.get_concrete_function(
                    tf.TensorSpec([], tf.int32, name='batch_size')))
        if self._stochastic:
            result['seeded'] = self._serve.get_concrete_function(
                *inputs, tf.TensorSpec([], tf.int64, name='seed'))
        return result

    def _define_functions(self):
        """Trace `action` (and `initial_state`); define the servings."""
        if self.recurrent:

            def action(observ, state, seed=None):
                return self._act(observ, state, seed)

            def serve(observ, state, seed=None):
                return dict(zip(('action', 'state'), action(
                    observ, state, seed)))

            def initial_state(batch_size):
                return tf.zeros(
                    [batch_size, sum(self._state_sizes)], tf.float32,
                    name='initial_state')

            self.initial_state = tf.function(initial_state, autograph=False)
            self.initial_state.get_concrete_function(
                tf.TensorSpec([], tf.int32))
            self._serve_initial_state = tf.function(
                lambda batch_size: {'state': initial_state(batch_size)},
                autograph=False)
        else:

            def action(observ, seed=None):
                return self._act(observ, None, seed)[0]

            def serve(observ, seed=None):
                return {'action': action(observ, seed)}

        self.action = tf.function(action, autograph=False)
        self._serve = tf.function(serve, autograph=False)
        inputs = self.serving_inputs()
        self.action.get_concrete_function(*inputs)
        if self._stochastic:
            self.action.get_concrete_function(
                *inputs, tf.TensorSpec([], tf.int64))

    def _act(self, observ, state, seed):
        """Action (and state) for a batch of raw observations."""
        observ = tf.convert_to_tensor(observ, tf.float32)
        nested_state = None
        if state is not None:
            nested_state = tf.nest.pack_sequence_as(
                self._state_structure,
                tf.split(state, self._state_sizes, axis=-1))
        output = self._network(observ, nested_state)
        if not self._stochastic:
            action = output.policy.mode()
        elif seed is None:
            action = output.policy.sample()
        else:
            # Stateless ops keyed by the seed, as training's keyed samples.
            action = output.policy.sample(key=tf.stack(
                [tf.cast(seed, tf.int64), tf.constant(0, tf.int64)]))
        action = self._to_env_action(action[:, 0])
        if state is None:
            return action, None
        return action, tf.concat(
            tf.nest.flatten(output.state), -1, name='next_state')

    def _network(self, observ, state):
        """Run the configured network on a batch of raw observations."""
        scale = self._observ_scale
        if scale is not None:
            observ = tf.cast(observ, scale.center.dtype)
            observ = tf.cast(
                (observ - scale.center) / scale.half_range, tf.float32)
        with tf.compat.v1.variable_scope(
                '', custom_getter=self._variable, auxiliary_name_scope=False):
            observ_filter = parts.StreamingNormalize(
                observ[0], **_OBSERV_FILTER)
            observ = observ_filter.transform(observ)
            # PPO's scope of the network.
            with tf.compat.v1.variable_scope('network'):
                return self._network_fn(
                    self._network_space, observ[:, None],
                    tf.ones(tf.shape(observ)[:1], tf.int32), state)

    def _variable(self, *unused_args, **kwargs):
        """Custom getter: a variable of the checkpoint's value, made once."""
        name = kwargs['name']
        if name not in self._variables_by_name:
            self._variables_by_name[name] = tf.Variable(
                self._value(name, kwargs.get('shape')), trainable=False,
                name=name.replace('/', '.'))
        return self._variables_by_name[name]

    def _to_env_action(self, action):
        """Clip and map a network action into the environment's space."""
        action = tf.cast(action, self._action_dtype)
        if self._discrete:
            return tf.identity(action, name='env_action')
        action = tf.minimum(tf.maximum(action, self._clip[0]), self._clip[1])
        if self._action_scale is not None:
            action = (action * self._action_scale.half_range
                      + self._action_scale.center)
        return tf.identity(action, name='env_action')


def describe(value):
    """An env id as it is, a callable as its import path, else its repr."""
    if isinstance(value, str):
        return value
    try:
        return config_io.callable_path(value)
    except config_io.ConfigError:
        return repr(value)
