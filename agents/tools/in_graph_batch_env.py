"""A batch of environments stepped by graph operations."""

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import in_graph_env


class InGraphBatchEnv(in_graph_env.InGraphEnvBase):
    """Batch of environments whose current state lives in graph variables.

    The variables `observ`, `action`, `reward`, `done`, `truncated` and
    `restarted` hold the outcome of the last step of every environment of the
    batch, along their first axis; they live in the variable scope
    `env_temporary` so that checkpoints leave them out. `done` starts true
    everywhere, so that the first simulation step resets every environment.
    Attributes the class does not define are read from the wrapped batch.

    An error that the batch raises in a step or reset fails the operation;
    the original exception stays available as `error`, since TensorFlow
    turns it into text.
    """

    def __init__(self, batch_env):
        """Create the variables for a batch of environments.

        Args:
            batch_env: Batch of environments like `tools.BatchEnv`, with a Box
                or Discrete observation and action space.

        Raises:
            ValueError: When a space is neither Box nor Discrete.
        """
        self._batch_env = batch_env
        self._error = None
        batch = (len(batch_env),)
        observ_shape, self._observ_dtype = in_graph_env._parse_space(
                batch_env.observation_space, 'observation')
        action_shape, action_dtype = in_graph_env._parse_space(
                batch_env.action_space, 'action')
        with tf.variable_scope('env_temporary'):
            self._observ = in_graph_env._define_variable(
                    'observ', batch + observ_shape, self._observ_dtype)
            self._action = in_graph_env._define_variable(
                    'action', batch + action_shape, action_dtype)
            self._reward = in_graph_env._define_variable(
                    'reward', batch, tf.float32)
            self._done = in_graph_env._define_variable(
                    'done', batch, tf.bool, ones=True)
            self._truncated = in_graph_env._define_variable(
                    'truncated', batch, tf.bool)
            self._restarted = in_graph_env._define_variable(
                    'restarted', batch, tf.bool)
            # Read from the batch by the step and reset ops, so that no op
            # of its own calls into Python on every step.
            self._restarts = in_graph_env._define_variable(
                    'restarts', (), tf.int64)

    @property
    def _wrapped(self):
        return self._batch_env

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._batch_env)

    def __getitem__(self, index):
        """Access an environment of the batch by its index."""
        return self._batch_env[index]

    @property
    def restarted(self):
        """Variable telling which environments failed in the last step.

        True where the batch replaced a failed environment by a fresh one,
        whose first observation is now in `observ`; the episode that ran
        there ended without a result and should be dropped, not scored.
        """
        return self._restarted

    @property
    def restarts(self):
        """Int64 variable of the environments replaced after failures so far.

        As of the last step or reset; zero for batches that do not restart
        environments.
        """
        return self._restarts

    @property
    def error(self):
        """The exception of the batch that failed the last step or reset.

        None when the last step or reset succeeded or failed in the graph,
        for example on NaN values.
        """
        return self._error

    def simulate(self, action):
        """Step the batch and store the outcomes in the variables.

        Args:
            action: Tensor of one action per environment, of the action
                variable's shape; its dtype may differ in width but not in
                kind (integer or floating point).

        Raises:
            TypeError: When the action's dtype kind does not match.
            ValueError: When the action's shape does not match.

        Returns:
            Operation that steps and assigns; running it fails when the
            actions, observations or rewards hold NaN or Inf.
        """
        with tf.name_scope('environment_simulate'):
            action = in_graph_env._prepare_action(action, self._action)
            # One Python call per step returns everything the variables need.
            observ, reward, done, truncated, restarted, restarts = (
                    tf.numpy_function(
                            self._step, [action],
                            [self._observ_dtype, tf.float32, tf.bool, tf.bool,
                             tf.bool, tf.int64],
                            name='step'))
            observ.set_shape(self._observ.shape)
            reward.set_shape(self._reward.shape)
            done.set_shape(self._done.shape)
            truncated.set_shape(self._truncated.shape)
            restarted.set_shape(self._restarted.shape)
            observ = in_graph_env._check_numerics(observ, 'observ')
            reward = tf.debugging.check_numerics(reward, 'reward')
            # Assign nothing unless every check passed, so that the variables
            # keep a consistent step.
            with tf.control_dependencies([observ, reward]):
                return tf.group(
                        self._observ.assign(observ),
                        self._action.assign(action),
                        self._reward.assign(reward),
                        self._done.assign(done),
                        self._truncated.assign(truncated),
                        self._restarted.assign(restarted),
                        self._restarts.assign(tf.reshape(restarts, ())))

    def reset(self, indices=None):
        """Reset some or all environments and store their observations.

        Args:
            indices: 1-D integer tensor of the environments to reset; None
                resets all.

        Returns:
            Tensor of the first observations of those environments, available
            once the variables were updated; running it fails when an
            observation holds NaN or Inf.
        """
        with tf.name_scope('environment_reset'):
            if indices is None:
                indices = tf.range(len(self._batch_env))
            indices = tf.cast(indices, tf.int32)
            indices.set_shape((None,))
            observ, restarts = tf.numpy_function(
                    self._reset, [indices], [self._observ_dtype, tf.int64],
                    name='reset')
            observ.set_shape(indices.shape.concatenate(
                    self._observ.shape[1:]))
            observ = in_graph_env._check_numerics(observ, 'observ')
            zeros = tf.zeros_like(indices, tf.float32)
            falses = tf.zeros_like(indices, tf.bool)
            with tf.control_dependencies([
                    tf.scatter_update(self._observ, indices, observ),
                    tf.scatter_update(self._reward, indices, zeros),
                    tf.scatter_update(self._done, indices, falses),
                    tf.scatter_update(self._truncated, indices, falses),
                    tf.scatter_update(self._restarted, indices, falses),
                    self._restarts.assign(tf.reshape(restarts, ()))]):
                return tf.identity(observ)

    def close(self):
        """Close the environments of the batch."""
        self._batch_env.close()

    def _step(self, action):
        self._error = None
        try:
            observ, reward, done, info = self._batch_env.step(action)
        except Exception as error:
            self._error = error
            raise
        # Terminated episodes are not bootstrapped, even if also truncated.
        truncated = np.logical_and(
                info['truncated'], np.logical_not(info['terminated']))
        restarted = np.zeros_like(done, bool)
        if 'restarted' in info:
            restarted = np.asarray(info['restarted'], bool)
        return (
                np.asarray(observ, self._observ_dtype.as_numpy_dtype),
                np.asarray(reward, np.float32),
                np.logical_or(done, restarted),
                truncated,
                restarted,
                self._count_restarts())

    def _reset(self, indices):
        self._error = None
        try:
            observ = self._batch_env.reset(indices)
        except Exception as error:
            self._error = error
            raise
        return (np.asarray(observ, self._observ_dtype.as_numpy_dtype),
                self._count_restarts())

    def _count_restarts(self):
        return np.int64(getattr(self._batch_env, 'restarts', 0))
