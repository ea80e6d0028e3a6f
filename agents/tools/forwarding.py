"""Attribute forwarding of wrappers and proxies: public names only (pickling,
copying and gymnasium probe private ones, and one not set yet would recurse
into `__getattr__`). No TensorFlow here: worker processes import it."""

import warnings


def read_only(name, doc):
    """A read-only property of the attribute `_<name>`."""
    return property(lambda self: getattr(self, '_' + name), doc=doc)


def check_public(owner, name):
    """Raise Python's `AttributeError` of `owner` for a private `name`."""
    if name.startswith('_'):
        raise AttributeError(
            f"'{type(owner).__name__}' object has no attribute '{name}'")


class Forwarding:
    """Mixin that forwards the public attributes a class lacks to the object
    that its subclass names in `_wrapped` (a property)."""

    def __getattr__(self, name):
        """Forward a public attribute to `_wrapped`."""
        check_public(self, name)
        return getattr(self._wrapped, name)


class BatchForwarding(Forwarding):
    """Mixin of a wrapper of a batch (`_wrapped`): its length, environments
    and the public attributes the wrapper lacks are the batch's."""

    def __len__(self):
        """Number of environments in the batch."""
        return len(self._wrapped)

    def __getitem__(self, index):
        """The environment `index` of the wrapped batch."""
        return self._wrapped[index]


def spec_of(env):
    """The gymnasium spec of an environment, or None, without the warning
    of wrappers of old gym environments (through shimmy) on every read."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            'ignore', message=r'.*while copying the environment spec')
        return getattr(env, 'spec', None)
