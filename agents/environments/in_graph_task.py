"""A batch of in-graph tasks behind the interface of `InGraphBatchEnv`."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.environments import task as task_lib
from agents.tools import compiled_ops
from agents.tools import episode_wrappers
from agents.tools import in_graph_env


class InGraphTaskBatch(in_graph_env.InGraphEnvBase):
    """Batch of environments of a task written in TensorFlow operations.

    A drop-in for `tools.InGraphBatchEnv` (variables `observ`, `action`,
    `reward`, `done`, `truncated`; ops `simulate` and `reset`) whose steps
    never leave the graph. Episodes end as under gymnasium's `TimeLimit`.

    The scope `task` holds what decides the batch's future, so a restored
    batch continues exactly: the states, step counts, the base seed and the
    counter of resets (a reset draws with the key `(seed, counter)`), and
    `done` and `observ`. The last step's `action`, `reward` and `truncated`
    live in `task_temporary`, which checkpoints leave out. `transition` and
    `restart` are the step and reset as pure functions, for compiled loops.
    """

    def __init__(self, task, num_envs, seed, max_length=None):
        """Create the variables of the batch.

        Args:
            task: `Task` instance or subclass, such as a value of
                `agents.environments.TASKS`.
            num_envs: Number of environments, an int >= 1.
            seed: Int base seed of the resets, or None for a random one.
            max_length: Steps after which an episode is truncated; None:
                the task's limit in gymnasium's registry.

        Raises:
            ValueError: When an argument is out of range or of a wrong type.
        """
        if isinstance(task, type) and issubclass(task, task_lib.Task):
            task = task()
        if not isinstance(task, task_lib.Task):
            raise ValueError(
                    f'task must be an agents.environments.Task, got {task!r}.')
        if not episode_wrappers.is_integer(num_envs) or num_envs < 1:
            raise ValueError(
                    f'num_envs must be an int >= 1, got {num_envs!r}.')
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1)[0])
        if not episode_wrappers.is_integer(seed) or not (
                -2 ** 63 <= seed < 2 ** 63):
            raise ValueError(
                    f'seed must be None or an int64, got {seed!r}.')
        if max_length is None:
            max_length = task.max_episode_steps
        if not episode_wrappers.is_integer(max_length) or max_length < 1:
            raise ValueError(
                    f'max_length must be None or an int >= 1, got '
                    f'{max_length!r}.')
        self._task = task
        self._num_envs = int(num_envs)
        self._max_length = int(max_length)
        discrete = isinstance(task.action_space, gym.spaces.Discrete)
        batch = [self._num_envs]
        observ_shape = list(task.observation_space.shape)
        action_shape = [] if discrete else list(task.action_space.shape)
        action_dtype = np.int32 if discrete else np.float32
        with tf.variable_scope('task'):
            self._seed = _variable('seed', np.int64(seed))
            self._counter = _variable('counter', np.int64(0))
            self._state = _variable(
                    'state', np.zeros(batch + [task.state_size], np.float32))
            self._steps = _variable('steps', np.zeros(batch, np.int32))
            self._observ = _variable(
                    'observ', np.zeros(batch + observ_shape, np.float32))
            # True at first, so that the first step begins every episode.
            self._done = _variable('done', np.ones(batch, np.bool_))
        with tf.variable_scope('task_temporary'):
            self._action = _variable(
                    'action', np.zeros(batch + action_shape, action_dtype))
            self._reward = _variable('reward', np.zeros(batch, np.float32))
            self._truncated = _variable(
                    'truncated', np.zeros(batch, np.bool_))

    def __len__(self):
        """Number of environments in the batch."""
        return self._num_envs

    def __repr__(self):
        """The task, size and time limit of the batch."""
        return (
                f'InGraphTaskBatch({self._task!r}, num_envs={self._num_envs},'
                f' max_length={self._max_length})')

    @property
    def _wrapped(self):
        """The task, which gives the spaces and attributes the batch lacks."""
        return self._task

    @property
    def task(self):
        """The `Task` that the environments run."""
        return self._task

    @property
    def max_length(self):
        """Steps after which an episode is truncated."""
        return self._max_length

    @property
    def state(self):
        """float32 variable `[num_envs, state_size]` of the task states."""
        return self._state

    @property
    def steps(self):
        """int32 variable of the steps of each running episode."""
        return self._steps

    @property
    def seed(self):
        """int64 variable of the base seed of the random numbers."""
        return self._seed

    @property
    def counter(self):
        """int64 variable of the resets so far, part of the random key."""
        return self._counter

    @property
    def restarts(self):
        """int64 zero: in-graph environments never fail and restart."""
        return tf.constant(0, tf.int64, name='restarts')

    @property
    def error(self):
        """None: no Python environment can fail a step of the batch."""
        return None

    def close(self):
        """Do nothing; the batch holds no resources outside the graph."""

    def transition(self, state, steps, action):
        """Step states and episode step counts, as a pure function.

        Args:
            state: float32 tensor `[num_envs, state_size]`.
            steps: int32 tensor `[num_envs]` of each episode's steps so far.
            action: Tensor of the actions, as the task takes them.

        Returns:
            Tuple of the next states, the next step counts, the
            observations, float32 rewards, and the bool flags `done` and
            `truncated` (at the time limit without terminating).
        """
        with tf.name_scope('task_transition'):
            state, observ, reward, terminated = self._task.step(
                    state, action)
            steps = steps + 1
            at_limit = steps >= self._max_length
            done = tf.logical_or(terminated, at_limit)
            truncated = tf.logical_and(at_limit, tf.logical_not(terminated))
            return state, steps, observ, reward, done, truncated

    def restart(self, seed, counter, state, steps, begin):
        """Begin new episodes where `begin` is true, as a pure function.

        Draws as `reset` with the indices where `begin` is true.

        Args:
            seed: int64 scalar tensor, the base seed.
            counter: int64 scalar tensor, the resets so far.
            state: float32 tensor `[num_envs, state_size]`.
            steps: int32 tensor `[num_envs]`.
            begin: bool tensor `[num_envs]`.

        Returns:
            Tuple of the counter, the states and the step counts after the
            resets, and the observations of the states.
        """
        with tf.name_scope('task_restart'):
            fresh = self._task.reset(
                    tf.stack([seed, counter]), self._num_envs)
            state = compiled_ops.where(begin, fresh, state)
            steps = compiled_ops.where(begin, tf.zeros_like(steps), steps)
            counter = counter + tf.cast(tf.reduce_any(begin), tf.int64)
            return counter, state, steps, self._task.observe(state)

    def simulate(self, action):
        """Step the batch and store the outcomes in the variables.

        Args:
            action: Tensor of one action per environment, as for
                `InGraphBatchEnv.simulate`.

        Raises:
            TypeError, ValueError: As `InGraphBatchEnv.simulate`.

        Returns:
            Operation that steps and assigns; it fails, assigning nothing,
            on an action, observation or reward that is not finite or a
            discrete action outside the action space.
        """
        with tf.name_scope('environment_simulate'):
            action = self._prepare_action(action)
            state, steps, observ, reward, done, truncated = self.transition(
                    self._state.read_value(), self._steps.read_value(),
                    action)
            return self._assign_step(observ, reward, [
                    (self._state, state), (self._steps, steps),
                    (self._action, action), (self._done, done),
                    (self._truncated, truncated)])

    def reset(self, indices=None):
        """Begin new episodes in some or all environments.

        Draws initial states for the whole batch from the key `(seed,
        counter)` and increments the counter.

        Args:
            indices: 1-D integer tensor of the environments to reset; None
                resets all.

        Returns:
            Tensor of the first observations of those environments,
            available once the variables were updated.
        """
        with tf.name_scope('environment_reset'):
            if indices is None:
                indices = tf.range(self._num_envs)
            indices = tf.cast(indices, tf.int32)
            indices.set_shape([None])
            counter = self._counter.read_value()
            fresh = self._task.reset(
                    tf.stack([self._seed.read_value(), counter]),
                    self._num_envs)
            state = tf.gather(fresh, indices)
            observ = self._task.observe(state)
            zeros = tf.zeros_like(indices)
            with tf.control_dependencies([state]):
                increment = self._counter.assign_add(1)
            with tf.control_dependencies([
                    tf.scatter_update(self._state, indices, state),
                    tf.scatter_update(self._steps, indices, zeros),
                    tf.scatter_update(self._observ, indices, observ),
                    tf.scatter_update(
                            self._reward, indices, tf.cast(zeros, tf.float32)),
                    tf.scatter_update(
                            self._done, indices, tf.cast(zeros, tf.bool)),
                    tf.scatter_update(
                            self._truncated, indices,
                            tf.cast(zeros, tf.bool)),
                    increment]):
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


def _variable(name, initial_value):
    """Create a non-trainable variable of a NumPy value and its dtype."""
    return tf.Variable(initial_value, trainable=False, name=name)
