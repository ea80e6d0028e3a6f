"""Reusable checks that a `Task` follows its gymnasium environment: mix
`TaskContractMixin` into a `unittest.TestCase`, as `pendulum_test` does."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf


class TaskContractMixin:
    """Checks of a task against the gymnasium environment of its id: the
    spaces, 1,000 steps from the same states and actions, the reset
    distribution, and the compiled functions against the plain ones.

    Subclasses set `task_class`, the bounds of the reset distribution per
    state component (`reset_low`, `reset_high`, from gymnasium's source) and
    the box of states mixed into the compared trajectories so that rare
    branches are taken (`coverage_low`, `coverage_high`).
    """

    task_class = None
    reset_low = None
    reset_high = None
    coverage_low = None
    coverage_high = None
    # Whether random play from the coverage states terminates episodes.
    terminates = True
    rtol = 1e-5
    atol = 1e-5
    # XLA's sines and cosines may differ from TensorFlow's in the last bits.
    compiled_rtol = 1e-6
    compiled_atol = 1e-6
    num_envs = 4
    num_steps = 250  # Steps of each environment: 1,000 in all.

    def setUp(self):  # pylint: disable=invalid-name
        """Create the task and gymnasium's environment without wrappers."""
        super().setUp()
        self.task = self.task_class()  # pylint: disable=not-callable
        self.env = gym.make(self.task_class.env_id).unwrapped
        self.addCleanup(self.env.close)

    def set_gymnasium_state(self, state):
        """Set gymnasium's environment to a task's state `[state_size]`."""
        self.env.state = np.asarray(state, np.float64)

    def coverage_states(self, rng, count):
        """`[count, state_size]` float32 states, uniform in the coverage box."""
        return rng.uniform(
                self.coverage_low, self.coverage_high,
                (count, len(self.coverage_low))).astype(np.float32)

    def random_actions(self, rng, count):
        """`count` random actions; Box ones reach a quarter beyond bounds."""
        space = self.task.action_space
        if isinstance(space, gym.spaces.Discrete):
            return rng.integers(space.n, size=count).astype(np.int32)
        width = space.high - space.low
        return rng.uniform(
                space.low - width / 4, space.high + width / 4,
                (count,) + space.shape).astype(np.float32)

    def test_spaces_match_gymnasium(self):
        # Spaces compare their dtypes too.
        self.assertEqual(
                self.task.observation_space, self.env.observation_space)
        self.assertEqual(self.task.action_space, self.env.action_space)
        self.assertEqual(
                self.task.observe(self.task.reset(_key(0, 0), 1)).shape[1:],
                self.env.observation_space.shape)

    def test_steps_match_gymnasium(self):
        rng = np.random.default_rng(0)
        step = tf.function(self.task.step)
        state = self.task.reset(_key(0, 0), self.num_envs).numpy()
        ours, theirs = [], []
        for index in range(self.num_steps):
            replace = rng.uniform(size=self.num_envs) < 0.25
            state[replace] = self.coverage_states(rng, self.num_envs)[replace]
            action = self.random_actions(rng, self.num_envs)
            next_state, observ, reward, terminated = [
                    value.numpy() for value in step(state, action)]
            for row in range(self.num_envs):
                self.set_gymnasium_state(state[row])
                act = action[row]
                act = int(act) if act.ndim == 0 else act
                observ_, reward_, terminated_, truncated_, _ = (
                        self.env.step(act))
                self.assertFalse(truncated_)
                ours.append((observ[row], reward[row], terminated[row]))
                theirs.append((observ_, reward_, terminated_))
            fresh = self.task.reset(_key(1, index), self.num_envs).numpy()
            state = np.where(terminated[:, None], fresh, next_state)
        ours, theirs = ([np.array(part) for part in zip(*items)]
                        for items in (ours, theirs))
        for value, expected, name in zip(ours, theirs, ['observ', 'reward']):
            self.assertEqual(value.dtype, np.float32)
            np.testing.assert_allclose(
                    value, expected, rtol=self.rtol, atol=self.atol,
                    err_msg=name)
        np.testing.assert_array_equal(ours[2], theirs[2])
        self.assertEqual(bool(ours[2].any()), self.terminates)

    def test_reset_distribution(self):
        low = np.array(self.reset_low, np.float32)
        high = np.array(self.reset_high, np.float32)
        states = self.task.reset(_key(3, 7), 100_000).numpy()
        self.assertEqual(states.dtype, np.float32)
        self.assertEqual(states.shape, (100_000, self.task.state_size))
        self.assertTrue(((states >= low) & (states <= high)).all())
        width = high - low
        # Within five standard errors of a uniform's mean and variance.
        _assert_close(
                states.mean(0), (low + high) / 2,
                5 * width / np.sqrt(12 * 100_000) + 1e-7)
        _assert_close(
                states.var(0), width ** 2 / 12,
                5 * width ** 2 * np.sqrt(1 / 180 / 100_000) + 1e-12)
        # Gymnasium's resets fall inside the same bounds and span them.
        samples = []
        for seed in range(300):
            self.env.reset(seed=seed)
            samples.append(np.asarray(self.env.state, np.float64))
        samples = np.array(samples)
        self.assertTrue(
            ((samples >= low - 1e-6) & (samples <= high + 1e-6)).all())
        _assert_close(samples.min(0), low, 0.05 * width + 1e-7)
        _assert_close(samples.max(0), high, 0.05 * width + 1e-7)

    def test_reset_is_keyed(self):
        first = self.task.reset(_key(3, 7), 64).numpy()
        np.testing.assert_array_equal(
                first, self.task.reset(_key(3, 7), 64).numpy())
        random = np.array(self.reset_low) < np.array(self.reset_high)
        for other in (_key(4, 7), _key(3, 8)):
            different = self.task.reset(other, 64).numpy() != first
            self.assertTrue(different[:, random].all())

    def test_compiled_functions_match_plain_ones(self):
        rng = np.random.default_rng(1)
        state = self.coverage_states(rng, 256)
        action = self.random_actions(rng, 256)
        for function, args in (
                (self.task.step, (state, action)),
                (self.task.observe, (state,)),
                (self.task.reset, (_key(5, 2), 256))):
            plain = tf.nest.flatten(tf.function(function)(*args))
            compiled = tf.nest.flatten(
                    tf.function(function, jit_compile=True)(*args))
            for value, expected in zip(compiled, plain):
                if value.dtype == tf.bool:
                    np.testing.assert_array_equal(value, expected)
                else:
                    np.testing.assert_allclose(
                            value, expected, rtol=self.compiled_rtol,
                            atol=self.compiled_atol)


def _key(seed, counter):
    """The stateless random key of a seed and a counter."""
    return tf.constant([seed, counter], tf.int64)


def _assert_close(value, expected, tolerance):
    """Assert `|value - expected| <= tolerance` elementwise."""
    error = np.abs(np.asarray(value, np.float64) - expected)
    assert (error <= tolerance).all(), (
            f'{value} differs from {expected} by more than {tolerance}')
