"""A batch of environments stepped by graph operations."""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import env_state
from agents.tools import in_graph_env
from agents.tools import resume_state
from agents.tools import temporary_scope

# What a step or reset of environments returns, a row per environment: the
# observations, float32 rewards, bool flags `done` (terminated, truncated
# or restarted), `truncated` (without terminating) and `restarted` (a failed
# environment was replaced), and the int64 scalar count of restarts so far.
Outcome = collections.namedtuple(
        'Outcome', 'observ, reward, done, truncated, restarted, restarts')


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

    For an exact resumption, the trainer's checkpoints keep the variables
    and the state of the environments, which the batch reads and sets with
    `get_env_state` and `set_env_state` (of `tools.BatchEnv`, see
    `tools.env_state`) through a string variable (see
    `tools.resume_state.on_save`). A batch without that state (environments
    in other processes, EnvPool's) resumes with all episodes begun anew.
    """

    def __init__(self, batch_env):
        """Create the variables for a batch of environments.

        Args:
            batch_env: Batch of environments like `tools.BatchEnv`, with a Box
                or Discrete observation and action space.

        Raises:
            ValueError: When a space is neither Box nor Discrete.
            graph_mode.GraphModeError: When TensorFlow executes eagerly or
                without TF2 variables and control flow.
        """
        self._batch_env = batch_env
        self._error = None
        batch = (len(batch_env),)
        scope, (self._observ, self._action, self._reward, self._done,
                self._truncated) = self._define_variables(
                        'InGraphBatchEnv', batch)
        self._observ_dtype = self._observ.dtype.base_dtype
        # The layout of the bytes that the step and reset return per
        # environment; the flags are done, truncated and restarted.
        self._row = np.dtype([
                ('observ', self._observ_dtype.as_numpy_dtype,
                 tuple(self._observ.shape.as_list()[1:])),
                ('reward', np.float32), ('restarts', np.int64),
                ('flags', np.bool_, (3,))])
        with temporary_scope.reenter(scope):
            self._restarted = in_graph_env.define_variable(
                    'restarted', batch, tf.bool)
            # Read from the batch by the step and reset ops, so that no op
            # of its own calls into Python on every step.
            self._restarts = in_graph_env.define_variable(
                    'restarts', (), tf.int64)
            # The state of the environments at the last checkpoint.
            self._env_state = tf.Variable(
                    '', trainable=False, name='env_state')
        resume_state.keep_for_resume((
                self._observ, self._action, self._reward, self._done,
                self._truncated, self._restarted, self._restarts,
                self._env_state))
        self._define_resume_ops()

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

        One Python call steps the batch and returns one packed byte buffer,
        which cheap graph ops split into the variables' values: the bridge
        between TensorFlow and the environments costs one call and one
        output per step, and the checks for NaN and Inf run in NumPy.

        Args:
            action: Tensor of one action per environment, of the action
                variable's shape; its dtype may differ in width but not in
                kind (integer or floating point).

        Raises:
            TypeError: When the action's dtype kind does not match.
            ValueError: When the action's shape does not match.

        Returns:
            Operation that steps and assigns; running it fails when the
            actions, observations or rewards hold NaN or Inf, naming the
            tensor as `tf.debugging.check_numerics` does
            (`observ : Tensor had NaN values`), and then assigns nothing.
        """
        with tf.name_scope('environment_simulate'):
            action = in_graph_env.prepare_action(
                    action, self._action, check_numerics=False)
            outcome = self.step_outcome(action)
            # The action's assignment waits for the step too, so that a
            # failed step assigns nothing.
            with tf.control_dependencies([outcome.observ]):
                return tf.group(
                        self._action.assign(action),
                        *self.assign_outcome(outcome))

    def step_outcome(self, action):
        """Step the batch and return the outcome, assigning no variable.

        The op of `simulate` without its assignments, for loops of many
        steps in one session call (such as `PPO.collect`), which carry the
        outcome from step to step and assign the last one
        (`assign_outcome`). It runs Python, so it cannot be part of an
        XLA-compiled function.

        Args:
            action: Tensor of one action per environment, of the action
                variable's dtype and shape.

        Returns:
            `Outcome` of tensors; computing them fails as `simulate` does
            when the actions, observations or rewards hold NaN or Inf, or
            the batch raised.
        """
        packed = tf.numpy_function(
                self._step, [action], tf.uint8, name='step')
        packed.set_shape((len(self._batch_env), None))
        return self._unpack(packed)

    def reset_outcome(self, indices):
        """Reset some environments and return their outcome, assigning none.

        The op of `reset` without its assignments (see `step_outcome`).

        Args:
            indices: 1-D int32 tensor of the environments to reset.

        Returns:
            `Outcome` of tensors with a row per index: the first
            observations, zero rewards, false flags, and the count of
            restarts; computing them fails as `reset` does.
        """
        indices.set_shape((None,))
        packed = tf.numpy_function(
                self._reset, [indices], tf.uint8, name='reset')
        return self._unpack(packed, every_row=False)

    def assign_outcome(self, outcome):
        """Assign the outcome of a step of every environment to the variables.

        Args:
            outcome: `Outcome` with a row per environment.

        Returns:
            List of the assignment ops.
        """
        return [
                self._observ.assign(outcome.observ),
                self._reward.assign(outcome.reward),
                self._done.assign(outcome.done),
                self._truncated.assign(outcome.truncated),
                self._restarted.assign(outcome.restarted),
                self._restarts.assign(outcome.restarts)]

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
            outcome = self.reset_outcome(indices)
            with tf.control_dependencies([
                    tf.scatter_update(self._observ, indices, outcome.observ),
                    tf.scatter_update(self._reward, indices, outcome.reward),
                    tf.scatter_update(self._done, indices, outcome.done),
                    tf.scatter_update(
                            self._truncated, indices, outcome.truncated),
                    tf.scatter_update(
                            self._restarted, indices, outcome.restarted),
                    self._restarts.assign(outcome.restarts)]):
                return tf.identity(outcome.observ)

    def close(self):
        """Close the environments of the batch."""
        self._batch_env.close()

    def _define_resume_ops(self):
        """Copy the environments' state to checkpoints and back.

        Setting it evaluates to '' or to why it could not; then every
        episode begins anew, as `done` says.
        """
        with tf.name_scope('environment_state'):
            capture = self._env_state.assign(tf.numpy_function(
                    self._read_env_state, [], tf.string, stateful=True))
            forget = self._env_state.assign(env_state.encode(dict(
                    reason='a step of the environments hung or failed '
                    'before the checkpoint')))
            reason = tf.numpy_function(
                    self._set_env_state, [self._env_state], tf.string,
                    stateful=True)
            reason.set_shape(())
            anew = tf.not_equal(reason, '')
            with tf.control_dependencies([self._done.assign(
                    tf.logical_or(self._done.read_value(), anew))]):
                reason = tf.identity(reason)
        resume_state.on_save(capture, forget, reason)

    def _read_env_state(self):
        try:
            state = dict(state=self._batch_env.get_env_state())
        except (env_state.StateUnavailable, AttributeError) as error:
            state = dict(reason=str(error))
        return np.array(env_state.encode(state), object)

    def _set_env_state(self, data):
        if not data:
            return np.array(
                    b'the checkpoint holds no state of the environments',
                    object)
        state = env_state.decode(data)
        if 'reason' in state:
            return np.array(state['reason'].encode('utf-8'), object)
        try:
            self._batch_env.set_env_state(state['state'])
        except Exception as error:  # pylint: disable=broad-except
            # Whatever the batch refuses, the run goes on with new episodes.
            message = str(error).splitlines()[0] if str(error) else (
                    type(error).__name__)
            return np.array(message.encode('utf-8'), object)
        return np.array(b'', object)

    def _step(self, action):
        self._error = None
        _check_finite(action, 'action')
        try:
            observ, reward, done, info = self._batch_env.step(action)
        except Exception as error:
            self._error = error
            raise
        _check_finite(observ, 'observ')
        _check_finite(reward, 'reward')
        restarted = info.get('restarted')
        packed = np.empty(len(done), self._row)
        packed['observ'] = observ
        packed['reward'] = reward
        packed['restarts'] = self._count_restarts()
        flags = packed['flags']
        # Terminated episodes are not bootstrapped, even if also truncated.
        np.logical_and(
                info['truncated'], np.logical_not(info['terminated']),
                out=flags[:, 1])
        if restarted is None:
            flags[:, 0] = done
            flags[:, 2] = False
        else:
            np.logical_or(done, restarted, out=flags[:, 0])
            flags[:, 2] = restarted
        return packed.view(np.uint8).reshape(len(packed), self._row.itemsize)

    def _reset(self, indices):
        self._error = None
        try:
            observ = self._batch_env.reset(indices)
        except Exception as error:
            self._error = error
            raise
        _check_finite(observ, 'observ')
        packed = np.zeros(len(indices), self._row)
        packed['observ'] = observ
        packed['restarts'] = self._count_restarts()
        return packed.view(np.uint8).reshape(len(packed), self._row.itemsize)

    def _count_restarts(self):
        return getattr(self._batch_env, 'restarts', 0)

    def _unpack(self, packed, every_row=True):
        """Split the packed rows of `_step` or `_reset` into tensors.

        Args:
            packed: uint8 tensor of one row of bytes per environment, laid out
                as the structured dtype `self._row`.
            every_row: Whether there is a row for every environment, rather
                than for some, maybe none.

        Returns:
            `Outcome`.
        """
        observ_bytes = self._row.fields['observ'][0].itemsize
        packed.set_shape((None, self._row.itemsize))
        # The rows of `packed`, known for a step of every environment.
        rows = tf.compat.dimension_value(packed.shape[0])
        observ, reward, restarts, flags = tf.split(
                packed, [observ_bytes, 4, 8, 3], axis=1)
        observ = _from_bytes(
                observ, self._observ_dtype, self._observ.shape[1:], rows)
        reward = tf.bitcast(reward, tf.float32)
        restarts = tf.bitcast(restarts, tf.int64)
        if every_row:
            restarts = restarts[0]
        else:
            # Every row holds the count; a reset of no environment has none,
            # and keeps the count as it was.
            restarts = tf.maximum(
                    tf.reduce_max(restarts), self._restarts.read_value())
        done, truncated, restarted = tf.unstack(
                tf.cast(flags, tf.bool), axis=1)
        return Outcome(observ, reward, done, truncated, restarted, restarts)


def _from_bytes(rows, dtype, shape, batch=None):
    """Reinterpret rows of bytes as values of a dtype and shape.

    Args:
        rows: uint8 tensor [batch, bytes].
        dtype: TensorFlow dtype of the values.
        shape: TensorShape of one row's values.
        batch: Number of rows where known, else None.

    Returns:
        Tensor [batch, *shape] of dtype.
    """
    if dtype == tf.bool:
        values = tf.cast(rows, tf.bool)
    elif dtype.size == 1:
        values = rows if dtype == tf.uint8 else tf.bitcast(rows, dtype)
    else:
        size = shape.num_elements()
        values = tf.bitcast(tf.reshape(rows, [-1, size, dtype.size]), dtype)
    if shape.ndims != 1:
        values = tf.reshape(values, [-1] + shape.as_list())
    values.set_shape(tf.TensorShape([batch]).concatenate(shape))
    return values


def _check_finite(value, name):
    """Raise like `tf.debugging.check_numerics` on NaN or Inf values.

    Args:
        value: Array of any dtype; only floating point values are checked.
        name: Name of the tensor for the message.

    Raises:
        ValueError: `'<name> : Tensor had NaN values'` (or `Inf`, or
            `Inf and NaN`), which fails the op with an InvalidArgumentError.
    """
    value = np.asarray(value)
    if value.dtype.kind != 'f' or np.isfinite(value).all():
        return
    has_nan = bool(np.isnan(value).any())
    has_inf = bool(np.isinf(value).any())
    kind = 'Inf and NaN' if has_nan and has_inf else (
            'NaN' if has_nan else 'Inf')
    raise ValueError(f'{name} : Tensor had {kind} values')
