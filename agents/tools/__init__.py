"""Generic infrastructure: environment batching, in-graph envs, the loop.

Names load lazily from their modules on first access. Environment worker
processes import `agents.tools.wrappers` alone and so never import TensorFlow;
the graph-side names (`InGraphBatchEnv`, `simulate`, `Loop`, ...) import it
when first used.
"""

import importlib

_EXPORTS = {
    'AttrDict': 'attr_dict',
    'BatchEnv': 'batch_env',
    'count_weights': 'count_weights',
    'InGraphBatchEnv': 'in_graph_batch_env',
    'InGraphEnv': 'in_graph_env',
    'Loop': 'loop',
    'MockAlgorithm': 'mock_algorithm',
    'MockEnvironment': 'mock_environment',
    'simulate': 'simulate',
    'StreamingMean': 'streaming_mean',
}
_MODULES = ('nested', 'wrappers')

__all__ = sorted(_EXPORTS) + list(_MODULES)


def __getattr__(name):
    if name in _MODULES:
        return importlib.import_module('agents.tools.' + name)
    if name in _EXPORTS:
        module = importlib.import_module('agents.tools.' + _EXPORTS[name])
        return getattr(module, name)
    raise AttributeError(f"module 'agents.tools' has no attribute '{name}'")


def __dir__():
    return __all__
