"""Attribute forwarding of wrappers and proxies: public names only.

Wrappers, batches and proxies of environments in workers read attributes
they do not define from what they wrap. Names starting with an underscore
are never forwarded: pickling, copying and gymnasium probe them, and a
lookup of a private attribute that construction or unpickling has not set
yet would otherwise recurse into `__getattr__`.

This module must not import TensorFlow: worker processes import it.
"""

import warnings


def check_public(owner, name):
    """Raise the `AttributeError` of a name that is never forwarded.

    Args:
        owner: The object whose `__getattr__` was asked.
        name: The attribute name.

    Raises:
        AttributeError: When `name` starts with an underscore; the message
            is Python's own for a missing attribute of `owner`.
    """
    if name.startswith('_'):
        raise AttributeError(
            f"'{type(owner).__name__}' object has no attribute '{name}'")


def spec_of(env):
    """The gymnasium spec of an environment, or None, without a warning.

    A gymnasium wrapper copies the spec of what it wraps to add itself to
    it. The spec of an environment of old gym (through shimmy's
    `GymV21CompatibilityV0`) lacks the field, and gymnasium warns on every
    read that it could not copy it (`'EnvSpec' object has no attribute
    'additional_wrappers'`) and returns None, which this returns quietly.

    Args:
        env: The environment.

    Returns:
        Its `spec` attribute, or None.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            'ignore', message=r'.*while copying the environment spec')
        return getattr(env, 'spec', None)
