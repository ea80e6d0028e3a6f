"""Reusable checks that an environment keeps the gymnasium contract, in the
style of dm_env's `EnvironmentTestMixin`: mix one into a `unittest.TestCase`
that defines `make_environment()` or `make_batch_env()`."""

import numbers

import gymnasium as gym
import numpy as np


class _ContractMixin:
    """Makes the tested object (`make_` + `_tested`) for each test."""

    # Steps within which a random episode must end.
    max_episode_steps = 1000
    _tested = None

    def setUp(self):  # pylint: disable=invalid-name
        """Make the environment or batch; close it after the test."""
        super().setUp()
        tested = getattr(self, f'make_{self._tested}')()
        setattr(self, self._tested, tested)
        self.addCleanup(tested.close)
        tested.action_space.seed(0)

    def test_close_is_idempotent(self):
        tested = getattr(self, self._tested)
        tested.reset()
        tested.close()
        tested.close()


class EnvironmentContractMixin(_ContractMixin):
    """Checks of the gymnasium contract of one environment.

    Attributes:
        wrapper_attribute: None, or the name and value of an attribute that
            only `get_wrapper_attr` reaches (of the innermost environment).
    """

    wrapper_attribute = None

    _tested = 'environment'

    def test_spaces_are_gymnasium_spaces(self):
        self.assertIsInstance(
            self.environment.observation_space, gym.spaces.Space)
        self.assertIsInstance(self.environment.action_space, gym.spaces.Space)

    def test_reset_returns_observ_in_space_and_info(self):
        result = self.environment.reset(seed=0, options=None)
        self.assertIsInstance(result, tuple)
        observ, info = result
        self._assert_observ(observ)
        self.assertIsInstance(info, dict)

    def test_reset_arguments_are_keyword_only(self):
        with self.assertRaises(TypeError):
            self.environment.reset(0)  # pylint: disable=too-many-function-args

    def test_step_returns_five_tuple_of_right_types(self):
        self.environment.reset(seed=0)
        result = self.environment.step(self._action())
        self.assertIsInstance(result, tuple)
        observ, reward, terminated, truncated, info = result
        self._assert_observ(observ)
        self.assertIsInstance(reward, (numbers.Real, np.number))
        self.assertTrue(np.isfinite(reward), f'reward {reward!r}')
        self.assertIsInstance(terminated, (bool, np.bool_))
        self.assertIsInstance(truncated, (bool, np.bool_))
        self.assertIsInstance(info, dict)

    def test_episodes_end_and_restart(self):
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
        observ, _ = self.environment.reset(seed=0)
        if not isinstance(observ, np.ndarray):
            return
        copy = observ.copy()
        self.environment.step(self._action())
        np.testing.assert_array_equal(observ, copy)

    def test_wrapper_attributes_reach_the_environment(self):
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
            f'Observation {observ!r} is not in the observation space {space}.')


class BatchEnvironmentContractMixin(_ContractMixin):
    """Checks of the batched contract of `BatchEnv` (at least two envs)."""

    _tested = 'batch_env'

    def test_length_and_indexing(self):
        # Not necessarily the spaces of the batch, which batch wrappers may
        # transform.
        self.assertGreaterEqual(len(self.batch_env), 2)
        envs = [self.batch_env[index] for index in range(len(self.batch_env))]
        for env in envs:
            self.assertEqual(env.observation_space, envs[0].observation_space)
            self.assertEqual(env.action_space, envs[0].action_space)

    def test_reset_returns_stacked_observations(self):
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
        for key in ('terminated', 'truncated', 'restarted'):
            self.assertEqual(info[key].dtype, bool)
        np.testing.assert_array_equal(
            done, info['terminated'] | info['truncated'])
        self.assertIsInstance(info['infos'], tuple)
        self.assertEqual(len(info['infos']), size)

    def test_every_environment_finishes_an_episode(self):
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
        self.batch_env.reset()
        actions = [self.batch_env.action_space.sample()
                   for _ in range(len(self.batch_env) + 1)]
        with self.assertRaises(ValueError):
            self.batch_env.step(actions)

    def _actions(self):
        space = self.batch_env.action_space
        return np.stack([space.sample() for _ in range(len(self.batch_env))])
