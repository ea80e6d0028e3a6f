"""batch-ppo: efficient batched reinforcement learning in TensorFlow.

Subpackages load on first access, so that environment worker processes, which
import only `agents.tools.wrappers`, never pay for importing TensorFlow.
"""

import importlib

_SUBPACKAGES = (
    'tools', 'environments', 'parts', 'algorithms', 'training', 'testing',
    'scripts')


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module('agents.' + name)
    raise AttributeError(f"module 'agents' has no attribute '{name}'")
