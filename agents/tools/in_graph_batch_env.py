"""A batch of environments stepped by graph operations."""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from agents.tools import env_state
from agents.tools import forwarding
from agents.tools import in_graph_env
from agents.tools import resume_state
from agents.tools import rollout_env
from agents.tools import temporary_scope

# A step's or reset's tensors, as the variables of the same names.
Outcome = collections.namedtuple(
        'Outcome', 'observ, reward, done, truncated, restarted, restarts')


class InGraphBatchEnv(in_graph_env.InGraphEnvBase, forwarding.BatchForwarding):
    """Batch of environments whose current state lives in graph variables.

    As `InGraphEnv`, a row per environment, with `restarted` too. Resume
    checkpoints keep the variables and the batch's `get_env_state` (see
    `tools.resume_state.on_save`); a batch without one (workers, EnvPool)
    resumes with all episodes begun anew. Raises as `InGraphEnv`.
    """

    def __init__(self, batch_env):
        self._batch_env = batch_env
        self._error = None
        batch = (len(batch_env),)
        scope = self._define_variables('InGraphBatchEnv', batch)
        # A step's or reset's bytes per environment; flags: done, truncated,
        # restarted.
        self._row = np.dtype([
                ('observ', self._observ_dtype.as_numpy_dtype,
                 tuple(self._observ.shape.as_list()[1:])),
                ('reward', np.float32), ('restarts', np.int64),
                ('flags', np.bool_, (3,))])
        with temporary_scope.reenter(scope):
            self._restarted = in_graph_env.define_variable(
                    'restarted', batch, tf.bool)
            # Set by the step and reset ops, so no op of its own calls Python.
            self._restarts = in_graph_env.define_variable(
                    'restarts', (), tf.int64)
            self._env_state = tf.Variable(
                    '', trainable=False, name='env_state')
        self._outcome = Outcome(
                self._observ, self._reward, self._done, self._truncated,
                self._restarted, self._restarts)
        resume_state.keep_for_resume((self._observ, self._action) + tuple(
                self._outcome[1:]) + (self._env_state,))
        self._define_resume_ops()

    _wrapped = forwarding.read_only('batch_env', 'The batch.')

    restarted = forwarding.read_only(
            'restarted', 'Bool variable: where the last step replaced a '
            'failed environment, whose episode has no result to score.')
    restarts = forwarding.read_only(
            'restarts', 'int64 variable of the environments replaced.')
    error = forwarding.read_only(
            'error', 'The exception that failed the last step or reset.')
    # The environments' names (a row each, e.g. a population's members) in
    # the messages of values not finite, or None.
    row_names = None

    def simulate(self, action):
        """The op that steps the batch with an action tensor and assigns the
        variables (nothing where it fails on NaN or Inf)."""
        with tf.name_scope('environment_simulate'):
            action = in_graph_env.prepare_action(
                    action, self._action, check_numerics=False)
            outcome = self.step_outcome(action)
            # The action too waits, so that a failed step assigns nothing.
            with tf.control_dependencies([outcome.observ]):
                return tf.group(self._action.assign(action), *[
                        variable.assign(value)
                        for variable, value in zip(self._outcome, outcome)])

    def rollout_env(self):
        """The view of a loop of steps (`tools.rollout_env`)."""
        return BridgeRolloutEnv(self)

    def step_outcome(self, action):
        """The `Outcome` of a step with an action tensor of the variable's
        dtype and shape; assigns nothing, runs Python (not for XLA)."""
        packed = tf.numpy_function(self._step, [action], tf.uint8, name='step')
        packed.set_shape((len(self._batch_env), None))
        return self._unpack(packed)

    def reset_outcome(self, indices):
        """The `Outcome` of resetting int32 indices, assigning nothing."""
        indices.set_shape((None,))
        return self._unpack(tf.numpy_function(
                self._reset, [indices], tf.uint8, name='reset'), False)

    def reset(self, indices=None):
        """Reset the environments of integer indices (None: all): their first
        observations, once assigned; fails on NaN or Inf."""
        with tf.name_scope('environment_reset'):
            if indices is None:
                indices = tf.range(len(self._batch_env))
            indices = tf.cast(indices, tf.int32)
            outcome = self.reset_outcome(indices)
            updates = [
                    tf.scatter_update(variable, indices, value)
                    for variable, value in zip(self._outcome[:-1], outcome)]
            with tf.control_dependencies(
                    updates + [self._restarts.assign(outcome.restarts)]):
                return tf.identity(outcome.observ)

    def _define_resume_ops(self):
        """Copy the environments' state to checkpoints and back (or renew)."""
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
        """The encoded state of the batch, or why there is none."""
        try:
            state = dict(state=self._batch_env.get_env_state())
        except (env_state.StateUnavailable, AttributeError) as error:
            state = dict(reason=str(error))
        return np.array(env_state.encode(state), object)

    def _set_env_state(self, data):
        """Set the encoded state; return '' or why it could not."""
        state = env_state.decode(data) if data else dict(
                reason='the checkpoint holds no state of the environments')
        reason = state.get('reason', '')
        if 'reason' not in state:
            try:
                self._batch_env.set_env_state(state['state'])
            except Exception as error:  # pylint: disable=broad-except
                # Whatever the batch refuses, the run goes on anew.
                reason = str(error).splitlines()[0] if str(error) else (
                        type(error).__name__)
        return np.array(reason.encode('utf-8'), object)

    def _step(self, action):
        """Step the batch; the packed rows of `_row`."""
        _check_finite(action, 'action', self.row_names)
        observ, reward, done, info = self._call(self._batch_env.step, action)
        restarted = info.get('restarted', False)
        # Terminated episodes are not bootstrapped, even if also truncated.
        truncated = np.logical_and(
                info['truncated'], np.logical_not(info['terminated']))
        return self._pack(observ, reward, (
                np.logical_or(done, restarted), truncated, restarted),
                self.row_names)

    def _reset(self, indices):
        """Reset environments; the packed rows of `_row`."""
        names = self.row_names
        return self._pack(self._call(self._batch_env.reset, indices), names=(
                None if names is None else np.asarray(names)[indices]))

    def _call(self, method, argument):
        """Call a method of the batch, keeping its exception as `error`."""
        self._error = None
        try:
            return method(argument)
        except Exception as error:
            self._error = error
            raise

    def _pack(self, observ, reward=0.0, flags=(False, False, False),
              names=None):
        """Checked observations, rewards, flags and restarts as uint8 rows."""
        _check_finite(observ, 'observ', names)
        _check_finite(reward, 'reward', names)
        packed = np.empty(len(observ), self._row)
        packed['observ'] = observ
        packed['reward'] = reward
        packed['restarts'] = getattr(self._batch_env, 'restarts', 0)
        packed['flags'] = np.stack(np.broadcast_arrays(*flags), -1)
        return packed.view(np.uint8).reshape(len(packed), self._row.itemsize)

    def _unpack(self, packed, every_row=True):
        """Split uint8 rows into an `Outcome`; `every_row` for a step."""
        observ_bytes = self._row.fields['observ'][0].itemsize
        packed.set_shape((None, self._row.itemsize))
        # The rows of `packed`, known for a step of every environment.
        rows = tf.compat.dimension_value(packed.shape[0])
        observ, reward, restarts, flags = tf.split(
                packed, [observ_bytes, 4, 8, 3], axis=1)
        observ = _from_bytes(
                observ, self._observ_dtype, self._observ.shape[1:], rows)
        restarts = tf.bitcast(restarts, tf.int64)
        # Every row holds the count; a reset of no environment keeps it.
        restarts = restarts[0] if every_row else tf.maximum(
                tf.reduce_max(restarts), self._restarts.read_value())
        return Outcome(
                observ, tf.bitcast(reward, tf.float32),
                *tf.unstack(tf.cast(flags, tf.bool), axis=1), restarts)


def _from_bytes(rows, dtype, shape, batch):
    """Reinterpret uint8 rows [batch, bytes] as a [batch, *shape] tensor."""
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


def _check_finite(value, name, names=None):
    """Raise `tf.debugging.check_numerics`'s ValueError on NaN or Inf, of
    the first such row's name where `names` has a row's each."""
    value = np.asarray(value)
    if value.dtype.kind != 'f' or np.isfinite(value).all():
        return
    if names is not None:
        finite = np.isfinite(value.reshape(len(value), -1)).all(1)
        name = f'{name} of {names[np.argmin(finite)]}'
    kinds = [kind for kind, test in (('Inf', np.isinf), ('NaN', np.isnan))
             if test(value).any()]
    raise ValueError(f"{name} : Tensor had {' and '.join(kinds)} values")


class BridgeRolloutEnv(rollout_env.RolloutEnv):
    """The loop's view of a `tools.InGraphBatchEnv`, stepped through Python."""

    jit_compile = False

    def _variables(self):
        """The restarted flags and the count of restarts."""
        return self._batch_env.restarted, self._batch_env.restarts

    @staticmethod
    def rollout_seed():
        """Random keys' first half, drawn per call by the graph's seed."""
        return tf.random.uniform([], maxval=tf.int64.max, dtype=tf.int64)

    @staticmethod
    def resets(unused_env_state):
        """Zero: the keys of a call differ by their step alone."""
        return tf.constant(0, tf.int64)

    def begin(self, loop_state, begin, observ):
        """Reset where `begin`; steps without resets call no Python."""
        restarted, restarts = loop_state

        def _reset():
            indices = tf.cast(tf.where(begin)[:, 0], tf.int32)
            outcome = self._batch_env.reset_outcome(indices)
            return outcome.restarts, tf.tensor_scatter_nd_update(
                observ, indices[:, None], outcome.observ)

        restarts, observ = tf.cond(
            tf.reduce_any(begin), _reset, lambda: (restarts, observ))
        restarted = tf.logical_and(restarted, tf.logical_not(begin))
        return (restarted, restarts), observ

    def step(self, loop_state, action):
        """Step the batch; done is true also where one restarted."""
        del loop_state
        outcome = self._batch_env.step_outcome(action)
        return (
            (outcome.restarted, outcome.restarts), outcome.observ,
            outcome.reward, outcome.done, outcome.truncated, outcome.restarted)
