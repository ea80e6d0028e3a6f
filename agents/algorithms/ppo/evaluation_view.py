"""The policy of PPO acting on evaluation environments of their own."""

import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import utility


class EvaluationView:
    """A policy on evaluation environments (`PPO.evaluation_view`): the
    algorithm interface of `tools.simulate`, and a `tools.compiled_rollout`
    policy."""

    def __init__(self, batch_env, network, observ_filter, device, stochastic):
        """Create the evaluation batch's recurrent state for the `network`
        template shared with training; `observ_filter` is only read."""
        self._network = network
        self._observ_filter = observ_filter
        self._device = device
        self._stochastic = bool(stochastic)
        with tf.device(device):
            output = network(
                tf.zeros_like(batch_env.observ)[:, None],
                tf.ones(len(batch_env), tf.int32))
        # Its static shapes and dtypes make `initial_state`.
        self._state_template = output.state
        with tf.variable_scope('ppo_evaluation_temporary'):
            self._last_state = utility.state_variables(output.state)

    def begin_episode(self, agent_indices):
        """Reset the recurrent state of some agents; an empty summary."""
        with tf.name_scope('evaluation_begin_episode/'):
            resets = [] if self._last_state is None else [
                utility.reinit_nested_vars(self._last_state, agent_indices)]
            with tf.control_dependencies(resets):
                return tf.constant('')

    def perform(self, agent_indices, observ):
        """The actions of some agents for their raw observations, the mode
        unless `stochastic`, and an empty summary."""
        with tf.name_scope('evaluation_perform/'):
            if self._last_state is None:
                return self.step(observ, None, None)[0], tf.constant('')
            state = tools.nested.map(
                lambda tensor: tf.gather(tensor, agent_indices),
                self._last_state)
            action, state = self.step(observ, state, None)
            remember = utility.assign_nested_vars(
                self._last_state, state, agent_indices)
            with tf.control_dependencies([remember]):
                return tf.identity(action), tf.constant('')

    def experience(self, *unused_transition):
        """Collect nothing; return an empty summary."""
        return tf.constant('')

    def end_episode(self, unused_agent_indices):
        """Train on nothing; return an empty summary."""
        return tf.constant('')

    def initial_state(self, batch_size):
        """Zeros `[batch_size, ...]` of the recurrent state, or None."""
        if self._state_template is None:
            return None
        return tools.nested.map(
            lambda state: tf.zeros(
                [batch_size] + state.shape[1:].as_list(), state.dtype),
            self._state_template)

    def step(self, observ, state, key):
        """The actions for raw observations and the next recurrent state
        (None without); `key`, int64 `[2]`, keys the samples (None: unkeyed).
        """
        observ = self._observ_filter.transform(observ)
        with tf.device(self._device):
            output = self._network(
                observ[:, None], tf.ones(tf.shape(observ)[0], tf.int32),
                state)
        if self._stochastic:
            action = output.policy.sample(key=key)[:, 0]
        else:
            action = output.policy.mode()[:, 0]
        return action, output.state
