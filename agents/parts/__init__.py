"""Reusable in-graph building blocks for algorithms."""
