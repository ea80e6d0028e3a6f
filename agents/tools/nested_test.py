"""Tests for map, zip, flatten and filter over nested structures."""

import collections

import numpy as np
import pytest

from agents.tools import attr_dict
from agents.tools import nested

Point = collections.namedtuple('Point', 'x, y')
Pair = collections.namedtuple('Pair', 'first, second')


def test_map_tuple_list_dict_namedtuple():
    """Each container kind keeps its type and order."""
    structure = (1, [2, 3], {'b': 4, 'a': 5}, Point(6, 7))
    result = nested.map(lambda x: 10 * x, structure)
    assert result == (10, [20, 30], {'b': 40, 'a': 50}, Point(60, 70))
    assert isinstance(result[1], list)
    assert list(result[2]) == ['b', 'a']
    assert isinstance(result[3], Point)


def test_map_leaf_and_empty_containers():
    """A leaf maps directly; empty containers stay empty."""
    assert nested.map(lambda x: x + 1, 3) == 4
    assert nested.map(lambda x: x + 1, ((), [], {})) == ((), [], {})


def test_map_several_structures():
    """Leaves at the same position are passed together."""
    first = {'a': (1, 2), 'b': Point(3, [4])}
    second = {'b': Point(30, [40]), 'a': (10, 20)}
    result = nested.map(lambda x, y: x + y, first, second)
    assert result == {'a': (11, 22), 'b': Point(33, [44])}
    assert list(result) == ['a', 'b']


def test_map_flatten():
    """Flattened results follow the leaf order of flatten()."""
    structure = {'b': (1, 2), 'a': [3]}
    assert nested.map(lambda x: -x, structure, flatten=True) == (-1, -2, -3)


def test_map_keeps_dict_subclasses():
    """OrderedDict, defaultdict and locked AttrDict survive."""
    ordered = collections.OrderedDict([('z', 1), ('y', 2)])
    result = nested.map(str, ordered)
    assert isinstance(result, collections.OrderedDict)
    assert list(result.items()) == [('z', '1'), ('y', '2')]
    default = collections.defaultdict(list, {'a': 1})
    result = nested.map(str, default)
    assert isinstance(result, collections.defaultdict)
    assert result.default_factory is list
    config = attr_dict.AttrDict(a=1)
    config.lock()
    result = nested.map(lambda x: x + 1, config)
    assert isinstance(result, attr_dict.AttrDict)
    assert result.a == 2
    assert result.locked


def test_leaves_are_not_traversed():
    """Strings, arrays and None are leaves."""
    array = np.arange(3)
    structure = ('ab', array, None)
    assert nested.flatten(structure) == ('ab', array, None)
    assert nested.map(type, structure) == (str, np.ndarray, type(None))


def test_mixed_sequences_take_first_type():
    """Tuples, lists and namedtuples of equal length mix."""
    result = nested.map(lambda x, y: x * y, Point(1, 2), [3, 4])
    assert result == Point(3, 8)
    assert isinstance(result, Point)


def test_map_needs_a_structure():
    """Calling map() without structures is a TypeError."""
    with pytest.raises(TypeError) as error:
        nested.map(lambda: 1)
    assert str(error.value) == 'map() needs at least one structure.'


def test_mismatched_length():
    """Sequences of different length are reported with their path."""
    with pytest.raises(ValueError) as error:
        nested.map(lambda x, y: x, {'a': [(1, 2)]}, {'a': [(1, 2, 3)]})
    assert str(error.value) == (
            "Structures differ at position ['a'][0]: structure 0 has a tuple "
            'of length 2 but structure 1 has a tuple of length 3.')


def test_mismatched_kind():
    """A leaf where the first has a container is reported."""
    with pytest.raises(ValueError) as error:
        nested.zip((1, 2), (1, [3]), (1, 2))
    assert str(error.value) == (
            'Structures differ at position [1]: structure 0 has a leaf of '
            'type int but structure 1 has a list of length 1.')
    with pytest.raises(ValueError) as error:
        nested.flatten(nested.map(lambda x, y: x, (1,), {'a': 1}))
    assert str(error.value) == (
            'Structures differ at the top level: structure 0 has a tuple of '
            'length 1 but structure 1 has a dict of length 1.')


def test_mismatched_dict_keys():
    """Dicts with different keys are reported with both key lists."""
    with pytest.raises(ValueError) as error:
        nested.map(lambda x, y: x, {'a': 1, 'b': 2}, {'a': 1, 'c': 2})
    assert str(error.value) == (
            "Structures differ at the top level: structure 0 has a dict with "
            "keys ['a', 'b'] but structure 1 has a dict with keys "
            "['a', 'c'].")


def test_mismatch_found_with_flatten():
    """The flat variants check the nesting too."""
    with pytest.raises(ValueError):
        nested.map(lambda x, y: x, (1, 2), (1,), flatten=True)
    with pytest.raises(ValueError):
        nested.filter(lambda x, y: x, (1, 2), (1,), flatten=True)


def test_zip():
    """Leaves become tuples of the leaves of each structure."""
    first = {'a': Point(1, 2), 'b': [3]}
    second = {'a': Point(4, 5), 'b': [6]}
    third = {'a': Point(7, 8), 'b': [9]}
    result = nested.zip(first, second, third)
    assert result == {'a': Point((1, 4, 7), (2, 5, 8)), 'b': [(3, 6, 9)]}
    assert isinstance(result['a'], Point)
    assert nested.zip(first, second, flatten=True) == (
            (1, 4), (2, 5), (3, 6))


def test_zip_single_structure_returns_it_unchanged():
    """As in 2017, one structure comes back as it is, not as 1-tuples."""
    structure = {'a': [1, (2,)], 'b': Point(3, 4)}
    assert nested.zip(structure) == structure
    assert isinstance(nested.zip(structure)['b'], Point)
    assert nested.zip(5) == 5
    assert nested.zip(structure, flatten=True) == (1, 2, 3, 4)


def test_zip_needs_a_structure():
    """Calling zip() without structures is a TypeError."""
    with pytest.raises(TypeError) as error:
        nested.zip()
    assert str(error.value) == 'zip() needs at least one structure.'


def test_flatten_order():
    """Depth first, sequences in order, dicts in key order."""
    structure = {'z': (1, [2, {'y': 3, 'x': 4}]), 'a': Point(5, (6,))}
    assert nested.flatten(structure) == (1, 2, 3, 4, 5, 6)
    assert nested.flatten(7) == (7,)
    assert not nested.flatten(((), {}, []))


def test_filter_tuple_list_dict():
    """Failing leaves leave tuples, lists and dicts."""
    structure = (1, [2, 3, 4], {'a': 5, 'b': 6})
    result = nested.filter(lambda x: x % 2 == 0, structure)
    assert result == ([2, 4], {'b': 6})
    assert isinstance(result[0], list)


def test_filter_namedtuple_fields_become_none():
    """Namedtuples keep their fields, set to None when filtered."""
    structure = Pair(Point(1, 2), Point(3, 5))
    result = nested.filter(lambda x: x % 2 == 0, structure)
    assert result == Pair(Point(None, 2), None)
    assert isinstance(result, Pair)
    assert isinstance(result.first, Point)


def test_filter_removes_emptied_but_keeps_empty_containers():
    """Only containers emptied by the filter disappear."""
    structure = {'a': (1, 3), 'b': (), 'c': [2], 'd': {}}
    result = nested.filter(lambda x: x == 2, structure)
    assert result == {'b': (), 'c': [2], 'd': {}}
    assert nested.filter(lambda x: False, (1, (2,))) == ()
    # A dropped single leaf gives (), as in 2017.
    assert nested.filter(lambda x: False, 1) == ()
    assert nested.filter(lambda x: True, 1) == 1


def test_filter_several_structures():
    """The predicate sees one leaf of each; kept leaves are tuples."""
    values = {'a': 1, 'b': [2, 3]}
    masks = {'a': True, 'b': [False, True]}
    result = nested.filter(lambda v, m: m, values, masks)
    assert result == {'a': (1, True), 'b': [(3, True)]}
    assert nested.filter(lambda v, m: m, values, masks, flatten=True) == (
            (1, True), (3, True))


def test_filter_flatten():
    """The flat variant returns the kept leaves in order."""
    structure = Pair({'b': 1, 'a': 2}, [3, 4])
    result = nested.filter(lambda x: x > 1, structure, flatten=True)
    assert result == (2, 3, 4)


def test_filter_needs_a_structure():
    """Calling filter() without structures is a TypeError."""
    with pytest.raises(TypeError) as error:
        nested.filter(bool)
    assert str(error.value) == 'filter() needs at least one structure.'
