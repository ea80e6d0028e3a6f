"""Dictionary with attribute access that can be locked against edits."""

import contextlib


class AttrDict(dict):
    """Dictionary whose keys can also be read and written as attributes.

    Configurations are `AttrDict`s: `config.learning_rate` reads the key
    `'learning_rate'`, and reading a missing key raises an `AttributeError`
    that lists the keys (the 2017 class returned None, which let typos
    pass). As in 2017, every dictionary is locked once constructed, an
    empty `AttrDict()` included: every edit raises a `RuntimeError`, so that
    code receiving a configuration cannot change it by accident; pass the
    values at construction or edit inside `with config.unlocked:`. Locking
    applies to this dictionary only, not to dictionaries nested in its
    values.

    Keys that name methods of the class (`copy`, `items`, `lock`, ...) stay
    reachable with item access (`config['items']`) only.
    """

    # Class default, so that instances created through `__new__` alone
    # (without `__init__`) behave as unlocked until their state is restored.
    _locked = False

    def __init__(self, *args, **kwargs):
        """Create a dictionary, with the arguments of `dict()`.

        It is locked, also when empty, as in 2017.

        Args:
            *args: Optional mapping or iterable of key-value pairs.
            **kwargs: Further keys and values.
        """
        super().__init__(*args, **kwargs)
        self.__dict__['_locked'] = True

    @property
    def locked(self):
        """Whether edits to this dictionary raise an error."""
        return self._locked

    @property
    def unlocked(self):
        """Context manager that allows edits while it is entered.

        The previous lock state is restored on exit, also after an exception,
        so nested uses work.

        Returns:
            A context manager.
        """
        return self._unlocked_context()

    def lock(self):
        """Make later edits raise an error until unlocked again."""
        self.__dict__['_locked'] = True

    def copy(self, **updates):
        """Return a shallow copy with the same lock state.

        Args:
            **updates: Keys to set or replace in the copy; allowed also when
                the dictionary is locked, since it does not change this one.

        Returns:
            A new dictionary of the same type.
        """
        result = type(self)(self)
        dict.update(result, updates)
        result.__dict__['_locked'] = self._locked
        return result

    def __getattr__(self, name):
        # Only called when normal attribute lookup fails.
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
        if self._locked:
            self._check_unlocked('update keys ' + _format_keys(dict(other)))
        return super().__ior__(other)

    def update(self, *args, **kwargs):
        """Update keys as `dict.update` does.

        Args:
            *args: Optional mapping or iterable of key-value pairs.
            **kwargs: Further keys and values.

        Raises:
            RuntimeError: When the dictionary is locked.
        """
        if self._locked:
            keys = dict(*args, **kwargs)
            self._check_unlocked('update keys ' + _format_keys(keys))
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        """Return the value of `key`, first setting it to `default` if missing.

        Args:
            key: Key to look up.
            default: Value stored when the key is missing.

        Raises:
            RuntimeError: When the key is missing and the dictionary is locked.

        Returns:
            The value of the key.
        """
        if key not in self:
            self._check_unlocked(f'set key {key!r}')
        return super().setdefault(key, default)

    def pop(self, key, *default):
        """Remove `key` and return its value, as `dict.pop` does.

        Args:
            key: Key to remove.
            *default: Optional value returned when the key is missing.

        Raises:
            RuntimeError: When the dictionary is locked.

        Returns:
            The removed value, or the default.
        """
        self._check_unlocked(f'delete key {key!r}')
        return super().pop(key, *default)

    def popitem(self):
        """Remove and return the last inserted key-value pair.

        Raises:
            RuntimeError: When the dictionary is locked.

        Returns:
            Tuple of key and value.
        """
        self._check_unlocked('delete the last key')
        return super().popitem()

    def clear(self):
        """Remove all keys.

        Raises:
            RuntimeError: When the dictionary is locked.
        """
        self._check_unlocked('delete all keys')
        super().clear()

    def __reduce__(self):
        # Restore the items before the lock state, because the default
        # protocol of copy.deepcopy() sets the state first and then assigns
        # items one by one, which a locked dictionary refuses.
        return type(self), (), (dict(self), self._locked)

    def __setstate__(self, state):
        items, locked = state
        dict.update(self, items)
        self.__dict__['_locked'] = locked

    def __dir__(self):
        keys = [key for key in self if isinstance(key, str)]
        return sorted(set(super().__dir__()) | set(keys))

    @contextlib.contextmanager
    def _unlocked_context(self):
        previous = self._locked
        self.__dict__['_locked'] = False
        try:
            yield self
        finally:
            self.__dict__['_locked'] = previous

    def _check_unlocked(self, edit):
        if self._locked:
            raise RuntimeError(
                    f'Cannot {edit} of a locked {type(self).__name__}; edit '
                    "it inside 'with config.unlocked:'.")


def _format_keys(keys):
    return ', '.join(repr(key) for key in keys)
