"""Tests for the AttrDict configuration dictionary."""

import copy
import operator
import pickle

import pytest

from agents.tools import attr_dict

AttrDict = attr_dict.AttrDict


def _assert_refused(edit_, what):
    """An edit of a locked AttrDict raises the one line naming the edit.

    Args:
        edit_: Callable that tries the edit.
        what: The edit as the message names it, e.g. "set key 'a'".
    """
    with pytest.raises(RuntimeError) as error:
        edit_()
    assert str(error.value) == (
            f"Cannot {what} of a locked AttrDict; edit it inside "
            "'with config.unlocked:'.")


def test_construct_like_dict():
    """Accepts the arguments of dict()."""
    config = AttrDict({'a': 1}, b=2)
    assert config == {'a': 1, 'b': 2}
    assert list(config) == ['a', 'b']
    assert isinstance(config, dict)
    assert AttrDict([('x', 3)]) == {'x': 3}
    assert not AttrDict()


def test_locked_once_constructed_as_in_2017():
    """Assignment raises until `with config.unlocked:`."""
    config = AttrDict(a=1)
    assert config.locked
    _assert_refused(lambda: setattr(config, 'a', 2), "set key 'a'")
    with config.unlocked:
        config.a = 2
    assert config == {'a': 2} and config.locked


def test_immutable_create():
    """An empty AttrDict is locked on creation too (2017's test)."""
    empty = AttrDict()
    assert empty.locked
    _assert_refused(lambda: setattr(empty, 'foo', 42), "set key 'foo'")
    _assert_refused(
            lambda: operator.setitem(empty, 'foo', 42), "set key 'foo'")
    with pytest.raises(RuntimeError):
        empty.update(foo=42)
    with pytest.raises(RuntimeError):
        empty.setdefault('foo', 42)
    assert not empty
    with empty.unlocked:
        empty.foo = 42
    assert empty == {'foo': 42} and empty.locked
    assert AttrDict({}).locked
    assert AttrDict([]).locked


def test_attribute_read_and_write():
    """Attributes read, write and delete keys."""
    config = AttrDict()
    with config.unlocked:
        config.a = 1
        assert config.a == 1
        config.b = 2
        config['c'] = 3
        assert config == {'a': 1, 'b': 2, 'c': 3}
        assert config.c == 3
        del config.a
    assert config == {'b': 2, 'c': 3}


def test_missing_attribute_names_key_and_lists_available():
    """A missing key names itself and the keys there are."""
    config = AttrDict(beta=1, alpha=2)
    with pytest.raises(AttributeError) as error:
        _ = config.gamma
    assert str(error.value) == (
            "AttrDict has no key 'gamma'; available keys: 'alpha', 'beta'.")
    with pytest.raises(AttributeError) as error:
        _ = AttrDict().gamma
    assert str(error.value) == (
            "AttrDict has no key 'gamma'; available keys: none.")
    assert not hasattr(config, 'gamma')
    assert getattr(config, 'gamma', 42) == 42


def test_delete_missing_attribute():
    """Deleting a missing key raises AttributeError."""
    config = AttrDict()
    with config.unlocked, pytest.raises(AttributeError) as error:
        del config.a
    assert str(error.value) == "AttrDict has no key 'a' to delete."


def test_member_names_cannot_be_set_as_attributes():
    """Keys that shadow methods need item access."""
    config = AttrDict()
    with pytest.raises(AttributeError) as error:
        config.items = 3
    assert str(error.value) == (
            "Cannot set 'items' as an attribute because it names a member "
            "of AttrDict; use item access ['items'] instead.")
    with config.unlocked:
        config['items'] = 3
    assert config['items'] == 3
    assert callable(config.items)


def test_locked_dict_rejects_every_edit():
    """Every kind of edit fails on a locked dict."""
    config = AttrDict(a=1, b=2)
    config.lock()
    assert config.locked
    _assert_refused(lambda: setattr(config, 'a', 5), "set key 'a'")
    _assert_refused(lambda: operator.setitem(config, 'a', 5), "set key 'a'")
    _assert_refused(lambda: delattr(config, 'b'), "delete key 'b'")
    _assert_refused(
            lambda: config.update(a=3, c=4), "update keys 'a', 'c'")
    with pytest.raises(RuntimeError):
        config |= {'c': 1}
    with pytest.raises(RuntimeError):
        config.pop('a')
    with pytest.raises(RuntimeError):
        config.popitem()
    _assert_refused(config.clear, 'delete all keys')
    with pytest.raises(RuntimeError):
        config.setdefault('c', 3)
    assert config.setdefault('a', 7) == 1
    assert config == {'a': 1, 'b': 2}


def test_unlocked_context_restores_lock():
    """Edits work inside unlocked and the lock returns."""
    config = AttrDict(a=1)
    config.lock()
    with config.unlocked:
        config.a = 2
        config.b = 3
        with config.unlocked:
            config.c = 4
        config.d = 5
    assert config.locked
    assert config == {'a': 2, 'b': 3, 'c': 4, 'd': 5}
    with pytest.raises(RuntimeError):
        config.a = 0


def test_unlocked_context_restores_lock_after_exception():
    """An exception inside unlocked still restores the lock."""
    config = AttrDict(a=1)
    config.lock()
    with pytest.raises(ValueError):
        with config.unlocked:
            raise ValueError('inside')
    assert config.locked


def test_unlocked_context_keeps_unlocked_dict_unlocked():
    """Leaving a nested unlocked does not lock the outer unlocked scope."""
    config = AttrDict()
    with config.unlocked:
        with config.unlocked:
            config.a = 1
        assert not config.locked
        config.b = 2
    assert config.locked
    assert config == {'a': 1, 'b': 2}


def test_copy_keeps_lock_state_and_applies_updates():
    """copy() keeps the lock state and applies updates."""
    config = AttrDict(a=1, b=2)
    config.lock()
    other = config.copy(b=3, c=4)
    assert other.__class__ is AttrDict
    assert other == {'a': 1, 'b': 3, 'c': 4}
    assert other.locked
    assert config == {'a': 1, 'b': 2}
    with pytest.raises(RuntimeError):
        other.a = 5
    config = AttrDict()
    with config.unlocked:
        config.a = 1
        unlocked = config.copy()
    assert config.locked
    assert not unlocked.locked
    unlocked.a = 2
    assert unlocked == {'a': 2} and config == {'a': 1}


def test_pickle_keeps_items_and_lock_state():
    """Pickling round-trips items and lock state."""
    nested = AttrDict(b=[2])
    config = AttrDict(a=1, nested=nested)
    with config.unlocked:
        restored = pickle.loads(pickle.dumps(config))
    assert restored.__class__ is AttrDict
    assert restored == config
    assert not restored.locked
    assert restored.nested.locked
    assert restored.nested.b == [2]
    assert pickle.loads(pickle.dumps(config)).locked
    assert pickle.loads(pickle.dumps(AttrDict())).locked


def test_deepcopy_and_copy():
    """copy.copy and copy.deepcopy keep the lock state."""
    config = AttrDict(a=[1], b=AttrDict(c=2))
    config.lock()
    deep = copy.deepcopy(config)
    assert deep == config
    assert deep.locked
    assert deep.a is not config.a
    assert deep.b is not config.b
    shallow = copy.copy(config)
    assert shallow.locked
    assert shallow.a is config.a


def test_deepcopy_of_self_reference():
    """Deep copies of self-referencing dicts work."""
    config = AttrDict(a=1)
    with config.unlocked:
        config.self = config
    deep = copy.deepcopy(config)
    assert deep.self is deep
    assert deep.locked


def test_dir_lists_keys():
    """dir() lists keys for completion."""
    config = AttrDict(alpha=1)
    assert 'alpha' in dir(config)
    assert 'lock' in dir(config)
