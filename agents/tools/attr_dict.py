"""Dictionary with attribute access that can be locked against edits."""

import contextlib


class AttrDict(dict):
    """Dictionary whose keys can also be read and written as attributes.

    A missing key raises an `AttributeError` that lists the keys (the 2017
    class returned None, which let typos pass). As in 2017, it is locked
    once constructed: edits raise a `RuntimeError` except inside
    `with config.unlocked:`. Nested dictionaries are not locked. Keys that
    name methods (`copy`, `items`, ...) are items only.
    """

    # Instances made by `__new__` alone (unpickling) are unlocked until their
    # state is restored.
    _locked = False

    def __init__(self, *args, **kwargs):
        """Create a locked dictionary, with the arguments of `dict()`."""
        super().__init__(*args, **kwargs)
        self.__dict__['_locked'] = True

    @property
    def locked(self):
        """Whether edits to this dictionary raise an error."""
        return self._locked

    @property
    @contextlib.contextmanager
    def unlocked(self):
        """Context manager that allows edits, then restores the lock state."""
        previous = self._locked
        self.__dict__['_locked'] = False
        try:
            yield self
        finally:
            self.__dict__['_locked'] = previous

    def lock(self):
        """Make later edits raise an error until unlocked again."""
        self.__dict__['_locked'] = True

    def copy(self, **updates):
        """A shallow copy with the same lock state and the keys `updates`."""
        result = type(self)(self, **updates)
        result.__dict__['_locked'] = self._locked
        return result

    def __getattr__(self, name):
        if name.startswith('__') and name.endswith('__'):
            # Protocols like copy and pickle probe for special methods.
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            available = ', '.join(sorted(repr(key) for key in self)) or 'none'
            raise AttributeError(
                    f'{type(self).__name__} has no key {name!r}; available '
                    f'keys: {available}.') from None

    def __setattr__(self, name, value):
        if hasattr(type(self), name):
            raise AttributeError(
                    f'Cannot set {name!r} as an attribute because it names '
                    f'a member of {type(self).__name__}; use item access '
                    f'[{name!r}] instead.')
        self[name] = value

    def __delattr__(self, name):
        if name not in self:
            raise AttributeError(
                    f'{type(self).__name__} has no key {name!r} to delete.')
        del self[name]

    def __setitem__(self, key, value):
        self._check_unlocked(f'set key {key!r}')
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._check_unlocked(f'delete key {key!r}')
        super().__delitem__(key)

    def __ior__(self, other):
        self.update(other)
        return self

    def update(self, *args, **kwargs):
        """`dict.update`; a RuntimeError when locked."""
        if self._locked:
            keys = ', '.join(repr(key) for key in dict(*args, **kwargs))
            self._check_unlocked('update keys ' + keys)
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        """`dict.setdefault`; a RuntimeError when locked and `key` missing."""
        if key not in self:
            self._check_unlocked(f'set key {key!r}')
        return super().setdefault(key, default)

    def pop(self, key, *default):
        """`dict.pop`; a RuntimeError when locked."""
        self._check_unlocked(f'delete key {key!r}')
        return super().pop(key, *default)

    def popitem(self):
        """`dict.popitem`; a RuntimeError when locked."""
        self._check_unlocked('delete the last key')
        return super().popitem()

    def clear(self):
        """`dict.clear`; a RuntimeError when locked."""
        self._check_unlocked('delete all keys')
        super().clear()

    def __reduce__(self):
        # Items before the lock state: the default protocol of deepcopy
        # sets the state first, then items, which a locked dict refuses.
        return type(self), (), (dict(self), self._locked)

    def __setstate__(self, state):
        items, locked = state
        dict.update(self, items)
        self.__dict__['_locked'] = locked

    def __dir__(self):
        keys = [key for key in self if isinstance(key, str)]
        return sorted(set(super().__dir__()) | set(keys))

    def _check_unlocked(self, edit):
        """Raise the RuntimeError of an `edit` when locked."""
        if self._locked:
            raise RuntimeError(
                    f'Cannot {edit} of a locked {type(self).__name__}; edit '
                    "it inside 'with config.unlocked:'.")
