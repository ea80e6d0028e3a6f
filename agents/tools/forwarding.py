"""Attribute forwarding of wrappers and proxies: public names only.

Wrappers, batches and proxies of environments in workers read attributes
they do not define from what they wrap. Names starting with an underscore
are never forwarded: pickling, copying and gymnasium probe them, and a
lookup of a private attribute that construction or unpickling has not set
yet would otherwise recurse into `__getattr__`.

This module must not import TensorFlow: worker processes import it.
"""


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
