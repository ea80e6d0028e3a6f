"""Reusable in-graph building blocks for algorithms."""

from agents.parts.distributions import Categorical
from agents.parts.distributions import DiagonalGaussian
from agents.parts.episode_memory import EpisodeMemory
from agents.parts.iterate_sequences import iterate_sequences
from agents.parts.iterate_sequences import num_items
from agents.parts.iterate_sequences import plan_sequences
from agents.parts.streaming_normalize import StreamingNormalize
