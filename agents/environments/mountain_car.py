"""MountainCar-v0 and MountainCarContinuous-v0 as batched TF operations."""

import tensorflow.compat.v1 as tf

from agents.environments import in_graph_task
from agents.tools import compiled_ops

_MIN_POSITION = -1.2
_MAX_POSITION = 0.6
_MAX_SPEED = 0.07
_GOAL_VELOCITY = 0.0
_FORCE = 0.001
_GRAVITY = 0.0025
_MAX_ACTION = 1.0
_POWER = 0.0015


class MountainCar(in_graph_task.Task):
    """Drive an underpowered car up a hill, as gymnasium's `MountainCar-v0`,
    of the state and observation `(position, velocity)`; reward -1 per
    step, to the goal position with a velocity of at least zero."""

    env_id = 'MountainCar-v0'
    name = 'mountain_car'
    reset_low = [-0.6, 0.0]
    reset_high = [-0.4, 0.0]
    # The episode terminates here, moving right or at rest.
    goal_position = 0.5
    observ_low = [_MIN_POSITION, -_MAX_SPEED]
    observ_high = [_MAX_POSITION, _MAX_SPEED]
    action_count = 3

    def step(self, state, action):
        """Push left, not at all or right (int32 actions 0, 1, 2)."""
        with tf.name_scope('mountain_car_step'):
            position, velocity = tf.unstack(state, axis=1)
            push = tf.cast(action - 1, tf.float32) * _FORCE
            new_state, terminated = self._drive(
                    position, velocity,
                    push + tf.cos(3 * position) * -_GRAVITY)
            reward = tf.fill(tf.shape(position), -1.0)
            return new_state, new_state, reward, terminated

    def _drive(self, position, velocity, acceleration):
        """The next states after an acceleration; whether at the goal."""
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


class ContinuousMountainCar(MountainCar):
    """`MountainCar` with a continuous force, as gymnasium's
    `MountainCarContinuous-v0`: reward 100 at the goal minus 0.1 times the
    square of the action as given (gymnasium clips it only for the force)."""

    env_id = 'MountainCarContinuous-v0'
    name = 'continuous_mountain_car'
    goal_position = 0.45
    action_count = None
    action_high = [_MAX_ACTION]

    def step(self, state, action):
        """Push with the float32 forces `[batch, 1]`, clipped to [-1, 1]."""
        with tf.name_scope('continuous_mountain_car_step'):
            position, velocity = tf.unstack(state, axis=1)
            force = tf.clip_by_value(action[:, 0], -_MAX_ACTION, _MAX_ACTION)
            new_state, terminated = self._drive(
                    position, velocity,
                    force * _POWER - _GRAVITY * tf.cos(3 * position))
            goal_reward = compiled_ops.where(
                    terminated, tf.fill(tf.shape(position), 100.0),
                    tf.zeros_like(position))
            reward = goal_reward - 0.1 * tf.square(action[:, 0])
            return new_state, new_state, reward, terminated
