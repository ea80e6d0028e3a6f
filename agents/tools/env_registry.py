"""Carry the trainer's environment registrations into worker processes.

A research package registers its tasks when it is imported, often by the
training script alone: with `gymnasium.register`, or, written for old gym
(PyBullet's `pybullet_envs`, whose environments reach gymnasium through
shimmy's `GymV21CompatibilityV0`), in old gym's registry. Worker processes
start from a fresh interpreter (fork server, spawn, a Ray actor) and import
neither that package nor, by default, the main module, so `make` there
would not know the id. The registrations travel with the constructor
instead. Old gym is never imported here unless the trainer imported it.

This module must not import TensorFlow: worker processes import it.
"""

import importlib
import pickle
import sys

import cloudpickle

# Registries by module name, and the prefix of the entry points of the tasks
# every process has, which stay behind.
_REGISTRIES = (('gymnasium', 'gymnasium.'), ('gym', 'gym.'))


def capture():
    """The registered specs that a fresh import of their package lacks.

    Gymnasium's registry, and old gym's where this process imported old
    gym. Specs whose entry point is a string inside the package itself are
    left out, since every process has them. Specs that cannot be pickled
    are left out too (a worker that needs one fails as it would have
    without this).

    Returns:
        List of tuples of the registry's module name and a pickled
        `EnvSpec`.
    """
    specs = []
    for module_name, builtin in _REGISTRIES:
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for spec in list(_specs_of(module).values()):
            entry_point = getattr(spec, 'entry_point', None)
            if isinstance(entry_point, str) and entry_point.startswith(
                    builtin):
                continue
            try:
                specs.append((module_name, cloudpickle.dumps(spec)))
            except (pickle.PicklingError, TypeError, AttributeError):
                continue
    return specs


def restore(specs):
    """Register the captured specs that this process does not have yet.

    Args:
        specs: List from `capture`.
    """
    for module_name, payload in specs:
        registry = _specs_of(importlib.import_module(module_name))
        spec = pickle.loads(payload)
        if spec.id not in registry:
            registry[spec.id] = spec


def _specs_of(module):
    """The dict of id to spec of gymnasium or old gym; empty without one.

    Old gym before 0.26 keeps it as `env_specs` of a registry object.
    """
    registry = getattr(getattr(module, 'envs', None), 'registry', None)
    registry = getattr(registry, 'env_specs', registry)
    return registry if isinstance(registry, dict) else {}


class WithRegistry:
    """A constructor that first registers the creating process's tasks.

    Args:
        constructor: The environment constructor to call.
    """

    def __init__(self, constructor):
        self._constructor = constructor
        self._specs = capture()

    def __call__(self, *args, **kwargs):
        restore(self._specs)
        return self._constructor(*args, **kwargs)
