"""Carry the ids a research package registered (in gymnasium's registry,
or old gym's for packages like `pybullet_envs`) to the fresh interpreters of
worker processes. No TensorFlow here: workers import it."""

import importlib
import pickle
import sys

import cloudpickle


def capture():
    """The picklable specs that a fresh import of their registry lacks, as
    tuples of the registry's module name and the pickled spec."""
    specs = []
    for module_name in ('gymnasium', 'gym'):
        for spec in list(_specs_of(sys.modules.get(module_name)).values()):
            entry_point = getattr(spec, 'entry_point', None)
            if isinstance(entry_point, str) and entry_point.startswith(
                    module_name + '.'):
                continue
            try:
                specs.append((module_name, cloudpickle.dumps(spec)))
            except (pickle.PicklingError, TypeError, AttributeError):
                continue
    return specs


def restore(specs):
    """Register the specs of `capture` that this process lacks."""
    for module_name, payload in specs:
        spec = pickle.loads(payload)
        _specs_of(importlib.import_module(module_name)).setdefault(
            spec.id, spec)


def _specs_of(module):
    """The dict of id to spec of gymnasium or old gym (or None); else empty."""
    registry = getattr(getattr(module, 'envs', None), 'registry', None)
    registry = getattr(registry, 'env_specs', registry)  # Old gym < 0.26.
    return registry if isinstance(registry, dict) else {}


class WithRegistry:
    """The environment `constructor`, which first registers the tasks of
    the process that created this."""

    def __init__(self, constructor):
        self._constructor = constructor
        self._specs = capture()

    def __call__(self, *args, **kwargs):
        restore(self._specs)
        return self._constructor(*args, **kwargs)
