"""A population: members of one PPO config, one per seed, stacked on a
leading member axis of every variable and advanced by one compiled call.

Every variable that the members' PPO and in-graph task create is `[P,
...]`; the code that created it sees a `stacked_variable.StackedVariable`,
whose value is the slice of the member being traced. The member code of the
single run (`_step_begun`) runs under `pfor` over the members; their random
draws, which `pfor` cannot vectorize with a key per member, run in a loop
over the members before it (compiled once).
"""

import functools

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import ppo
from agents.algorithms.ppo import ppo_bridge
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import population_update
from agents.algorithms.ppo import stacked_variable
from agents.environments import env_modes
from agents.environments import graph_env
from agents.parts import distributions
from agents.tools import compiled_ops
from agents.tools import rollout_env
from agents.tools import temporary_scope
from agents.training import config_overrides
from agents.training import member_batch
from agents.training import member_checkpoint
from agents.training import simulation

# The `State` fields that a population reads from its variables; the others
# start alike in every member.
_STORED_FIELDS = ('env', 'observ_statistics', 'reward_statistics', 'score',
                  'episode_steps')

# Config keys whose values the members of a population may set apart
# (variants), the shapes and structure of the graph alike: values that the
# graph reads, each member its own (`stacked_variable.StackedConstant`),
GRAPH_KEYS = (
    'learning_rate', 'entropy_regularization', 'kl_target',
    'kl_cutoff_factor', 'kl_cutoff_coef', 'discount', 'gae_lambda',
    'ppo_clip', 'value_loss_clip', 'max_gradient_norm')
# and initial values, which each member takes from its single run.
INITIAL_KEYS = ('init_std', 'init_output_factor', 'kl_init_penalty')
# Keys whose zero or None leaves a part of the graph out.
_SWITCHES = ('entropy_regularization', 'gae_lambda', 'ppo_clip',
             'value_loss_clip', 'max_gradient_norm')

member_view = stacked_variable.member_view
WHOLE = stacked_variable.WHOLE


def members_config(config, variants):
    """The config that the members' graph reads: a key of `GRAPH_KEYS` that
    the members' `variants` (a dict of keys to values per member) set apart
    as a `stacked_variable.StackedConstant` of their values, an initial
    value as any member's. A ValueError names a key that may not vary, or
    one that switches a part of the graph off in some members only."""
    overrides = {}
    for key in sorted({key for variant in variants for key in variant}):
        values = [variant.get(key, config.get(key)) for variant in variants]
        if key not in GRAPH_KEYS + INITIAL_KEYS:
            raise ValueError(
                f'{key} cannot vary among the members of a population: it '
                'changes the shapes or the structure of the graph; keys '
                f"that may: {', '.join(GRAPH_KEYS + INITIAL_KEYS)}.")
        if key in _SWITCHES and len({bool(value) for value in values}) > 1:
            raise ValueError(
                f"{key} of {', '.join(repr(value) for value in values)} "
                'switches a part of the graph off in some members only; '
                'vary it among values that are all set (or run apart).')
        if key in GRAPH_KEYS and all(
                value is not None for value in values) and len(
                    set(values)) > 1:
            overrides[key] = stacked_variable.StackedConstant(values)
        else:
            overrides[key] = values[0]
    return config.copy(**overrides)


def variant_values(config, variants):
    """The config values (a dict by key) of each variant, its `--set`
    settings as pairs of key and text, as `--set` converts them."""
    return [config_overrides.apply_overrides(config.copy(), [
        f'{key}={text}' for key, text in variant]) for variant in variants]


def build_member(config, env_mode='graph'):
    """A single run of the config in the env mode (its in-graph task by
    default) in the default graph, its variables created as the trainer
    creates them (the evaluation batch too), so that its random weights are
    the trainer's.

    Returns:
      The switches of `simulation.define_algorithm` (`is_training` false)
      and the `ppo.PPO`.
    """
    return _build_member(config, env_mode)[:2]


def _build_member(config, env_mode):
    """`build_member`'s switches and PPO, and the run's batches."""
    _, batch_env, eval_batch_env = graph_env.define_run_batches(
        config, env_mode)
    return simulation.define_algorithm(batch_env, ppo.PPO, config) + (
        (batch_env, eval_batch_env),)


def member_values(config, seed, env_mode='graph'):
    """The initial values of a single run of `seed`'s variables by name, in
    a graph of its own seeded as the trainer seeds it; that of a Python
    env mode builds its environments in process (the graph is the same)."""
    config = config.copy(seed=seed)
    with tf.Graph().as_default():
        # As the trainer seeds a run.
        tf.set_random_seed(seed)
        *_, batches = _build_member(config, 'graph' if (
            env_modes.in_graph_mode(env_mode)) else 'inprocess')
        variables = tf.global_variables()
        # Without Grappler, which took 85% of the runs' time to optimize
        # the graph of one initialization.
        session_config = tf.ConfigProto()
        session_config.graph_options.rewrite_options.disable_meta_optimizer = (
            True)
        try:
            with tf.Session(config=session_config) as sess:
                sess.run(tf.global_variables_initializer())
                return dict(zip(
                    [variable.name for variable in variables],
                    sess.run(variables)))
        finally:
            for batch in batches:
                getattr(batch, 'close', lambda: None)()


class Population(population_update.UpdateMixin):
    """Members of one config, one per seed, in the default graph."""

    def __init__(self, config, seeds, env_mode='graph',
                 saved=graph_env.NEW_RUN, variants=None):
        """Create the stacked variables of the members.

        Args:
          config: The config of every member (its seed is ignored).
          seeds: The int seeds of the members, distinct per variant.
          env_mode: A checked env mode: 'graph', or (where 'auto' does not
              resolve to it) one batch of every member's Python
              environments, each seeded as its seed's single run
              (`member_batch`).
          saved: The `graph_env.SavedEnv` of the run folder.
          variants: None, or each member's `--set` settings, pairs of a
              key and its text, that set it apart (`members_config`).

        Raises:
          ValueError: For no seeds, a repeated one of a variant, or values
              that members may not set apart.
        """
        self._seeds = [int(seed) for seed in seeds]
        # As messages name the members.
        self.names = [member_checkpoint.member_name(*member) for member in zip(
            self._seeds, variants or [()] * len(self._seeds))]
        variants = variant_values(config, variants) if variants else (
            [{}] * len(self._seeds))
        members = [(seed, tuple(sorted(variant.items())))
                   for seed, variant in zip(self._seeds, variants)]
        if not members or len(set(members)) < len(members):
            raise ValueError(
                f'A population needs distinct seeds, got {list(seeds)!r}' +
                (f' of the variants {variants!r}.' if any(variants) else '.'))
        self._member_configs = [
            config.copy(seed=seed, **variant)
            for seed, variant in zip(self._seeds, variants)]
        self._config = config = members_config(config, variants)
        self.variant_values = [
            value for value in config.values()
            if isinstance(value, stacked_variable.StackedConstant)]
        self.size = len(self._seeds)
        self.step = tf.train.get_or_create_global_step()
        self._flags = (
            tf.Variable(True, trainable=False, name='is_training'),
            tf.Variable(False, trainable=False, name='should_log'))
        creator = stacked_variable.stacking_creator(self.size)
        env_mode = graph_env.resolve_env_mode(config, env_mode, saved)
        if env_modes.in_graph_mode(env_mode):
            with tf.variable_creator_scope(creator):
                self.env_mode, batch_env, self.eval_batch_env = (
                    graph_env.define_run_batches(config, env_mode))
        else:
            self.env_mode, whole, self.eval_batch_env = (
                graph_env.define_run_batches(
                    config, env_mode, saved=saved, seeds=self._seeds))
            batch_env = member_batch.MemberBatch(whole, self.size)
            for batch in (whole, self.eval_batch_env):
                # Values not finite name their member.
                batch.row_names = np.repeat(
                    [f'member {name}' for name in self.names],
                    len(batch) // self.size)
        self.batch_env = batch_env
        try:
            with tf.variable_creator_scope(creator):
                self.algo = ppo.PPO(
                    batch_env, self.step, *self._flags, config)
                with temporary_scope.temporary_scope('collect'):
                    # pylint: disable-next=protected-access
                    self._tally = self.algo._episode_tally()
            self._adam = self._define_adam()
        except BaseException:
            # Python environments in worker processes end with their batch.
            for batch in (batch_env, self.eval_batch_env):
                batch.close()
            raise
        self._sample_seeds, self._shuffle_seeds = (
            tf.constant([
                ppo._sample_seed(seed, purpose) for seed in self._seeds],
                tf.int64)
            for purpose in (ppo._SAMPLE_PURPOSE, ppo._SHUFFLE_PURPOSE))

    def initialize(self, sess):
        """Initialize the variables, each member's as its single run's."""
        values = [member_values(config, config.seed, self.env_mode)
                  for config in self._member_configs]
        # The members' values fed as initial values: one session run, which
        # the session optimizes once (a load per variable took seconds).
        feed = {
            variable.initializer.inputs[1]: np.stack(
                [value[variable.name] for value in values])
            for variable in tf.global_variables()
            if variable.shape.ndims and variable.name in values[0] and (
                variable.shape[0] == self.size and
                variable.shape[1:] == values[0][variable.name].shape)}
        sess.run(tf.global_variables_initializer(), feed)

    def collect(self, num_steps, steps_left):
        """Advance every member by up to `num_steps` batch steps in one
        compiled call, until a member's memory is full; then train the
        members whose memory is full in another.

        Args:
          steps_left: int32 tensor, the batch steps left in the phase.

        Returns:
          The int32 batch steps made, and the `[P, num_agents]` bool agents
          whose episode ended and scores of their last ended episodes.
        """
        # pylint: disable=protected-access
        algo = self.algo
        env = rollout_env.rollout_env(algo._batch_env)
        with tf.name_scope('population_collect'):
            carry = self._read_state(env)
            loop = functools.partial(
                self._loop if env.jit_compile else algo._bridge_collect,
                env=env, num_steps=num_steps,
                limit=tf.minimum(tf.cast(steps_left, tf.int32), num_steps),
                first_key=tf.cast(self.step, tf.int64))
            if env.jit_compile:
                carry = compiled_ops.compiled_function(loop)(
                    carry, self._sample_seeds)
            else:
                carry = loop(carry, sample_seed=self._sample_seeds,
                             members=ppo_bridge.Members(
                                 self.mapped, self._looped_of,
                                 lambda tensors: stacked_variable.member_of(
                                     tensors, 0)))
            with member_view(WHOLE):
                writes = algo._write_carry(env, carry, self._tally)
            with tf.control_dependencies(writes):
                trained = self._train_where_due(carry.pending)
            with tf.control_dependencies([trained]):
                return (tf.identity(carry.index[0]), tf.identity(carry.ended),
                        tf.identity(carry.last_score))

    def _read_state(self, env):
        """The members' `State`, stacked."""
        # pylint: disable=protected-access
        algo = self.algo
        stored = _STORED_FIELDS + tuple(algo._batch_variables()) + tuple(
            algo._state_variables())
        with member_view(WHOLE):
            whole = algo._read_state()._replace(
                env=env.initial(), score=self._tally[0].read_value(),
                episode_steps=self._tally[1].read_value())
        single = algo._read_state()
        return ppo_step.State(**{
            name: getattr(whole, name) if name in stored else
            tf.nest.map_structure(self._tiled, getattr(single, name))
            for name in ppo_step.State._fields})

    def _tiled(self, tensor):
        """A member's tensor repeated for every member."""
        return tf.tile(tensor[None], [self.size] + [1] * tensor.shape.ndims)

    def _loop(self, carry, sample_seeds, env, limit, first_key, num_steps):
        """The members' steps until the limit, a full memory or a failure."""
        # pylint: disable=protected-access
        algo = self.algo

        def _running(carry):
            return algo._running(
                carry.index[0], limit, ppo_step.counts_of(carry), carry.bad)

        def _step(carry):
            return [self._step(env, carry, sample_seeds, first_key)]

        return tf.while_loop(
            _running, _step, [carry], maximum_iterations=num_steps)[0]

    def _step(self, env, carry, sample_seeds, first_key):
        """One step of every member: the draws in a loop, the rest `pfor`."""
        # pylint: disable=protected-access
        algo = self.algo

        def _draw(member):
            own = stacked_variable.member_of(carry, member)
            key = algo._step_key(sample_seeds[member], first_key, own.index)
            return env.begin(own.env, own.done, own.observ), self._noise(key)

        started, noise = self._looped(_draw)
        return tf.nest.pack_sequence_as(carry, self._pfor(
            lambda member: tf.nest.flatten(algo._step_begun(
                env, stacked_variable.member_of(carry, member),
                stacked_variable.member_of(started, member), None,
                tf.gather(noise, member))), unroll=self._recurrent()))

    def _noise(self, key):
        """A member's noise of the policy's sample for the key."""
        # pylint: disable=protected-access
        space = self.algo._batch_env.action_space
        agents = self.algo._num_agents
        if isinstance(space, gym.spaces.Discrete):
            return distributions.Categorical.noise(key, [agents, space.n])
        return distributions.DiagonalGaussian.noise(
            key, [agents, 1] + list(space.shape))

    def mapped(self, function, *args):
        """`function` of every member's slice of the stacked `args` (its
        variables read as the member's), under `pfor` (unrolled for
        recurrent networks), stacked."""
        return self._pfor(
            lambda member: function(*stacked_variable.member_of(
                args, member)), unroll=self._recurrent())

    def _looped_of(self, function, *args):
        """`function` of every member's slice of the stacked `args`, one
        member after another in a loop, stacked."""
        return self._looped(
            lambda member: function(*stacked_variable.member_of(
                args, member)))
