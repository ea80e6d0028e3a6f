"""MountainCarContinuous-v0 as batched TensorFlow operations."""

import tensorflow.compat.v1 as tf

from agents.environments import mountain_car
from agents.environments import in_graph_task
from agents.tools import compiled_ops

_MAX_ACTION = 1.0
_POWER = 0.0015
_GRAVITY = 0.0025


class ContinuousMountainCar(mountain_car.MountainCar):
    """Drive a car up a hill with a continuous force, as gymnasium's
    `MountainCarContinuous-v0`.

    The reward is 100 on reaching the goal position 0.45 with a velocity of
    at least zero, minus 0.1 times the square of the action as given
    (gymnasium clips it only for the force).
    """

    env_id = 'MountainCarContinuous-v0'
    max_episode_steps = 999
    name = 'continuous_mountain_car'
    # The state, observation and initial states are those of `MountainCar`.
    goal_position = 0.45

    def _define_spaces(self):
        """The spaces of `MountainCar` with a force in `[-1, 1]`."""
        observation_space, _ = super()._define_spaces()
        return observation_space, in_graph_task.symmetric_box([_MAX_ACTION])

    def step(self, state, action):
        """See `Task.step`; the observations are the states.

        The float32 actions `[batch, 1]` are forces, clipped to `[-1, 1]`.
        """
        with tf.name_scope('continuous_mountain_car_step'):
            position, velocity = tf.unstack(state, axis=1)
            force = tf.clip_by_value(action[:, 0], -_MAX_ACTION, _MAX_ACTION)
            new_state, terminated = self._drive(
                    position, velocity,
                    force * _POWER - _GRAVITY * tf.cos(3 * position))
            goal_reward = compiled_ops.where(
                    terminated,
                    tf.fill(tf.shape(position), 100.0),
                    tf.zeros_like(position))
            reward = goal_reward - 0.1 * tf.square(action[:, 0])
            return new_state, new_state, reward, terminated
