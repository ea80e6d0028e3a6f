"""Generic infrastructure: environment batching, in-graph envs, the loop.
Names load lazily, so that worker processes never import TensorFlow."""

import importlib
import sys
import types

_EXPORTS = {
    'AttrDict': 'attr_dict',
    'BatchEnv': 'batch_env',
    'count_weights': 'count_weights',
    'EnvPoolBatchEnv': 'envpool_batch_env',
    'FaultyEnvironment': 'agents.testing.faulty_environment',
    'identity_after': 'simulate',
    'InGraphBatchEnv': 'in_graph_batch_env',
    'InGraphEnv': 'in_graph_env',
    'keep_for_resume': 'resume_state',
    'Loop': 'loop',
    'MockAlgorithm': 'agents.testing.mock_algorithm',
    'MockEnvironment': 'agents.testing.mock_environment',
    'RayBatchEnv': 'ray_batch_env',
    'resume_variables': 'resume_state',
    'simulate': 'simulate',
    'SlicedBatchEnv': 'sliced_batch_env',
    'StepWatchdog': 'step_watchdog',
    'StreamingMean': 'streaming_mean',
}
_MODULES = (
    'batch_wrappers', 'gl_backend', 'mujoco_warnings', 'nested',
    'record_episodes', 'wrappers')

__all__ = sorted(_EXPORTS) + list(_MODULES)


class _ToolsModule(types.ModuleType):
    """Module type of `agents.tools`, which loads its names on first use."""

    def __getattribute__(self, name):
        # Before the module's attributes: the import system sets submodules
        # there, which would hide `simulate` and `count_weights`.
        if name in _EXPORTS:
            module_name = _EXPORTS[name]
            if '.' not in module_name:
                module_name = __name__ + '.' + module_name
            return getattr(importlib.import_module(module_name), name)
        return super().__getattribute__(name)

    def __getattr__(self, name):
        if name in _MODULES:
            return importlib.import_module(__name__ + '.' + name)
        raise AttributeError(
            f"module 'agents.tools' has no attribute '{name}'")

    def __dir__(self):
        return __all__

    def __reduce__(self):
        # Pickle by name like a plain module, so that closures referring to
        # `tools`, which cloudpickle sends to worker processes, still pickle.
        return importlib.import_module, (self.__name__,)


sys.modules[__name__].__class__ = _ToolsModule
