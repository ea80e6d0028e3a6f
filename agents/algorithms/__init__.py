"""Reinforcement learning algorithms built on agents.tools and agents.parts."""
