"""Carry the trainer's gymnasium registrations into worker processes.

A research package registers its tasks with `gymnasium.register` when it is
imported, often by the training script alone. Worker processes start from a
fresh interpreter (fork server or spawn) and import neither that package nor,
by default, the main module, so `gymnasium.make` there would not know the id.
The registrations travel with the constructor instead.

This module must not import TensorFlow: worker processes import it.
"""

import pickle

import cloudpickle
import gymnasium as gym

_BUILTIN_PREFIX = 'gymnasium.'


def capture():
    """The registered specs that a fresh `import gymnasium` does not make.

    Specs whose entry point is a string inside gymnasium are left out, since
    every process has them. Specs that cannot be pickled are left out too
    (a worker that needs one fails as it would have without this).

    Returns:
        List of pickled `gymnasium.envs.registration.EnvSpec`s.
    """
    specs = []
    for spec in gym.envs.registry.values():
        entry_point = spec.entry_point
        if isinstance(entry_point, str) and entry_point.startswith(
                _BUILTIN_PREFIX):
            continue
        try:
            specs.append(cloudpickle.dumps(spec))
        except (pickle.PicklingError, TypeError, AttributeError):
            continue
    return specs


def restore(specs):
    """Register the captured specs that this process does not have yet.

    Args:
        specs: List of pickled specs from `capture`.
    """
    for payload in specs:
        spec = pickle.loads(payload)
        if spec.id not in gym.envs.registry:
            gym.envs.registry[spec.id] = spec


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
