"""BatchPPO: proximal policy optimization inside the TensorFlow graph."""

from agents.algorithms.ppo.ppo import PPO
