"""MountainCar-v0 as batched TensorFlow operations."""

import gymnasium as gym
import numpy as np
import tensorflow.compat.v1 as tf

from agents.environments import in_graph_task
from agents.tools import compiled_ops

_MIN_POSITION = -1.2
_MAX_POSITION = 0.6
_MAX_SPEED = 0.07
_GOAL_VELOCITY = 0.0
_FORCE = 0.001
_GRAVITY = 0.0025


class MountainCar(in_graph_task.Task):
    """Drive an underpowered car up a hill, as gymnasium's `MountainCar-v0`.

    The state is `(position, velocity)`, which is also the observation.
    Actions 0, 1 and 2 accelerate left, not at all, and right. The reward is
    -1 on every step; the episode terminates at the goal position 0.5 with a
    velocity of at least zero. The left wall at -1.2 stops the car.
    """

    env_id = 'MountainCar-v0'
    max_episode_steps = 200
    state_size = 2
    name = 'mountain_car'
    # Sample positions in `[-0.6, -0.4)` at rest.
    reset_low = [-0.6, 0.0]
    reset_high = [-0.4, 0.0]
    # The episode terminates here, moving right or at rest.
    goal_position = 0.5

    def _define_spaces(self):
        """Positions and velocities within their bounds; three actions."""
        low = np.array([_MIN_POSITION, -_MAX_SPEED], np.float32)
        high = np.array([_MAX_POSITION, _MAX_SPEED], np.float32)
        observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        return observation_space, gym.spaces.Discrete(3)

    def step(self, state, action):
        """See `Task.step`; the observations are the states.

        The int32 actions `[batch]` in `{0, 1, 2}` push left, not at all
        and right; every reward is -1.
        """
        with tf.name_scope('mountain_car_step'):
            position, velocity = tf.unstack(state, axis=1)
            push = tf.cast(action - 1, tf.float32) * _FORCE
            new_state, terminated = self._drive(
                    position, velocity,
                    push + tf.cos(3 * position) * -_GRAVITY)
            reward = tf.fill(tf.shape(position), -1.0)
            return new_state, new_state, reward, terminated

    def _drive(self, position, velocity, acceleration):
        """The next states `[batch, 2]` of the cars after the change of
        velocity `acceleration`, and whether they reached the goal."""
        velocity = tf.clip_by_value(
                velocity + acceleration, -_MAX_SPEED, _MAX_SPEED)
        position = tf.clip_by_value(
                position + velocity, _MIN_POSITION, _MAX_POSITION)
        at_wall = tf.logical_and(
                tf.equal(position, _MIN_POSITION), velocity < 0)
        velocity = compiled_ops.where(
            at_wall, tf.zeros_like(velocity), velocity)
        terminated = tf.logical_and(
                position >= self.goal_position, velocity >= _GOAL_VELOCITY)
        return tf.stack([position, velocity], axis=1), terminated
