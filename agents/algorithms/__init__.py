"""Reinforcement learning algorithms built on agents.tools and agents.parts."""

from agents.algorithms.ppo import PPO
