"""MountainCarContinuous-v0 as batched TensorFlow operations."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.environments import mountain_car

_MIN_ACTION = -1.0
_MAX_ACTION = 1.0
_MIN_POSITION = -1.2
_MAX_POSITION = 0.6
_MAX_SPEED = 0.07
_GOAL_POSITION = 0.45
_GOAL_VELOCITY = 0.0
_POWER = 0.0015
_GRAVITY = 0.0025


class ContinuousMountainCar(mountain_car.MountainCar):
    """Drive a car up a hill with a continuous force.

    As gymnasium's `MountainCarContinuous-v0`: the state is `(position,
    velocity)`, which is also the observation; the force is the action
    clipped to `[-1, 1]`. The reward is 100 on reaching the goal position
    0.45 with a velocity of at least zero, minus 0.1 times the square of the
    action as given (gymnasium does not clip it there). Gymnasium computes
    this task in float32 as well, since it stores the state as float32.
    """

    env_id = 'MountainCarContinuous-v0'
    max_episode_steps = 999
    name = 'continuous_mountain_car'
    # The state, observation and initial states are those of `MountainCar`.

    def _define_spaces(self):
        observation_space, _ = super()._define_spaces()
        action_space = gym.spaces.Box(
                _MIN_ACTION, _MAX_ACTION, shape=(1,), dtype=np.float32)
        return observation_space, action_space

    def step(self, state, action):
        """Accelerate the cars for one step.

        Args:
            state: float32 tensor `[batch, 2]`.
            action: float32 tensor `[batch, 1]` of forces.

        Returns:
            Tuple of the next states, observations `[batch, 2]` (the
            states), rewards and flags telling which cars reached the goal.
        """
        with tf.name_scope('continuous_mountain_car_step'):
            position, velocity = tf.unstack(state, axis=1)
            force = tf.clip_by_value(action[:, 0], _MIN_ACTION, _MAX_ACTION)
            velocity = tf.clip_by_value(
                    velocity + (
                            force * _POWER - _GRAVITY * tf.cos(3 * position)),
                    -_MAX_SPEED, _MAX_SPEED)
            position = tf.clip_by_value(
                    position + velocity, _MIN_POSITION, _MAX_POSITION)
            at_wall = tf.logical_and(
                    tf.equal(position, _MIN_POSITION), velocity < 0)
            velocity = tf.where(at_wall, tf.zeros_like(velocity), velocity)
            terminated = tf.logical_and(
                    position >= _GOAL_POSITION, velocity >= _GOAL_VELOCITY)
            goal_reward = tf.where(
                    terminated,
                    tf.fill(tf.shape(position), 100.0),
                    tf.zeros_like(position))
            reward = goal_reward - 0.1 * tf.square(action[:, 0])
            new_state = tf.stack([position, velocity], axis=1)
            return new_state, new_state, reward, terminated
