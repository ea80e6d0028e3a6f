"""Acrobot-v1 as batched TensorFlow operations."""

import math

import tensorflow.compat.v1 as tf

from agents.environments import in_graph_task
from agents.tools import compiled_ops

_DT = 0.2
_MAX_VEL_1 = 4 * math.pi
_MAX_VEL_2 = 9 * math.pi
_GRAVITY = 9.8


class Acrobot(in_graph_task.Task):
    """Swing a two-link chain up, as gymnasium's `Acrobot-v1` (the book's
    dynamics), of the state `(theta1, theta2, dtheta1, dtheta2)`: one step
    of gymnasium's `rk4` over 0.2 s, angles wrapped into `[-pi, pi]`,
    velocities clipped. Reward -1 per step, 0 at the goal height; actions
    0, 1, 2: torques -1, 0, 1, no noise."""

    env_id = 'Acrobot-v1'
    name = 'acrobot'
    reset_low = [-0.1] * 4
    reset_high = [0.1] * 4
    observ_high = [1.0, 1.0, 1.0, 1.0, _MAX_VEL_1, _MAX_VEL_2]
    action_count = 3

    def step(self, state, action):
        """One step of 0.2 s; an episode terminates where the tip rose
        above the goal height."""
        with tf.name_scope('acrobot_step'):
            torque = tf.cast(action, tf.float32) - 1.0
            half = _DT / 2.0
            # Gymnasium's rk4 over the one interval [0, dt].
            k1 = _derivatives(state, torque)
            k2 = _derivatives(state + half * k1, torque)
            k3 = _derivatives(state + half * k2, torque)
            k4 = _derivatives(state + _DT * k3, torque)
            integrated = state + _DT / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
            theta1, theta2, dtheta1, dtheta2 = tf.unstack(integrated, axis=1)
            new_state = tf.stack([
                    _wrap(theta1), _wrap(theta2),
                    tf.clip_by_value(dtheta1, -_MAX_VEL_1, _MAX_VEL_1),
                    tf.clip_by_value(dtheta2, -_MAX_VEL_2, _MAX_VEL_2)],
                    axis=1)
            # The tip's height above the pivot, in link lengths.
            angle1, angle2 = new_state[:, 0], new_state[:, 1]
            terminated = -tf.cos(angle1) - tf.cos(angle2 + angle1) > 1.0
            reward = compiled_ops.where(
                    terminated, tf.zeros_like(theta1),
                    tf.fill(tf.shape(theta1), -1.0))
            return new_state, self.observe(new_state), reward, terminated

    def observe(self, state):
        """Cosines and sines of the angles, and the velocities."""
        with tf.name_scope('acrobot_observe'):
            theta1, theta2, dtheta1, dtheta2 = tf.unstack(state, axis=1)
            return tf.stack([
                    tf.cos(theta1), tf.sin(theta1), tf.cos(theta2),
                    tf.sin(theta2), dtheta1, dtheta2], axis=1)


def _derivatives(state, torque):
    """Time derivatives of the states under the book's dynamics."""
    theta1, theta2, dtheta1, dtheta2 = tf.unstack(state, axis=1)
    # Gymnasium's link masses, first length, centres of mass and moments.
    m1 = m2 = l1 = inertia1 = inertia2 = 1.0
    lc1 = lc2 = 0.5
    cos_theta2 = tf.cos(theta2)
    sin_theta2 = tf.sin(theta2)
    d1 = (
            m1 * lc1 ** 2 +
            m2 * (l1 ** 2 + lc2 ** 2 + 2 * l1 * lc2 * cos_theta2) +
            inertia1 + inertia2)
    d2 = m2 * (lc2 ** 2 + l1 * lc2 * cos_theta2) + inertia2
    phi2 = m2 * lc2 * _GRAVITY * tf.cos(theta1 + theta2 - math.pi / 2.0)
    phi1 = (
            -m2 * l1 * lc2 * tf.square(dtheta2) * sin_theta2 -
            2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin_theta2 +
            (m1 * lc1 + m2 * l1) * _GRAVITY * tf.cos(theta1 - math.pi / 2) +
            phi2)
    ddtheta2 = (
            torque + d2 / d1 * phi1 -
            m2 * l1 * lc2 * tf.square(dtheta1) * sin_theta2 - phi2) / (
            m2 * lc2 ** 2 + inertia2 - tf.square(d2) / d1)
    ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
    return tf.stack([dtheta1, dtheta2, ddtheta1, ddtheta2], axis=1)


def _wrap(angle):
    """Angles wrapped into `[-pi, pi]` as by gymnasium, all turns at once."""
    turn = 2 * math.pi
    turns_down = tf.math.ceil((angle - math.pi) / turn)
    turns_up = tf.math.ceil((-math.pi - angle) / turn)
    angle = compiled_ops.where(
        angle > math.pi, angle - turn * turns_down, angle)
    return compiled_ops.where(angle < -math.pi, angle + turn * turns_up, angle)
