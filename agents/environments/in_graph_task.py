"""Control tasks as batched TensorFlow operations (`Task`, `StandardTask`)
and a batch of one (`InGraphTaskBatch`)."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.environments import env_construction
from agents.tools import compiled_ops
from agents.tools import episode_wrappers
from agents.tools import in_graph_env
from agents.tools import rollout_env
from agents.tools import space_wrappers


class Task:
    """A control task as pure functions of batched tensors that XLA
    compiles: the caller keeps the float32 state `[batch, state_size]` and
    the `key` of the stateless random operations. Subclasses set the class
    attributes and implement `step`."""

    # The gymnasium id whose dynamics and time limit the task follows.
    env_id = None
    # Prefix of the names of the task's operations.
    name = None
    # Bounds of the uniform initial states, one per state component.
    reset_low = None
    reset_high = None
    # Gymnasium's spaces: the bounds of the observations (low: -high where
    # None), and the count of discrete actions or the bounds of Box actions.
    observ_high = None
    observ_low = None
    action_count = None
    action_high = None

    def __init__(self):
        """Create the spaces of the task; read its time limit."""
        self.max_episode_steps = gym.spec(self.env_id).max_episode_steps
        self.state_size = len(self.reset_high)
        high = np.array(self.observ_high, np.float32)
        low = -high if self.observ_low is None else np.array(
            self.observ_low, np.float32)
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        if self.action_count:
            self.action_space = gym.spaces.Discrete(self.action_count)
        else:
            high = np.array(self.action_high, np.float32)
            self.action_space = gym.spaces.Box(-high, high, dtype=np.float32)

    def __repr__(self):
        return f'{type(self).__name__}({self.env_id!r})'

    def reset(self, key, batch_size):
        """Initial states `[batch_size, state_size]` uniform in `[reset_low,
        reset_high)`, drawn with the int64 `key` `[2]`."""
        with tf.name_scope(f'{self.name}_reset'):
            return uniform(key, batch_size, self.reset_low, self.reset_high)

    def step(self, state, action):
        """Advance every state by one step into the next states, their
        observations, the float32 rewards and the bool flags of the episodes
        that terminated (time limits aside)."""
        raise NotImplementedError

    def observe(self, state):
        """The observations `[batch, *shape]` of states: the states."""
        return tf.identity(state, name=f'{self.name}_observe')


class StandardTask(Task):
    """A task behind the config's standard wrappers
    (`env_construction.standard_wrappers`) as graph operations in float32;
    the state and resets are those of the wrapped task."""

    def __init__(self, task, config):
        """Wrap a `Task` (instance or class) by a config's recipe."""
        # pylint: disable=super-init-not-called
        self.task = task() if isinstance(task, type) else task
        self._recipe = dict(env_construction.standard_wrappers(
            config, self.task.action_space))
        self.env_id = self.task.env_id
        self.max_episode_steps = self.task.max_episode_steps
        if 'LimitDuration' in self._recipe:
            self.max_episode_steps = min(
                self.max_episode_steps,
                int(self._recipe['LimitDuration']['duration']))
        self.state_size = self.task.state_size
        self.observation_space = self.task.observation_space
        self.action_space = self.task.action_space
        self._observ_map = self._action_map = self._clip = None
        if 'RangeNormalize' in self._recipe:
            (self._observ_map, self._action_map, self.observation_space,
             self.action_space) = space_wrappers.range_scales(
                 self.observation_space, self.action_space, None, None)
        if 'ClipAction' in self._recipe:
            self._clip = space_wrappers.ClipMap(self)
            self.action_space = self._clip.action_space

    def __repr__(self):
        return f'StandardTask({self.task!r}, {sorted(self._recipe)})'

    def reset(self, key, batch_size):
        """Initial states of the wrapped task; see `Task.reset`."""
        return self.task.reset(key, batch_size)

    def step(self, state, action):
        """Clip and map the actions, step, and map the observations."""
        if self._clip is not None:
            with tf.name_scope('standard_action'):
                action = tf.minimum(
                    tf.maximum(action, self._clip.low), self._clip.high)
                if self._action_map is not None:
                    action = (
                        action * self._action_map.half_range
                        + self._action_map.center)
        state, observ, reward, terminated = self.task.step(state, action)
        return state, self._map_observ(observ), reward, terminated

    def observe(self, state):
        """The mapped observations of states."""
        return self._map_observ(self.task.observe(state))

    def _map_observ(self, observ):
        """Observations mapped as `RangeNormalize` maps them."""
        if self._observ_map is None:
            return observ
        with tf.name_scope('standard_observ'):
            return (observ - self._observ_map.center) / (
                self._observ_map.half_range)


class InGraphTaskBatch(in_graph_env.InGraphEnvBase):
    """Batch of a `Task`'s environments, a drop-in for `tools.InGraphBatchEnv`
    with gymnasium's `TimeLimit`. The scope `task` holds what decides the
    batch's future (the resets' key is `(seed, counter)`), so a restored batch
    goes on exactly; `task_temporary`, left out of checkpoints, the rest."""

    def __init__(self, task, num_envs, seed, max_length=None):
        """Create the variables of a batch of a `Task` (instance or
        subclass): the int `seed` (None: a random one) keys its resets, its
        episodes end after `max_length` steps (None: `max_episode_steps`).
        A ValueError for an argument out of range or of a wrong type."""
        if isinstance(task, type) and issubclass(task, Task):
            task = task()
        if not isinstance(task, Task):
            raise ValueError(
                f'task must be an agents.environments.Task, got {task!r}.')
        if not _is_int(num_envs, 1):
            raise ValueError(
                f'num_envs must be an int >= 1, got {num_envs!r}.')
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        if not _is_int(seed, -2 ** 63) or seed >= 2 ** 63:
            raise ValueError(f'seed must be None or an int64, got {seed!r}.')
        if max_length is None:
            max_length = task.max_episode_steps
        if not _is_int(max_length, 1):
            raise ValueError(
                f'max_length must be None or an int >= 1, got {max_length!r}.')
        self.task = task
        self._num_envs = int(num_envs)
        self.max_length = int(max_length)
        discrete = isinstance(task.action_space, gym.spaces.Discrete)
        batch = [self._num_envs]
        observ_shape = list(task.observation_space.shape)
        action_shape = [] if discrete else list(task.action_space.shape)
        variable = in_graph_env.define_variable
        with tf.variable_scope('task'):
            self.seed = tf.Variable(
                np.int64(seed), trainable=False, name='seed')
            self.counter = variable('counter', (), tf.int64)
            self.state = variable(
                'state', batch + [task.state_size], tf.float32)
            self.steps = variable('steps', batch, tf.int32)
            self._observ = variable('observ', batch + observ_shape, tf.float32)
            # True at first, so that the first step begins every episode.
            self._done = variable('done', batch, tf.bool, True)
        with tf.variable_scope('task_temporary'):
            self._action = variable(
                'action', batch + action_shape,
                tf.int32 if discrete else tf.float32)
            self._reward = variable('reward', batch, tf.float32)
            self._truncated = variable('truncated', batch, tf.bool)

    def __len__(self):
        """Number of environments in the batch."""
        return self._num_envs

    def __repr__(self):
        return (f'InGraphTaskBatch({self.task!r}, num_envs={self._num_envs}, '
                f'max_length={self.max_length})')

    # The task gives the spaces and attributes the batch lacks.
    _wrapped = property(lambda self: self.task)

    @property
    def restarts(self):
        """int64 zero: in-graph environments never fail and restart."""
        return tf.constant(0, tf.int64, name='restarts')

    # No Python environment can fail a step of the batch.
    error = None

    def close(self):
        """Do nothing; the batch holds no resources outside the graph."""

    def rollout_env(self):
        """The view of a loop of steps (`tools.rollout_env`)."""
        return TaskRolloutEnv(self)

    def transition(self, state, steps, action):
        """Step states and episode step counts, as a pure function, into
        the next ones, the observations, rewards, `done` and `truncated`."""
        with tf.name_scope('task_transition'):
            state, observ, reward, terminated = self.task.step(state, action)
            steps = steps + 1
            at_limit = steps >= self.max_length
            done = tf.logical_or(terminated, at_limit)
            truncated = tf.logical_and(at_limit, tf.logical_not(terminated))
            return state, steps, observ, reward, done, truncated

    def restart(self, seed, counter, state, steps, begin):
        """Begin new episodes where `begin` is true, as a pure function
        drawing as `reset` does: the counter, states, steps, observations."""
        with tf.name_scope('task_restart'):
            fresh = self.task.reset(tf.stack([seed, counter]), self._num_envs)
            state = compiled_ops.where(begin, fresh, state)
            steps = compiled_ops.where(begin, tf.zeros_like(steps), steps)
            counter = counter + tf.cast(tf.reduce_any(begin), tf.int64)
            return counter, state, steps, self.task.observe(state)

    def simulate(self, action):
        """The op stepping the batch by one action per environment; it fails,
        assigning nothing, on a value that is not finite or a discrete action
        outside the action space. Raises as `InGraphBatchEnv.simulate`."""
        with tf.name_scope('environment_simulate'):
            action = self._prepare_action(action)
            state, steps, observ, reward, done, truncated = self.transition(
                self.state.read_value(), self.steps.read_value(), action)
            return self._assign_step(observ, reward, [
                (self.state, state), (self.steps, steps),
                (self._action, action), (self._done, done),
                (self._truncated, truncated)])

    def reset(self, indices=None):
        """Begin new episodes in some or all (None) environments from the key
        `(seed, counter)`, incrementing the counter; their observations."""
        with tf.name_scope('environment_reset'):
            if indices is None:
                indices = tf.range(self._num_envs)
            indices = tf.cast(indices, tf.int32)
            indices.set_shape([None])
            counter = self.counter.read_value()
            fresh = self.task.reset(
                tf.stack([self.seed.read_value(), counter]), self._num_envs)
            state = tf.gather(fresh, indices)
            observ = self.task.observe(state)
            zeros = tf.zeros_like(indices)
            with tf.control_dependencies([state]):
                increment = self.counter.assign_add(1)
            updates = [
                (self.state, state), (self.steps, zeros),
                (self._observ, observ),
                (self._reward, tf.cast(zeros, tf.float32)),
                (self._done, tf.cast(zeros, tf.bool)),
                (self._truncated, tf.cast(zeros, tf.bool))]
            with tf.control_dependencies([
                    tf.scatter_update(variable, indices, value)
                    for variable, value in updates] + [increment]):
                return tf.identity(observ)

    def _prepare_action(self, action):
        """Convert and check the actions against the action variable."""
        action = in_graph_env.prepare_action(action, self._action)
        if action.dtype.is_floating:
            return action
        count = self.action_space.n
        valid = tf.reduce_all(tf.logical_and(action >= 0, action < count))
        check = tf.debugging.Assert(valid, [
            f'Expected actions in [0, {count}) of the action space '
            f'Discrete({count}) but got', action], summarize=16)
        with tf.control_dependencies([check]):
            return tf.identity(action)


def _is_int(value, minimum):
    """Whether a value is an integer (not a bool) of at least `minimum`."""
    return episode_wrappers.is_integer(value) and value >= minimum


def uniform(key, batch_size, low, high):
    """Float32 values `[batch_size, len(low)]` uniform in `[low, high)`
    per component, drawn with the int64 `key` `[2]` always by XLA's
    stateless Philox op: TensorFlow's kernel draws other numbers for the
    same key. A ValueError when `batch_size` is not a positive Python int."""
    if not _is_int(batch_size, 1):
        raise ValueError(
            f'batch_size must be a Python int >= 1, got {batch_size!r}.')
    return _compiled_uniform(
        tf.convert_to_tensor(key, tf.int64), int(batch_size),
        tuple(map(float, low)), tuple(map(float, high)))


@tf.function(jit_compile=True)
def _compiled_uniform(key, batch_size, low, high):
    """Uniform values `[batch_size, len(low)]` in `[low, high)`."""
    unit = tf.random.stateless_uniform(
        [batch_size, len(low)], seed=key, dtype=tf.float32, alg='philox')
    low, high = tf.constant(low, tf.float32), tf.constant(high, tf.float32)
    return low + unit * (high - low)


class TaskRolloutEnv(rollout_env.RolloutEnv):
    """The loop's view of an in-graph task, which XLA compiles."""

    jit_compile = True

    def _variables(self):
        """The reset counter, states and step counts."""
        batch_env = self._batch_env
        return batch_env.counter, batch_env.state, batch_env.steps

    def rollout_seed(self):
        """The first half of the random keys of a rollout: the task's seed."""
        return self._batch_env.seed.read_value()

    @staticmethod
    def resets(env_state):
        """The int64 count of episodes the batch began, for random keys."""
        return env_state[0]

    def begin(self, env_state, begin, observ):
        """The loop state and observations after the episodes `begin`."""
        counter, state, steps = env_state
        counter, state, steps, fresh = self._batch_env.restart(
            self._batch_env.seed.read_value(), counter, state, steps, begin)
        return (counter, state, steps), compiled_ops.where(begin, fresh, observ)

    def step(self, env_state, action):
        """Step every environment: the loop state, observations, rewards,
        and the flags done, truncated and restarted (never, for a task)."""
        counter, state, steps = env_state
        state, steps, observ, reward, done, truncated = (
            self._batch_env.transition(state, steps, action))
        return ((counter, state, steps), observ, reward, done, truncated,
                tf.zeros_like(done))
