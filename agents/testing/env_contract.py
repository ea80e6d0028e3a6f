"""Reusable checks that an environment keeps the gymnasium contract.

In the style of dm_env's `EnvironmentTestMixin`: mix a class into a
`unittest.TestCase` subclass that defines `make_environment()`, and the test
case checks the environment's spaces, reset, step, episode ends and close:

    class MyEnvTest(env_contract.EnvironmentContractMixin,
                    unittest.TestCase):

        def make_environment(self):
            return MyEnv()

`BatchEnvironmentContractMixin` does the same for the batched contract of
`BatchEnv` (and the batch wrappers) with `make_batch_env()`.

This module must not import TensorFlow: it tests environment-side code.
"""

import numbers

import gymnasium as gym
import numpy as np


class _ContractMixin:
    """Makes the environment or batch to test before each test, closes it after.

    Subclasses name the attribute that holds it in `_tested`, and the
    method `make_` + that name, which the test case defines, returns a new
    one.
    """

    _tested = None

    def setUp(self):  # pylint: disable=invalid-name
        """Make the environment or batch and schedule its closing."""
        super().setUp()
        tested = getattr(self, f'make_{self._tested}')()
        setattr(self, self._tested, tested)
        self.addCleanup(tested.close)
        tested.action_space.seed(0)


class EnvironmentContractMixin(_ContractMixin):
    """Checks of the gymnasium contract of one environment.

    Subclasses define `make_environment()` and may override
    `max_episode_steps`, the number of steps within which an episode under
    random actions must end.
    """

    max_episode_steps = 1000
    # An attribute that only `get_wrapper_attr` reaches, such as one of the
    # innermost environment under wrappers, and its value; None skips it.
    wrapper_attribute = None

    _tested = 'environment'

    def make_environment(self):
        """Return a new environment to test; each test case defines it."""
        raise NotImplementedError('Define make_environment() in the test.')

    def test_spaces_are_gymnasium_spaces(self):
        """Both spaces are gymnasium spaces."""
        self.assertIsInstance(
            self.environment.observation_space, gym.spaces.Space)
        self.assertIsInstance(self.environment.action_space, gym.spaces.Space)

    def test_reset_returns_observ_in_space_and_info(self):
        """Reset returns an observation of the space and an info dict."""
        result = self.environment.reset(seed=0, options=None)
        self.assertIsInstance(result, tuple)
        self.assertEqual(len(result), 2)
        observ, info = result
        self._assert_observ(observ)
        self.assertIsInstance(info, dict)

    def test_reset_arguments_are_keyword_only(self):
        """Reset takes the seed by keyword only, like gymnasium."""
        with self.assertRaises(TypeError):
            self.environment.reset(0)  # pylint: disable=too-many-function-args

    def test_step_returns_five_tuple_of_right_types(self):
        """Step returns observation, reward, terminated, truncated, info."""
        self.environment.reset(seed=0)
        result = self.environment.step(self._action())
        self.assertIsInstance(result, tuple)
        self.assertEqual(len(result), 5)
        observ, reward, terminated, truncated, info = result
        self._assert_observ(observ)
        self.assertIsInstance(reward, (numbers.Real, np.number))
        self.assertTrue(np.isfinite(reward), f'reward {reward!r}')
        self.assertIsInstance(terminated, (bool, np.bool_))
        self.assertIsInstance(truncated, (bool, np.bool_))
        self.assertIsInstance(info, dict)

    def test_episodes_end_and_restart(self):
        """Episodes end with terminated or truncated; reset starts anew."""
        for _ in range(2):
            self.environment.reset()
            for _ in range(self.max_episode_steps):
                _, _, terminated, truncated, _ = self.environment.step(
                    self._action())
                if terminated or truncated:
                    break
            else:
                self.fail(
                    'Episode did not end within '
                    f'{self.max_episode_steps} steps.')

    def test_seeded_resets_reproduce_the_episode(self):
        """Equal seeds and actions give equal observations and rewards."""
        actions = [self._action() for _ in range(3)]
        traces = []
        for _ in range(2):
            observ, _ = self.environment.reset(seed=42)
            trace = [np.array(observ)]
            for action in actions:
                observ, reward, terminated, truncated, _ = (
                    self.environment.step(action))
                trace.append((np.array(observ), reward))
                if terminated or truncated:
                    break
            traces.append(trace)
        np.testing.assert_equal(traces[0], traces[1])

    def test_observations_are_fresh_objects(self):
        """A step does not modify observations returned earlier."""
        observ, _ = self.environment.reset(seed=0)
        if not isinstance(observ, np.ndarray):
            return
        copy = observ.copy()
        self.environment.step(self._action())
        np.testing.assert_array_equal(observ, copy)

    def test_close_is_idempotent(self):
        """Closing twice does not raise."""
        self.environment.reset()
        self.environment.close()
        self.environment.close()

    def test_wrapper_attributes_reach_the_environment(self):
        """get/has/set_wrapper_attr answer like gymnasium's."""
        env = self.environment
        self.assertTrue(env.has_wrapper_attr('action_space'))
        self.assertFalse(env.has_wrapper_attr('no_such_attribute'))
        self.assertEqual(env.get_wrapper_attr('action_space'),
                         env.action_space)
        with self.assertRaises(AttributeError):
            env.get_wrapper_attr('no_such_attribute')
        self.assertFalse(env.set_wrapper_attr(
            'contract_marker', 3, force=False))
        self.assertFalse(env.has_wrapper_attr('contract_marker'))
        self.assertTrue(env.set_wrapper_attr('contract_marker', 3))
        self.assertEqual(env.get_wrapper_attr('contract_marker'), 3)
        if self.wrapper_attribute is None:
            return
        name, value = self.wrapper_attribute
        self.assertTrue(env.has_wrapper_attr(name))
        self.assertEqual(env.get_wrapper_attr(name), value)
        self.assertTrue(env.set_wrapper_attr(name, 2 * value))
        self.assertEqual(env.get_wrapper_attr(name), 2 * value)

    def _action(self):
        return self.environment.action_space.sample()

    def _assert_observ(self, observ):
        space = self.environment.observation_space
        self.assertTrue(
            space.contains(observ),
            f'Observation {observ!r} is not in the observation space '
            f'{space}.')


class BatchEnvironmentContractMixin(_ContractMixin):
    """Checks of the batched contract of `BatchEnv`.

    Subclasses define `make_batch_env()` returning a batch of at least two
    environments, and may override `max_episode_steps`.
    """

    max_episode_steps = 1000

    _tested = 'batch_env'

    def make_batch_env(self):
        """Return a new batch to test; each test case defines it."""
        raise NotImplementedError('Define make_batch_env() in the test.')

    def test_length_and_indexing(self):
        """The batch has a length and indexable environments of one kind.

        Their spaces are equal, though not necessarily those of the batch,
        whose batch wrappers may transform them (`tools.batch_wrappers`).
        """
        self.assertGreaterEqual(len(self.batch_env), 2)
        envs = [self.batch_env[index] for index in range(
            len(self.batch_env))]
        for env in envs:
            self.assertEqual(
                env.observation_space, envs[0].observation_space)
            self.assertEqual(env.action_space, envs[0].action_space)

    def test_reset_returns_stacked_observations(self):
        """Reset of all or some environments stacks their observations."""
        space = self.batch_env.observation_space
        observ = self.batch_env.reset()
        self.assertIsInstance(observ, np.ndarray)
        self.assertEqual(observ.dtype, space.dtype)
        self.assertEqual(observ.shape, (len(self.batch_env),) + space.shape)
        for row in observ:
            self.assertTrue(space.contains(row), f'{row!r} not in {space}')
        observ = self.batch_env.reset([1])
        self.assertEqual(observ.shape, (1,) + space.shape)

    def test_step_returns_batched_arrays(self):
        """Step returns arrays with one row per environment."""
        size = len(self.batch_env)
        space = self.batch_env.observation_space
        self.batch_env.reset()
        observ, reward, done, info = self.batch_env.step(self._actions())
        self.assertEqual(observ.dtype, space.dtype)
        self.assertEqual(observ.shape, (size,) + space.shape)
        self.assertEqual((reward.dtype, reward.shape), (np.float32, (size,)))
        self.assertEqual((done.dtype, done.shape), (bool, (size,)))
        self.assertEqual(
                sorted(info), ['infos', 'restarted', 'terminated', 'truncated'])
        self.assertEqual(info['terminated'].dtype, bool)
        self.assertEqual(info['truncated'].dtype, bool)
        self.assertEqual(info['restarted'].dtype, bool)
        np.testing.assert_array_equal(
            done, info['terminated'] | info['truncated'])
        self.assertIsInstance(info['infos'], tuple)
        self.assertEqual(len(info['infos']), size)

    def test_every_environment_finishes_an_episode(self):
        """Each environment signals done within the step limit."""
        self.batch_env.reset()
        finished = np.zeros(len(self.batch_env), bool)
        for _ in range(self.max_episode_steps):
            _, _, done, _ = self.batch_env.step(self._actions())
            finished |= done
            if done.any():
                self.batch_env.reset(np.flatnonzero(done))
            if finished.all():
                break
        self.assertTrue(finished.all(), f'finished: {finished}')

    def test_wrong_batch_size_raises(self):
        """A batch with one action too many is refused."""
        self.batch_env.reset()
        actions = [self.batch_env.action_space.sample()
                   for _ in range(len(self.batch_env) + 1)]
        with self.assertRaises(ValueError):
            self.batch_env.step(actions)

    def test_close_is_idempotent(self):
        """Closing twice does not raise."""
        self.batch_env.close()
        self.batch_env.close()

    def _actions(self):
        space = self.batch_env.action_space
        return np.stack([space.sample() for _ in range(len(self.batch_env))])
