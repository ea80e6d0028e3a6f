"""Environment constructors that configs name instead of a gymnasium id.

Worker processes import this module, so it must not import TensorFlow.
"""

import gymnasium as gym
import numpy as np


def pendulum_without_velocity(render_mode=None):
    """Pendulum-v1 that observes only the angle, as its cosine and sine.

    Without the angular velocity a policy must infer it over time, so a
    recurrent policy can outperform a feed-forward one.

    Args:
      render_mode: Gymnasium render mode (`visualize` passes 'rgb_array').

    Returns:
      Gymnasium environment with a Box(-1, 1, (2,)) observation space.
    """
    env = gym.make('Pendulum-v1', render_mode=render_mode)
    space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    return gym.wrappers.TransformObservation(
        env, lambda observ: observ[:2], space)


def ant_without_contact_forces(render_mode=None):
    """Ant-v5 without the external contact forces in its observation.

    The published PPO scores come from tasks without the 78 contact forces
    that Ant-v5 appends by default (Ant-v4 leaves them out; Ant-v3 under
    mujoco-py 2.0 and later observed zeros).

    Args:
      render_mode: Gymnasium render mode (`visualize` passes 'rgb_array').

    Returns:
      Gymnasium environment with a 27-dimensional observation.
    """
    return gym.make(
        'Ant-v5', include_cfrc_ext_in_observation=False,
        render_mode=render_mode)
