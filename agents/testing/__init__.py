"""Test doubles and contract checks shared by the tests of the package.

`MockEnvironment` and `MockAlgorithm` (deterministic doubles, also exported
by `agents.tools` under their 2017 names), `FaultyEnvironment` (an env that
fails on request), the environment contract mixin `env_contract`, the
in-graph task contract `task_contract`, and helpers for worker-process
tests `worker_testing`.
"""
