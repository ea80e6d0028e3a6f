"""Environment constructors that configs name instead of a gymnasium id;
worker processes import it, so it must not import TensorFlow."""

import gymnasium as gym
import numpy as np


def pendulum_without_velocity(render_mode=None):
    """Pendulum-v1 observing only its angle (cosine and sine), so that a
    recurrent policy can outperform a feed-forward one; `visualize` passes
    render_mode='rgb_array'."""
    env = gym.make('Pendulum-v1', render_mode=render_mode)
    space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda observ: observ[:2], space)


def ant_without_contact_forces(render_mode=None):
    """Ant-v5 without the 78 contact forces in its observation, as the tasks
    of the published PPO scores (Ant-v4 leaves them out)."""
    return gym.make(
        'Ant-v5', include_cfrc_ext_in_observation=False,
        render_mode=render_mode)
