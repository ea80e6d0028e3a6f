"""Proximal Policy Optimization as a batched, in-graph algorithm.

Based on John Schulman's PPO with the adaptive KL penalty and a steep
quadratic cutoff (arXiv:1707.06347), trained on whole episodes collected by a
batch of agents, as in the 2017 TensorFlow Agents paper (arXiv:1709.02878).
"""

import collections
import functools

import gymnasium as gym
import tensorflow.compat.v1 as tf

from agents import parts
from agents import tools
from agents.algorithms.ppo import evaluation_view
from agents.algorithms.ppo import losses
from agents.algorithms.ppo import utility


REWARD_NORMALIZATIONS = ('reward', 'return', None)

_Transition = collections.namedtuple(
    'Transition', 'observ, action, policy_params, reward, bootstrap')


class PPO:
    """BatchPPO: collects episodes of all agents and trains in the graph.

    Episodes are stored per agent while they run. When an episode ends it
    moves into the update memory; once `update_every` episodes are there (or,
    with `update_steps`, once their steps add up to that many), the networks
    train for `update_epochs` epochs on mini-batches of chunks, all inside
    the session call that stepped the environments.

    With `rollout_length`, an agent also hands over the part of its running
    episode every `rollout_length` of its steps, as the fixed-length
    rollouts of OpenAI Baselines and Stable-Baselines3: the segment's return
    continues with the discounted value of the next observation, and the
    episode goes on into the next segment. Updates then need not wait for
    long episodes to end.
    """

    def __init__(self, batch_env, step, is_training, should_log, config):
        """Create the algorithm's variables and networks.

        Args:
          batch_env: In-graph batch environment (`tools.InGraphBatchEnv`).
          step: Integer tensor holding the global step.
          is_training: Boolean tensor; collect data and train when true, act
              greedily otherwise.
          should_log: Boolean tensor; whether to compute summaries.
          config: Object with the hyper-parameters (see `configs.default`).

        Raises:
          ValueError: When the action space is neither Box nor Discrete, or a
              hyper-parameter is out of range.
        """
        self._batch_env = batch_env
        self._step = step
        self._is_training = is_training
        self._should_log = should_log
        self._config = config
        self._num_agents = len(batch_env)
        self._validate_config(config)
        space = batch_env.action_space
        if not isinstance(space, (gym.spaces.Box, gym.spaces.Discrete)):
            raise ValueError(
                f'PPO supports Box and Discrete action spaces, got {space!r}.')
        self._discrete = isinstance(space, gym.spaces.Discrete)
        self._device = self._choose_device(config)
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

    @staticmethod
    def _validate_config(config):
        checks = (
            ('discount', 0 <= config.discount <= 1, 'in [0, 1]'),
            ('update_every', config.update_every >= 1, '>= 1'),
            ('update_epochs', config.update_epochs >= 1, '>= 1'),
            ('update_steps', _positive_or_none(config.update_steps),
             '>= 1 or None'),
            ('kl_target', config.kl_target > 0, '> 0'),
            ('max_length', config.max_length >= 1, '>= 1'),
            ('rollout_length',
             _positive_or_none(config.rollout_length),
             '>= 1 or None'),
        )
        for name, valid, expected in checks:
            if not valid:
                raise ValueError(
                    f'Config {name}={getattr(config, name)!r} must be '
                    f'{expected}.')
        choices = (
            ('reward_normalization', REWARD_NORMALIZATIONS),
            ('learning_rate_decay', (None, 'linear')))
        for name, valid in choices:
            value = config[name]
            if value not in valid:
                raise ValueError(
                    f'Config {name}={value!r} must be one of {valid}.')
        if not config.kl_penalty and not config.ppo_clip:
            raise ValueError(
                'Config kl_penalty=False needs ppo_clip, the policy '
                'objective would have no trust region otherwise.')
        gae_lambda = config.gae_lambda
        if gae_lambda is not None and not 0 <= gae_lambda <= 1:
            raise ValueError(
                f'Config gae_lambda={gae_lambda!r} must be in [0, 1] or None.')

    @staticmethod
    def _choose_device(config):
        if config.use_gpu and utility.available_gpus():
            return '/gpu:0'
        if config.use_gpu:
            tf.logging.warning('use_gpu is set but no GPU is visible; using '
                               'the CPU.')
        return '/cpu:0'

    def _define_variables(self):
        """Build the networks once outside control flow to create weights."""
        observ = self._batch_env.observ
        with tf.device(self._device):
            output = self._network(
                tf.zeros_like(observ)[:, None],
                tf.ones(self._num_agents, tf.int32))
        action = output.policy.mode()[:, 0]
        policy_params = losses.policy_params(output.policy)
        template = _Transition(
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
            # Discounted return of each agent's running episode, whose
            # scale normalizes the rewards under reward_normalization
            # 'return'.
            self._running_return = tf.Variable(
                tf.zeros_like(self._batch_env.reward), trainable=False,
                name='running_return')
            self._last_policy = tools.nested.map(
                lambda param: tf.Variable(
                    tf.zeros_like(param[:, 0]), trainable=False),
                policy_params)
            if output.state is None:
                self._last_state = None
            else:
                self._last_state = tools.nested.map(
                    lambda state: tf.Variable(
                        tf.zeros_like(state), trainable=False),
                    output.state)
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
        self._num_updates = tf.Variable(
            0, trainable=False, name='num_updates')
        self._trained_steps = tf.Variable(
            0, trainable=False, name='trained_steps', dtype=tf.int64)

    def _learning_rate(self):
        """The learning rate, decayed by training progress if configured.

        With `learning_rate_decay = 'linear'` the rate falls linearly to zero
        over `steps` training environment steps, counted from the episodes
        trained on, so that the policy settles at the end of a run.

        Returns:
          Scalar float tensor; called by the optimizer where it applies
          gradients, so it reads the current progress.
        """
        decay = self._config.learning_rate_decay
        learning_rate = float(self._config.learning_rate)
        if not decay:
            return tf.constant(learning_rate)
        progress = tf.cast(self._trained_steps, tf.float32) / float(
            self._config.steps)
        return learning_rate * tf.maximum(0.0, 1.0 - progress)

    def evaluation_view(self, batch_env, stochastic=False):
        """The policy acting on a batch of evaluation environments.

        The view shares the networks' weights and the observation
        normalizer, which it reads without updating, and keeps its own
        per-agent state (the recurrent state) for the evaluation batch, so
        that evaluation episodes leave the training agents' state, episode
        buffers and memory as they were. It collects nothing and never
        trains.

        Args:
          batch_env: In-graph batch of the evaluation environments, with
              the observation and action spaces of the training batch.
          stochastic: Whether to sample actions; by default the view acts
              greedily with the policy's mode.

        Returns:
          `evaluation_view.EvaluationView`, with the interface that
          `tools.simulate` calls.
        """
        return evaluation_view.EvaluationView(
            batch_env, self._network, self._observ_filter, self._device,
            stochastic)

    def begin_episode(self, agent_indices):
        """Reset the recurrent state and episode buffers of some agents.

        Args:
          agent_indices: Integer tensor of agent indices.

        Returns:
          Summary tensor.
        """
        with tf.name_scope('begin_episode/'):
            if self._last_state is None:
                reset_state = tf.no_op()
            else:
                reset_state = utility.reinit_nested_vars(
                    self._last_state, agent_indices)
            reset_buffer = self._episodes.clear(agent_indices)
            reset_return = utility.reinit_nested_vars(
                self._running_return, agent_indices)
            with tf.control_dependencies(
                    [reset_state, reset_buffer, reset_return]):
                return tf.constant('')

    def perform(self, agent_indices, observ):
        """Compute the batch of actions and remember the policy's outputs.

        Args:
          agent_indices: Integer tensor of agent indices.
          observ: Tensor of a batch of observations for those agents.

        Returns:
          Tuple of the action batch and a summary tensor.
        """
        with tf.name_scope('perform/'):
            observ = self._observ_filter.transform(observ)
            state = None
            if self._last_state is not None:
                state = utility.nested_gather(self._last_state, agent_indices)
            with tf.device(self._device):
                output = self._network(
                    observ[:, None], tf.ones(tf.shape(observ)[0], tf.int32),
                    state)
            # Sample while training to explore; act greedily in evaluation.
            action = tf.cond(
                self._is_training, output.policy.sample, output.policy.mode)
            action = action[:, 0]
            summary = tf.cond(
                self._should_log,
                lambda: self._perform_summary(output.policy, action), str)
            remember = [tf.scatter_update(
                self._last_action, agent_indices, action)]
            policy_params = losses.policy_params(output.policy)
            remember += [
                tf.scatter_update(variable, agent_indices, param[:, 0])
                for variable, param in zip(
                    tools.nested.flatten(self._last_policy),
                    tools.nested.flatten(policy_params))]
            if self._last_state is not None:
                remember.append(utility.assign_nested_vars(
                    self._last_state, output.state, agent_indices))
            with tf.control_dependencies(remember):
                return tf.identity(action), tf.identity(summary)

    def _perform_summary(self, policy, action):
        summaries = [tf.summary.histogram('action', action)]
        if not self._discrete:
            summaries.append(tf.summary.histogram('mode', policy.mode()))
        return tf.summary.merge(summaries)

    def experience(
            self, agent_indices, observ, action, reward, done, nextob):
        """Store a batch of transitions in the agents' episode buffers.

        With `rollout_length`, agents whose rollout is complete and whose
        episode goes on hand their segment to the update memory here.

        Args:
          agent_indices: Integer tensor of agent indices.
          observ: Batch of observations before the step.
          action: Batch of actions taken.
          reward: Batch of rewards received.
          done: Batch of episode-end flags (read from the env).
          nextob: Batch of observations after the step.

        Returns:
          Summary tensor.
        """
        with tf.name_scope('experience/'):
            # tf.cond(pred, fn, str): the false branch returns an empty
            # summary string, so callers can always merge the result.
            return tf.cond(
                self._is_training,
                lambda: self._define_experience(
                    agent_indices, observ, action, reward, done, nextob),
                str)

    def _define_experience(
            self, agent_indices, observ, action, reward, done, nextob):
        """Update the normalizers and append the transitions."""
        update_filters = tf.summary.merge([
            self._observ_filter.update(observ, self._should_log),
            self._update_reward_filter(agent_indices, reward)])
        mark_log = self._log_pending.assign(
            tf.logical_or(self._log_pending, self._should_log))
        cut, count_steps = self._count_rollout_steps(agent_indices, done)
        with tf.control_dependencies([update_filters]):
            norm_observ = self._observ_filter.transform(observ)
            # Normalizes the next observation too, so it must see the update.
            bootstrap = self._bootstrap_value(agent_indices, nextob, cut)
        batch = _Transition(
            norm_observ, action,
            utility.nested_gather(self._last_policy, agent_indices),
            reward, bootstrap)
        with tf.control_dependencies([mark_log]):
            append = self._episodes.append(batch, agent_indices)
        rollouts = None
        if cut is not None:
            with tf.control_dependencies([append, count_steps]):
                rollouts = self._end_rollouts(tf.boolean_mask(
                    agent_indices, cut))
        summary = tf.cond(
            self._should_log,
            lambda: tf.summary.merge([
                update_filters,
                self._observ_filter.summary(),
                self._reward_filter.summary(),
                tf.summary.scalar('memory_size', self._memory_index),
                tf.summary.histogram('normalized_observ', norm_observ),
                tf.summary.scalar('normalized_reward', tf.reduce_mean(
                    self._reward_filter.transform(reward)))]),
            str)
        # TensorFlow adds no control inputs to an op whose inputs come from
        # the same control block, so the summary gets its ordering here, from
        # an identity whose input was built before the block.
        with tf.control_dependencies([append]):
            summary = tf.identity(summary)
        if rollouts is None:
            return summary
        return tf.summary.merge([summary, rollouts])

    def _update_reward_filter(self, agent_indices, reward):
        """Feed the reward normalizer with rewards or running returns.

        With `reward_normalization='return'` the statistics are those of
        each agent's discounted return so far, as in OpenAI Baselines'
        VecNormalize: dividing rewards by the return's standard deviation
        keeps value targets near unit scale whatever the discount.

        Returns:
          Summary tensor of the update.
        """
        mode = self._config.reward_normalization
        if mode != 'return':
            return self._reward_filter.update(reward, self._should_log)
        running = (
            tf.gather(self._running_return, agent_indices) *
            self._config.discount + reward)
        store = tf.scatter_update(
            self._running_return, agent_indices, running)
        with tf.control_dependencies([store]):
            return self._reward_filter.update(running, self._should_log)

    def _count_rollout_steps(self, agent_indices, done):
        """Count the agents' steps and find where a rollout is complete.

        Returns:
          Tuple of the boolean batch of agents whose rollout ends with this
          step while their episode goes on (None without `rollout_length`),
          and the operation that updates the counts. A count starts anew
          when it reaches `rollout_length`, whether or not the episode ended
          there, and goes on across episodes, so that updates come every
          `rollout_length` steps as with a fixed-length rollout.
        """
        rollout_length = self._config.rollout_length
        if not rollout_length:
            return None, tf.no_op()
        steps = tf.gather(self._rollout_steps, agent_indices) + 1
        complete = steps >= int(rollout_length)
        count = tf.scatter_update(
            self._rollout_steps, agent_indices,
            tf.where(complete, tf.zeros_like(steps), steps))
        return tf.logical_and(complete, tf.logical_not(done)), count

    def _end_rollouts(self, agent_indices):
        """Hand the running segments of agents to the memory.

        Their episodes go on: the next steps start new segments in the
        cleared buffer rows. The return of each segment was bootstrapped at
        its last step.

        Returns:
          Summary tensor, available once the buffer rows are cleared.
        """
        def _define():
            store = self._define_end_episode(agent_indices)
            with tf.control_dependencies([store]):
                clear = self._episodes.clear(agent_indices)
            with tf.control_dependencies([clear]):
                return tf.identity(store)

        with tf.name_scope('end_rollouts'):
            return tf.cond(tf.size(agent_indices) > 0, _define, str)

    def _bootstrap_value(self, agent_indices, nextob, cut=None):
        """Discounted value of the next observation where the return goes on.

        An episode cut by its time limit did not end in the environment, so
        its return continues beyond the last step. With `bootstrap_truncated`
        the last step's return adds the discounted value estimate of the
        following observation, in normalized reward units. So does the last
        step of a rollout whose episode goes on (`cut`).
        """
        zeros = tf.zeros(tf.shape(agent_indices), tf.float32)
        bootstrap = None
        if self._config.bootstrap_truncated:
            bootstrap = tf.gather(self._batch_env.truncated, agent_indices)
        if cut is not None:
            bootstrap = cut if bootstrap is None else tf.logical_or(
                bootstrap, cut)
        if bootstrap is None:
            return zeros

        def _value():
            norm_nextob = self._observ_filter.transform(nextob)
            state = None
            if self._last_state is not None:
                state = utility.nested_gather(self._last_state, agent_indices)
            with tf.device(self._device):
                value = self._network(
                    norm_nextob[:, None],
                    tf.ones(tf.shape(nextob)[0], tf.int32), state).value
            discounted = self._config.discount * tf.stop_gradient(value[:, 0])
            return tf.where(bootstrap, discounted, zeros)

        return tf.cond(tf.reduce_any(bootstrap), _value, lambda: zeros)

    def end_episode(self, agent_indices):
        """Move finished episodes into the memory and train when it is full.

        Args:
          agent_indices: Integer tensor of agent indices.

        Returns:
          Summary tensor.
        """
        with tf.name_scope('end_episode/'):
            return tf.cond(
                self._is_training,
                lambda: self._define_end_episode(agent_indices), str)

    def _define_end_episode(self, agent_indices):
        """Store episodes, dropping those that do not fit into the memory."""
        episodes, length = self._episodes.data(agent_indices)
        space_left = self._config.update_every - self._memory_index
        use_episodes = tf.range(
            tf.minimum(tf.shape(agent_indices)[0], space_left))
        episodes = tools.nested.map(
            lambda value: tf.gather(value, use_episodes), episodes)
        length = tf.gather(length, use_episodes)
        rows = self._memory_index + use_episodes
        append = self._memory.replace(episodes, length, rows)
        with tf.control_dependencies([append]):
            increment = tf.group(
                self._memory_index.assign_add(tf.shape(use_episodes)[0]),
                self._memory_steps.assign_add(tf.reduce_sum(length)))
        with tf.control_dependencies([increment]):
            should_train = self._memory_index >= self._config.update_every
            update_steps = self._config.update_steps
            if update_steps:
                should_train = tf.logical_or(
                    should_train, self._memory_steps >= int(update_steps))
            return tf.cond(should_train, self._training, str)

    def _training(self):
        """Train on the memory, adapt the penalty, and clear the memory.

        Logs summaries when this run or one since the last update asked for
        them.
        """
        with tf.device(self._device):
            with tf.name_scope('training'):
                log = tf.logical_or(self._should_log, self._log_pending)
                # Rows past the memory index hold no episode: length zero.
                data, length = self._memory.data()
                reward = self._reward_filter.transform(data.reward)
                reward = reward + data.bootstrap
                update_summary = self._perform_update_steps(
                    data.observ, data.action, data.policy_params, reward,
                    length, log)
                with tf.control_dependencies([update_summary]):
                    penalty_summary = self._adjust_penalty(
                        data.observ, data.policy_params, length, log)
                with tf.control_dependencies([penalty_summary]):
                    clear_memory = tf.group(
                        self._memory.clear(), self._memory_index.assign(0),
                        self._memory_steps.assign(0),
                        self._num_updates.assign_add(1),
                        self._trained_steps.assign_add(
                            tf.reduce_sum(tf.cast(length, tf.int64))))
                weight_summary = _summary_after(
                    [clear_memory], log,
                    lambda: utility.variable_summaries(
                        tf.trainable_variables(),
                        self._config.weight_summaries))
                with tf.control_dependencies([weight_summary]):
                    logged = self._log_pending.assign(False)
                with tf.control_dependencies([logged]):
                    return tf.summary.merge([
                        update_summary, penalty_summary, weight_summary])

    def _perform_update_steps(
            self, observ, action, old_policy_params, reward, length, log):
        """Compute advantages once, then run the epochs of mini-batches.

        Returns:
          Summary tensor, empty unless the boolean tensor `log` holds.
        """
        with tf.name_scope('update') as scope:
            return_ = utility.discounted_return(
                reward, length, self._config.discount)
            value = self._network(observ, length).value
            gae_lambda = self._config.gae_lambda
            if gae_lambda:
                advantage = utility.lambda_advantage(
                    reward, value, length, self._config.discount, gae_lambda)
            else:
                advantage = return_ - value
            # Value targets come from whole episodes, before they are cut
            # into chunks: the lambda-return with GAE, else the Monte-Carlo
            # return.
            if gae_lambda:
                value_target = utility.mask(advantage + value, length)
            else:
                value_target = return_
            value_target = tf.stop_gradient(value_target)
            advantage = losses.normalize_advantage(advantage, length)
            advantage = tf.stop_gradient(advantage)
            old_value = tf.stop_gradient(value)
            sequences = (
                observ, action, old_policy_params, value_target, advantage,
                old_value)
            template = {name: 0.0 for name in self._update_statistics()}
            statistics = parts.iterate_sequences(
                self._update_step, template, sequences, length,
                self._config.chunk_length, self._config.batch_size,
                self._config.update_epochs, padding_value=1)

            def _summary():
                # Summaries cost more than the mini-batches' math, so the
                # steps return scalars and their means are logged once. A
                # branch starts without name scope; the tags keep it.
                with tf.name_scope(scope):
                    return tf.summary.merge([
                        tf.summary.histogram('advantage', advantage),
                        tf.summary.scalar('mean_return', losses.masked_mean(
                            return_, length)),
                        tf.summary.scalar('mean_value', losses.masked_mean(
                            value, length)),
                        tf.summary.scalar(
                            'learning_rate', self._learning_rate()),
                    ] + [
                        tf.summary.scalar(name, tf.reduce_mean(values))
                        for name, values in sorted(statistics.items())])

            # The penalty's KL pass waits for this summary, so it must not
            # finish before the mini-batch steps.
            return _summary_after([statistics['loss']], log, _summary)

    def _update_statistics(self):
        """Names of the scalars that every mini-batch step returns."""
        names = [
            'loss', 'value_loss', 'policy_loss', 'surrogate_loss',
            'kl_penalty', 'kl_cutoff', 'cutoff_count', 'mean_kl',
            'mean_entropy', 'gradient_norm']
        groups = self._config.weight_summaries or {}
        names += [f'gradient_norm_{group}' for group in sorted(groups)]
        return names

    def _update_step(self, sequence, length):
        """One gradient step on a mini-batch of (chunks of) episodes.

        Args:
          sequence: Tuple of observ, action, old policy params, value
              target, advantage and the value before the update, each
              [batch, time, ...].
          length: Integer tensor [batch] of valid lengths.

        Returns:
          Dict of scalar statistics, see `_update_statistics`, available
          once the gradient step is applied.
        """
        (observ, action, old_policy_params, value_target, advantage,
         old_value) = sequence
        network = self._network(observ, length)
        old_policy = losses.policy_from_params(
            self._discrete, old_policy_params)
        value_loss = losses.value_loss_fn(
            network.value, value_target, old_value, length,
            self._config.value_loss_clip)
        policy_loss, statistics = self._policy_loss(
            old_policy, network.policy, action, advantage, length)
        extra_loss = network.get('loss', 0.0)
        # Fail the update before a non-finite loss reaches the weights.
        loss = tf.debugging.check_numerics(
            policy_loss + value_loss + tf.reduce_mean(extra_loss), 'loss')
        grad_vars = self._optimizer.compute_gradients(loss)
        grad_vars = [(grad, var) for grad, var in grad_vars if grad is not None]
        gradients, variables = zip(*grad_vars)
        gradient_norm = tf.linalg.global_norm(gradients)
        max_norm = self._config.max_gradient_norm
        if max_norm:
            gradients, _ = tf.clip_by_global_norm(
                gradients, max_norm, use_norm=gradient_norm)
        # The gradients need not wait for the check of the loss.
        with tf.control_dependencies([loss]):
            optimize = self._optimizer.apply_gradients(
                zip(gradients, variables))
        statistics.update(
            loss=loss, value_loss=value_loss, policy_loss=policy_loss,
            gradient_norm=gradient_norm)
        norms = utility.gradient_norms(
            grad_vars, self._config.weight_summaries)
        statistics.update({
            f'gradient_norm_{group}': norm for group, norm in norms.items()})
        with tf.control_dependencies([optimize]):
            return {
                name: tf.identity(tf.cast(statistics[name], tf.float32))
                for name in self._update_statistics()}

    def _policy_loss(self, old_policy, policy, action, advantage, length):
        """Surrogate objective with an adaptive KL penalty and a cutoff.

        Args:
          old_policy: Distribution that collected the data.
          policy: Distribution of the current network.
          action: Actions taken, [batch, time, ...].
          advantage: Normalized advantages, [batch, time].
          length: Valid lengths, [batch].

        Returns:
          Tuple of the scalar loss and a dict of scalar statistics.
        """
        config = self._config
        with tf.name_scope('policy_loss'):
            kl = utility.mask(old_policy.kl(policy), length)
            log_ratio = policy.log_prob(action) - old_policy.log_prob(action)
            # Padded steps hold arbitrary values; keep exp() finite there.
            log_ratio = utility.mask(tf.minimum(log_ratio, 20.0), length)
            ratio = tf.exp(log_ratio)
            surrogate = ratio * advantage
            if config.ppo_clip:
                clipped_ratio = tf.clip_by_value(
                    ratio, 1 - config.ppo_clip, 1 + config.ppo_clip)
                surrogate = tf.minimum(surrogate, clipped_ratio * advantage)
            surrogate_loss = -losses.masked_mean(surrogate, length)
            # A quadratic wall above the cutoff stops the policy from moving
            # far from the data when the penalty has not adapted yet.
            cutoff_threshold = config.kl_target * config.kl_cutoff_factor
            above_cutoff = tf.cast(kl > cutoff_threshold, tf.float32)
            if config.kl_penalty:
                kl_penalty = self._penalty * losses.masked_mean(kl, length)
                kl_cutoff = config.kl_cutoff_coef * losses.masked_mean(
                    above_cutoff * (kl - cutoff_threshold) ** 2, length)
            else:
                kl_penalty = kl_cutoff = tf.constant(0.0)
            entropy = losses.masked_mean(policy.entropy(), length)
            policy_loss = surrogate_loss + kl_penalty + kl_cutoff
            if config.entropy_regularization:
                policy_loss -= config.entropy_regularization * entropy
            statistics = dict(
                surrogate_loss=surrogate_loss, kl_penalty=kl_penalty,
                kl_cutoff=kl_cutoff, mean_kl=losses.masked_mean(kl, length),
                mean_entropy=entropy, cutoff_count=tf.reduce_sum(
                    utility.mask(above_cutoff, length)))
            return policy_loss, statistics

    def _adjust_penalty(self, observ, old_policy_params, length, log):
        """Raise the KL penalty when the update moved the policy too far.

        The penalty grows by 1.5x when the mean KL exceeds 1.3x the target and
        shrinks by 1.5x below 0.7x the target. Without `kl_penalty` nothing
        adapts, and the KL the update caused is measured only for the logs.

        Returns:
          Summary tensor, empty unless the boolean tensor `log` holds.
        """
        with tf.name_scope('adjust_penalty') as scope:

            def _measure():
                network = self._network(observ, length)
                old_policy = losses.policy_from_params(
                    self._discrete, old_policy_params)
                kl = utility.mask(old_policy.kl(network.policy), length)
                kl_change = tf.identity(
                    losses.masked_mean(kl, length), name='kl_change')
                return network, kl, kl_change

            def _summary(network, kl, kl_change, penalty):
                entropy = utility.mask(network.policy.entropy(), length)
                with tf.name_scope(scope):
                    return tf.summary.merge([
                        tf.summary.scalar('kl_change', kl_change),
                        tf.summary.scalar('penalty', penalty),
                        tf.summary.histogram('kl', kl),
                        tf.summary.histogram('entropy', entropy)])

            if not self._config.kl_penalty:
                return _summary_after(
                    [], log, lambda: _summary(*_measure(), self._penalty))
            network, kl, kl_change = _measure()
            new_penalty = losses.adapted_penalty(
                self._penalty, kl_change, self._config.kl_target)
            # Keep the penalty in a range where the loss stays well scaled.
            new_penalty = tf.clip_by_value(new_penalty, 1e-6, 1e6)
            update = self._penalty.assign(new_penalty)
            return _summary_after(
                [update], log,
                lambda: _summary(network, kl, kl_change, new_penalty))


def _summary_after(dependencies, log, summary_fn):
    """The summary of `summary_fn` where `log` holds, after the dependencies.

    The conditional's predicate is a copy of `log` made after the
    dependencies, so that both branches wait for them (see
    `tools.identity_after`).

    Args:
      dependencies: Ops or tensors to run first; the enclosing control block
          applies too.
      log: Boolean tensor; whether to build the summary.
      summary_fn: Function returning a summary tensor.

    Returns:
      Summary tensor, the empty string where `log` does not hold.
    """
    with tf.control_dependencies(dependencies):
        return tf.cond(
            tools.identity_after(dependencies, log), summary_fn, str)


def _positive_or_none(value):
    """Whether an optional count is None or at least one."""
    return value is None or value >= 1
