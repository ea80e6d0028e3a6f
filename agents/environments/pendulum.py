"""Pendulum-v1 as batched TensorFlow operations."""

import math

import tensorflow.compat.v1 as tf

from agents.environments import in_graph_task

_MAX_SPEED = 8.0
_MAX_TORQUE = 2.0
_DT = 0.05
_GRAVITY = 10.0
_MASS = 1.0
_LENGTH = 1.0


class Pendulum(in_graph_task.Task):
    """Swing up a pendulum, as gymnasium's `Pendulum-v1` (g = 10), of the
    state `(theta, theta_dot)`. Where gymnasium lets the angle grow, the
    task keeps it in `[-pi, pi)`: the same observations and rewards, in
    float32 that keeps its precision over long episodes."""

    env_id = 'Pendulum-v1'
    name = 'pendulum'
    reset_low = [-math.pi, -1.0]
    reset_high = [math.pi, 1.0]
    observ_high = [1.0, 1.0, _MAX_SPEED]
    action_high = [_MAX_TORQUE]

    def step(self, state, action):
        """One step of 0.05 s; the reward is minus the cost of the state
        before the step and the clipped torque."""
        with tf.name_scope('pendulum_step'):
            theta, theta_dot = tf.unstack(state, axis=1)
            torque = tf.clip_by_value(action[:, 0], -_MAX_TORQUE, _MAX_TORQUE)
            normalized_theta = (
                    tf.math.floormod(theta + math.pi, 2 * math.pi) - math.pi)
            cost = (
                    tf.square(normalized_theta) + 0.1 * tf.square(theta_dot)
                    + 0.001 * tf.square(torque))
            angular_acceleration = (
                    3 * _GRAVITY / (2 * _LENGTH) * tf.sin(theta) +
                    3.0 / (_MASS * _LENGTH ** 2) * torque)
            new_theta_dot = tf.clip_by_value(
                    theta_dot + angular_acceleration * _DT,
                    -_MAX_SPEED, _MAX_SPEED)
            new_theta = normalized_theta + new_theta_dot * _DT
            new_state = tf.stack([new_theta, new_theta_dot], axis=1)
            terminated = tf.zeros_like(cost, tf.bool)
            return new_state, self.observe(new_state), -cost, terminated

    def observe(self, state):
        """`(cos(theta), sin(theta), theta_dot)`."""
        with tf.name_scope('pendulum_observe'):
            theta, theta_dot = tf.unstack(state, axis=1)
            return tf.stack([tf.cos(theta), tf.sin(theta), theta_dot], axis=1)
