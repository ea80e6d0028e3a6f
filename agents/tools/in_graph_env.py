"""A single environment stepped by graph operations."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import forwarding
from agents.tools import temporary_scope
from agents.tools import compiled_ops


class GraphModeError(RuntimeError):
    """Graph-building code was called in eager mode or under TF1 behaviour."""


def require_graph_mode(what):
    """Raise a `GraphModeError` naming `what` unless graphs build with TF2
    semantics (not eagerly, nor with TF1 variables or control flow)."""
    if tf.executing_eagerly():
        raise GraphModeError(
            f'{what} builds TensorFlow graph ops and needs graph mode, but '
            'TensorFlow is executing eagerly; call '
            'tf.compat.v1.disable_eager_execution() at the start of the '
            'script, or build inside `with tf.Graph().as_default():`.')
    if not (tf.resource_variables_enabled() and
            tf.control_flow_v2_enabled()):
        raise GraphModeError(
            f'{what} needs resource variables and TF2 control flow, which '
            'tf.compat.v1.disable_v2_behavior() switched off; call '
            'tf.compat.v1.disable_eager_execution() alone instead, or '
            'tf.compat.v1.enable_resource_variables() and '
            'tf.compat.v1.enable_control_flow_v2() after it.')


class InGraphEnvBase(forwarding.Forwarding):
    """The variables of in-graph envs and batches (`_wrapped`: the rest)."""

    observ = forwarding.read_only('observ', 'Variable of the observation.')
    action = forwarding.read_only('action', 'Variable of the last action.')
    reward = forwarding.read_only('reward', 'float32 variable of the reward.')
    done = forwarding.read_only(
            'done', 'Bool variable: whether the episode ended (or restarted).')
    truncated = forwarding.read_only(
            'truncated', 'Bool variable: whether the episode was truncated, '
            'not terminated (an algorithm may bootstrap then).')

    def _define_variables(self, name, batch):
        """Define the variables `batch + ...`; their scope `env_temporary`."""
        # pylint: disable=attribute-defined-outside-init
        require_graph_mode(name)
        observ_shape, self._observ_dtype = parse_space(
                self.observation_space, 'observation')
        action_shape, action_dtype = parse_space(self.action_space, 'action')
        with temporary_scope.temporary_scope('env') as scope:
            self._observ = define_variable(
                'observ', batch + observ_shape, self._observ_dtype)
            self._action = define_variable(
                'action', batch + action_shape, action_dtype)
            self._reward = define_variable('reward', batch, tf.float32)
            self._done = define_variable('done', batch, tf.bool, True)
            self._truncated = define_variable('truncated', batch, tf.bool)
        return scope

    def _assign_step(self, observ, reward, assignments):
        """The op assigning a step, which assigns nothing on NaN or Inf."""
        observ = compiled_ops.check_numerics(observ, 'observ')
        reward = compiled_ops.check_numerics(reward, 'reward')
        pairs = [(self._observ, observ), (self._reward, reward)] + assignments
        with tf.control_dependencies([observ, reward]):  # All checks passed.
            return tf.group(*[
                    variable.assign(value) for variable, value in pairs])


class InGraphEnv(InGraphEnvBase):
    """Environment whose current state lives in graph variables.

    The variables hold the last step, in the scope `env_temporary` that
    checkpoints leave out; `done` starts true, so that the first step
    resets. A ValueError for spaces other than Box and Discrete; a
    `GraphModeError` outside TF2 graph mode.
    """

    def __init__(self, env):
        self._env = env
        self._discrete = isinstance(env.action_space, gym.spaces.Discrete)
        self._define_variables('InGraphEnv', ())

    _wrapped = forwarding.read_only('env', 'The environment.')

    def simulate(self, action):
        """The op that steps the environment with an action tensor (as for
        `prepare_action`) and assigns the variables; fails on NaN or Inf."""
        with tf.name_scope('environment_simulate'):
            action = prepare_action(action, self._action)
            observ, reward, done, truncated = tf.numpy_function(
                    self._step, [action],
                    [self._observ_dtype, tf.float32, tf.bool, tf.bool],
                    name='step')
            observ.set_shape(self._observ.shape)
            for scalar in (reward, done, truncated):
                scalar.set_shape(())
            return self._assign_step(observ, reward, [
                    (self._action, action), (self._done, done),
                    (self._truncated, truncated)])

    def reset(self):
        """Reset: the first observation, once assigned; fails on NaN or Inf."""
        with tf.name_scope('environment_reset'):
            observ = tf.numpy_function(
                    self._reset, [], self._observ_dtype, name='reset')
            observ.set_shape(self._observ.shape)
            assign = self._assign_step(observ, tf.constant(0.0), [
                    (self._done, False), (self._truncated, False)])
            with tf.control_dependencies([assign]):
                return tf.identity(observ)

    def _step(self, action):
        """Step the environment; observation, reward, done, truncated."""
        if self._discrete:
            # Environments may use discrete actions as keys or indices.
            action = int(action)
        observ, reward, terminated, truncated, _ = self._env.step(action)
        return (np.asarray(observ, self._observ_dtype.as_numpy_dtype),
                np.float32(reward), np.bool_(terminated or truncated),
                np.bool_(truncated and not terminated))

    def _reset(self):
        """Reset the environment; its first observation."""
        observ, _ = self._env.reset()
        return np.asarray(observ, self._observ_dtype.as_numpy_dtype)


def parse_space(space, name):
    """The shape and dtype of tensors of a Box or Discrete space."""
    if isinstance(space, gym.spaces.Box):
        return tuple(space.shape), tf.as_dtype(space.dtype)
    if isinstance(space, gym.spaces.Discrete):
        return (), tf.int32
    raise ValueError(
            f'Unsupported {name} space {space!r}; supported spaces: '
            'gymnasium.spaces.Box, gymnasium.spaces.Discrete.')


def define_variable(name, shape, dtype, ones=False):
    """A non-trainable variable of zeros, or of ones (true)."""
    fill = tf.ones if ones else tf.zeros
    return tf.Variable(lambda: fill(shape, dtype), trainable=False, name=name)


def prepare_action(action, variable, check_numerics=True):
    """An action tensor (of any width of its kind) cast to the dtype and
    shape of the action variable, with `check_numerics` failing on NaN or
    Inf; a TypeError for another kind, a ValueError for another shape."""
    action = tf.convert_to_tensor(action)
    dtype = variable.dtype.base_dtype
    if action.dtype != dtype:
        if not (action.dtype.is_integer and dtype.is_integer or
                action.dtype.is_floating and dtype.is_floating):
            raise TypeError(
                    f'Expected actions of dtype {dtype.name} but got '
                    f'{action.dtype.name}.')
        action = tf.cast(action, dtype)
    if not action.shape.is_compatible_with(variable.shape):
        raise ValueError(
                f'Expected actions of shape {variable.shape} but got '
                f'{action.shape}.')
    action.set_shape(variable.shape)
    if check_numerics:
        action = compiled_ops.check_numerics(action, 'action')
    return action
