"""CartPole-v1 as batched TensorFlow operations."""

import math

import numpy as np
import tensorflow.compat.v1 as tf

from agents.environments import in_graph_task
from agents.tools import compiled_ops

_GRAVITY = 9.8
_MASS_CART = 1.0
_MASS_POLE = 0.1
_TOTAL_MASS = _MASS_POLE + _MASS_CART
_LENGTH = 0.5  # Half the pole's length.
_POLE_MASS_LENGTH = _MASS_POLE * _LENGTH
_FORCE = 10.0
_TAU = 0.02  # Seconds per step.
_THETA_THRESHOLD = 12 * 2 * math.pi / 360
_X_THRESHOLD = 2.4


class CartPole(in_graph_task.Task):
    """Balance a pole on a cart, as gymnasium's `CartPole-v1`, of the state
    `(x, x_dot, theta, theta_dot)` (Euler's method). Reward 1 on every step,
    the terminating one and later ones too (gymnasium warns and rewards 0; a
    batch begins a new episode there). Action 1 pushes right, 0 left."""

    env_id = 'CartPole-v1'
    name = 'cartpole'
    reset_low = [-0.05] * 4
    reset_high = [0.05] * 4
    # Gymnasium's bounds: twice the thresholds.
    observ_high = [_X_THRESHOLD * 2, np.inf, _THETA_THRESHOLD * 2, np.inf]
    action_count = 2

    def step(self, state, action):
        """One step of 0.02 s; episodes terminate where the cart left the
        track or the pole fell past 12 degrees."""
        with tf.name_scope('cartpole_step'):
            x, x_dot, theta, theta_dot = tf.unstack(state, axis=1)
            force = compiled_ops.where(
                    tf.equal(action, 1), tf.fill(tf.shape(x), _FORCE),
                    tf.fill(tf.shape(x), -_FORCE))
            cos_theta = tf.cos(theta)
            sin_theta = tf.sin(theta)
            temp = (
                    force + _POLE_MASS_LENGTH * tf.square(theta_dot) *
                    sin_theta) / _TOTAL_MASS
            theta_acc = (_GRAVITY * sin_theta - cos_theta * temp) / (
                    _LENGTH * (4.0 / 3.0 - _MASS_POLE * tf.square(cos_theta) /
                               _TOTAL_MASS))
            x_acc = temp - _POLE_MASS_LENGTH * theta_acc * cos_theta / (
                    _TOTAL_MASS)
            new_state = tf.stack([
                    x + _TAU * x_dot,
                    x_dot + _TAU * x_acc,
                    theta + _TAU * theta_dot,
                    theta_dot + _TAU * theta_acc], axis=1)
            new_x = new_state[:, 0]
            new_theta = new_state[:, 2]
            # |x| > threshold, without `Abs`, which XLA translates slowly
            # (`tools.compiled_ops`).
            terminated = tf.reduce_any(tf.stack([
                    new_x > _X_THRESHOLD, new_x < -_X_THRESHOLD,
                    new_theta > _THETA_THRESHOLD,
                    new_theta < -_THETA_THRESHOLD]), axis=0)
            reward = tf.ones_like(new_x)
            return new_state, new_state, reward, terminated
