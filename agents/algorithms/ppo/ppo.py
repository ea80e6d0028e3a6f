"""BatchPPO: PPO with an adaptive KL penalty (arXiv:1707.06347) on episodes
of a batch of agents, trained inside the graph (arXiv:1709.02878)."""

import functools

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.algorithms.ppo import evaluation_view
from agents.algorithms.ppo import ppo_bridge
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import ppo_update
from agents.algorithms.ppo import utility


REWARD_NORMALIZATIONS = ('reward', 'return', None)

# What the seeds of stateless random ops are for (see `_sample_seed`).
_SAMPLE_PURPOSE = 0x5a3
_SHUFFLE_PURPOSE = 0x5f1


class PPO(ppo_step.StepMixin, ppo_bridge.BridgeMixin,
          ppo_update.UpdateMixin):
    """BatchPPO: collects episodes of all agents and trains in the graph.
    Ended episodes (and with `rollout_length`, bootstrapped rollouts) move
    into the update memory; once it holds `update_every` episodes or
    `update_steps` steps, the networks train in the same session call."""

    def __init__(self, batch_env, step, is_training, should_log, config):
        """Create the variables and networks, training where the boolean
        tensor `is_training` is true (else acting greedily); a ValueError
        where the action space is neither Box nor Discrete, or
        `rollout_length` comes with a recurrent network."""
        self._batch_env = batch_env
        self._step = step
        self._is_training = is_training
        self._should_log = should_log
        self._config = config
        self._num_agents = len(batch_env)
        space = batch_env.action_space
        if not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)):
            raise ValueError(
                f'PPO supports Box and Discrete action spaces, got {space!r}.')
        self._discrete = isinstance(space, gym.spaces.Discrete)
        self._device = '/cpu:0'
        if config.use_gpu and tf.config.list_logical_devices('GPU'):
            self._device = '/gpu:0'
        elif config.use_gpu:
            tf.logging.warning('use_gpu is set but no GPU is visible; using '
                               'the CPU.')
        seed = tf.get_default_graph().seed if config.seed is None else (
            config.seed)
        # Actions are sampled by stateless random ops keyed by this seed and
        # the global step, so that every driver takes the same actions.
        self._sample_seed = _sample_seed(seed)
        # The seed of the update's shuffles (see `_shuffle_keys`).
        self._shuffle_seed = None if seed is None else _sample_seed(
            seed, _SHUFFLE_PURPOSE)
        self._observ_filter = parts.StreamingNormalize(
            batch_env.observ[0], center=True, scale=True, clip=5,
            name='normalize_observ')
        # Rewards are divided by the running standard deviation of either
        # the rewards themselves (2017) or the discounted returns.
        self._reward_filter = parts.StreamingNormalize(
            batch_env.reward[0], center=False,
            scale=bool(config.reward_normalization),
            clip=10, name='normalize_reward')
        self._network = tf.make_template(
            'network', functools.partial(config.network, config, space))
        self._define_variables()
        self._optimizer = config.optimizer(self._learning_rate)

    def _define_variables(self):
        """Build the networks once outside control flow to create weights."""
        observ = self._batch_env.observ
        with tf.device(self._device):
            output = self._network(
                tf.zeros_like(observ)[:, None],
                tf.ones(self._num_agents, tf.int32))
        action = output.policy.mode()[:, 0]
        policy_params = utility.policy_params(output.policy)
        template = ppo_step.Transition(
            observ[0], action[0],
            tools.nested.map(lambda param: param[0, 0], policy_params),
            self._batch_env.reward[0], self._batch_env.reward[0])
        rollout_length = self._config.rollout_length
        if rollout_length and output.state is not None:
            raise ValueError(
                f'Config rollout_length={rollout_length!r} needs a '
                f'feed-forward network: a segment of a recurrent policy '
                f'would train from a zero state it did not start from.')
        # No row holds more than a rollout's steps.
        row_length = min(
            self._config.max_length, rollout_length or float('inf'))
        with tf.variable_scope('ppo_temporary'):
            self._episodes = parts.EpisodeMemory(
                template, self._num_agents, row_length, 'episodes')
            # Whether a run asked for summaries since the last update, which
            # then logs its own: updates seldom fall on the steps that log.
            self._log_pending = tf.Variable(
                False, trainable=False, name='log_pending')
            # Each agent's steps since it last handed over a rollout.
            self._rollout_steps = tf.Variable(
                tf.zeros([self._num_agents], tf.int32), trainable=False,
                name='rollout_steps')
            self._last_action = tf.Variable(
                tf.zeros_like(action), trainable=False, name='last_action')
            # Each agent's discounted return, whose scale normalizes the
            # rewards under reward_normalization 'return'.
            self._running_return = tf.Variable(
                tf.zeros_like(self._batch_env.reward), trainable=False,
                name='running_return')
            self._last_policy = tools.nested.map(
                lambda param: tf.Variable(
                    tf.zeros_like(param[:, 0]), trainable=False),
                policy_params)
            self._last_state = utility.state_variables(output.state)
        # Checkpoints of the trainer keep them: a resumed run continues
        # the episodes of an in-graph task where they stood.
        tools.keep_for_resume((
            self._episodes.variables, self._log_pending, self._rollout_steps,
            self._last_action, self._running_return, self._last_policy,
            self._last_state))
        # The update memory is checkpointed, so a resumed run keeps the
        # episodes it had collected toward the next update.
        self._memory = parts.EpisodeMemory(
            template, self._config.update_every, row_length, 'memory')
        self._memory_index = tf.Variable(
            0, trainable=False, name='memory_index')
        self._memory_steps = tf.Variable(
            0, trainable=False, name='memory_steps')
        self._penalty = tf.Variable(
            float(self._config.kl_init_penalty), trainable=False,
            name='penalty')
        self._num_updates = tf.Variable(0, trainable=False, name='num_updates')
        self._trained_steps = tf.Variable(
            0, trainable=False, name='trained_steps', dtype=tf.int64)

    def _learning_rate(self):
        """The learning rate, linearly to zero over `steps` if decayed."""
        # A tensor where a population's members set it apart.
        learning_rate = self._config.learning_rate
        if not self._config.learning_rate_decay:
            return tf.convert_to_tensor(learning_rate, tf.float32)
        progress = tf.cast(self._trained_steps, tf.float32) / float(
            self._config.steps)
        return learning_rate * tf.maximum(0.0, 1.0 - progress)

    def evaluation_view(self, batch_env, stochastic=False):
        """The `evaluation_view.EvaluationView` of the policy on a batch of
        evaluation environments: shared weights, its own recurrent state;
        `stochastic` samples actions instead of taking the mode."""
        return evaluation_view.EvaluationView(
            batch_env, self._network, self._observ_filter, self._device,
            stochastic)

    def begin_episode(self, agent_indices):
        """Reset the recurrent state, episode rows and running returns of
        some agents; an empty summary after."""
        with tf.name_scope('begin_episode/'):
            resets = [self._episodes.clear(agent_indices)] + [
                utility.reinit_nested_vars(state, agent_indices)
                for state in (self._running_return, self._last_state)
                if state is not None]
            with tf.control_dependencies(resets):
                return tf.constant('')

    def perform(self, agent_indices, observ):
        """The actions of some agents and a summary; remembers the policy's
        outputs."""
        with tf.name_scope('perform/'):
            observ = self._observ_filter.transform(observ)
            state = None if self._last_state is None else tools.nested.map(
                lambda tensor: tf.gather(tensor, agent_indices),
                self._last_state)
            with tf.device(self._device):
                output = self._network(
                    observ[:, None], tf.ones(tf.shape(observ)[0], tf.int32),
                    state)
            # Sample while training to explore; act greedily in evaluation.
            action = tf.cond(
                self._is_training, lambda: self._sample(output.policy),
                output.policy.mode)
            action = action[:, 0]
            summary = tf.cond(
                self._should_log,
                lambda: self._perform_summary(output.policy, action), str)
            params = tools.nested.map(
                lambda param: param[:, 0], utility.policy_params(output.policy))
            remember = [utility.assign_nested_vars(
                (self._last_action, self._last_policy), (action, params),
                agent_indices)]
            if self._last_state is not None:
                remember.append(utility.assign_nested_vars(
                    self._last_state, output.state, agent_indices))
            with tf.control_dependencies(remember):
                return tf.identity(action), tf.identity(summary)

    def _sample(self, policy):
        """Samples keyed by the global step where `collect` can run."""
        if not self.compiles_collection(self._batch_env):
            return policy.sample()
        key = tf.stack([
            tf.constant(self._sample_seed, tf.int64),
            tf.cast(self._step, tf.int64)])
        return policy.sample(key=key)

    def _perform_summary(self, policy, action):
        """Histograms of the actions and the policy's mode."""
        summaries = [tf.summary.histogram('action', action)]
        if not self._discrete:
            summaries.append(tf.summary.histogram('mode', policy.mode()))
        return tf.summary.merge(summaries)

    def experience(self, agent_indices, observ, action, reward, done, nextob):
        """Take PPO's step (`_bookkeep`) for every agent, in order, and train
        if due; a summary."""
        del agent_indices  # The step is one of every agent.
        with tf.name_scope('experience/'):
            summary, pending = tf.cond(
                self._is_training,
                lambda: self._define_experience(
                    observ, action, reward, done, nextob),
                lambda: (tf.constant(''), tf.zeros_like(done)))
            # Training stays outside the cond: nested in it, every variable
            # of the update would pass two switches at every step.
            with tf.control_dependencies([summary]):
                training = self._train_where_due(pending, again=True)
            return tf.summary.merge([summary, training])

    def _define_experience(self, observ, action, reward, done, nextob):
        """Take the step on the variables; the summary and pending agents."""
        batch_env = self._batch_env
        restarted = getattr(batch_env, 'restarted', None)
        if restarted is None:
            restarted = tf.zeros_like(done)
        before = self._read_state()
        # The state after `perform` acted, which it remembered.
        step = ppo_step.Step(
            observ, tf.cast(action, self._last_action.dtype),
            before.policy_params, before.state, nextob, reward, done,
            batch_env.truncated.read_value(), tf.identity(restarted))
        with tf.device(self._device):
            carry = self._bookkeep(before, step, begin=tf.zeros_like(done))
        writes = self._write_state(carry, before)
        with tf.control_dependencies(writes):
            summary = tf.cond(
                self._should_log, lambda: self._experience_summary(step),
                str)
        with tf.control_dependencies([summary]):
            return tf.identity(summary), tf.identity(carry.pending)

    def _experience_summary(self, step):
        """Summaries of the normalizers, once they hold the step."""
        observ_filter, reward_filter = self._observ_filter, self._reward_filter
        return tf.summary.merge([
            observ_filter.summary(), reward_filter.summary(),
            tf.summary.scalar('memory_size', self._memory_index),
            tf.summary.histogram(
                'normalized_observ', observ_filter.transform(step.observ)),
            tf.summary.scalar('normalized_reward', tf.reduce_mean(
                reward_filter.transform(step.reward)))])

    def end_episode(self, agent_indices):
        """Do nothing (`experience` stored the episodes); an empty summary."""
        del agent_indices
        return tf.constant('')


def _sample_seed(seed, purpose=_SAMPLE_PURPOSE):
    """A non-negative int64 seed for `purpose` from the run's `seed` (None:
    at random)."""
    entropy = None if seed is None else [int(seed), purpose]
    return int(np.random.SeedSequence(entropy).generate_state(
        1, np.uint64)[0] >> np.uint64(1))
