"""Functions over nested tuples, lists, dicts and namedtuples.

A structure is a tuple, list, dict or namedtuple whose elements are again
structures or leaves; anything else (a number, a string, a tensor, an array,
None) is a leaf. The functions keep the containers' types (namedtuple classes
and dict subclasses included, a locked AttrDict stays locked) and the dicts'
key order. Several structures passed together must have the same nesting: a
dict where the first has a dict, with the same keys (matched by key, in the
order of the first structure), and a sequence of the same length where the
first has a tuple, list or namedtuple (these three mix freely, the result
takes the types of the first structure).
"""

import builtins
import collections

from agents.tools import attr_dict

# The keyword argument `flatten` of map, zip and filter shares its name with
# the function flatten by design of the interface.
# pylint: disable=redefined-outer-name

# The module defines map, zip and filter as its interface.
_builtin_zip = builtins.zip


def map(function, *structures, flatten=False):
    """Apply a function to the leaves of one or more structures.

    Args:
        function: Called with one leaf of each structure at every position.
        *structures: Structures of the same nesting.
        flatten: Return the results as a flat tuple instead of nested.

    Raises:
        TypeError: When no structure is given.
        ValueError: When the structures do not have the same nesting.

    Returns:
        A structure like the first one holding the results, or a tuple of
        the results in the order of `flatten()` when `flatten` is true.
    """
    if not structures:
        raise TypeError('map() needs at least one structure.')
    if flatten:
        return tuple(
                function(*leaves) for leaves in _zip_leaves(structures, ()))
    return _map(function, structures, ())


def zip(*structures, flatten=False):
    """Combine the leaves at each position of structures into tuples.

    As in the 2017 framework, a single structure comes back as it is (a copy
    with the same leaves), not with one-element tuples as its leaves.

    Args:
        *structures: Structures of the same nesting.
        flatten: Return a flat tuple of the leaf tuples instead of nested.

    Raises:
        TypeError: When no structure is given.
        ValueError: When the structures do not have the same nesting.

    Returns:
        A structure like the first one with tuples of leaves as its leaves, or
        a tuple of those tuples when `flatten` is true; for one structure,
        its leaves instead of one-element tuples.
    """
    if not structures:
        raise TypeError('zip() needs at least one structure.')
    if len(structures) == 1:
        return map(lambda leaf: leaf, structures[0], flatten=flatten)
    return map(lambda *leaves: leaves, *structures, flatten=flatten)


def flatten(structure):
    """Return the leaves of a structure as a tuple.

    Sequences are visited in order and dicts in their key order, depth first.

    Args:
        structure: Structure to flatten.

    Returns:
        Tuple of leaves.
    """
    return tuple(leaves[0] for leaves in _zip_leaves((structure,), ()))


def filter(predicate, *structures, flatten=False):
    """Keep only the leaves for which a predicate is true.

    Filtered leaves leave tuples, lists and dicts; containers emptied by the
    filtering are removed too, while containers that were empty to begin with
    stay. Namedtuples cannot drop fields, so removed fields become None. A
    single leaf that the predicate drops gives `()`, as in the 2017
    framework.

    Args:
        predicate: Called with one leaf of each structure at every position.
        *structures: Structures of the same nesting.
        flatten: Return the kept leaves as a flat tuple instead of nested.

    Raises:
        TypeError: When no structure is given.
        ValueError: When the structures do not have the same nesting.

    Returns:
        A structure like the first one with the kept leaves; with several
        structures its leaves are tuples of one leaf from each. A tuple of
        those leaves in the order of `flatten()` when `flatten` is true.
    """
    if not structures:
        raise TypeError('filter() needs at least one structure.')
    select = (lambda leaves: leaves[0]) if len(structures) == 1 else tuple
    if flatten:
        return tuple(
                select(leaves) for leaves in _zip_leaves(structures, ())
                if predicate(*leaves))
    result, keep = _filter(predicate, select, structures, ())
    if not keep and _kind(structures[0]) == 'leaf':
        return ()
    return result


def _map(function, structures, path):
    kind = _check_same_nesting(structures, path)
    first = structures[0]
    if kind == 'dict':
        return _rebuild_dict(first, [
                (key, _map(function, [s[key] for s in structures],
                           path + (key,)))
                for key in first])
    if kind == 'sequence':
        return _rebuild_sequence(first, [
                _map(function, elements, path + (index,))
                for index, elements in enumerate(_builtin_zip(*structures))])
    return function(*structures)


def _zip_leaves(structures, path):
    kind = _check_same_nesting(structures, path)
    if kind == 'dict':
        for key in structures[0]:
            yield from _zip_leaves(
                    [s[key] for s in structures], path + (key,))
    elif kind == 'sequence':
        for index, elements in enumerate(_builtin_zip(*structures)):
            yield from _zip_leaves(elements, path + (index,))
    else:
        yield tuple(structures)


def _filter(predicate, select, structures, path):
    # Returns the filtered structure and whether to keep it in its parent.
    kind = _check_same_nesting(structures, path)
    first = structures[0]
    if kind == 'leaf':
        keep = bool(predicate(*structures))
        return (select(structures) if keep else None), keep
    if kind == 'dict':
        children = [
                (key,) + _filter(
                        predicate, select, [s[key] for s in structures],
                        path + (key,))
                for key in first]
        result = _rebuild_dict(
                first, [(key, value) for key, value, keep in children if keep])
        return result, bool(result) or not first
    children = [
            _filter(predicate, select, elements, path + (index,))
            for index, elements in enumerate(_builtin_zip(*structures))]
    if _is_namedtuple(first):
        result = type(first)(*(value if keep else None
                               for value, keep in children))
        return result, any(keep for _, keep in children) or not first
    result = _rebuild_sequence(
            first, [value for value, keep in children if keep])
    return result, bool(result) or not first


def _check_same_nesting(structures, path):
    kinds = [_kind(structure) for structure in structures]
    first = structures[0]
    for index, (structure, kind) in enumerate(
            _builtin_zip(structures[1:], kinds[1:]), 1):
        if kind != kinds[0] or (
                kind == 'sequence' and len(structure) != len(first)):
            raise ValueError(
                    f'Structures differ at {_format_path(path)}: structure 0 '
                    f'has {_describe(first)} but structure {index} has '
                    f'{_describe(structure)}.')
        if kind == 'dict' and set(structure) != set(first):
            raise ValueError(
                    f'Structures differ at {_format_path(path)}: structure 0 '
                    f'has a dict with keys {list(first)} but structure '
                    f'{index} has a dict with keys {list(structure)}.')
    return kinds[0]


def _kind(structure):
    if isinstance(structure, dict):
        return 'dict'
    if isinstance(structure, (tuple, list)):
        return 'sequence'
    return 'leaf'


def _is_namedtuple(structure):
    return isinstance(structure, tuple) and hasattr(type(structure), '_fields')


def _rebuild_sequence(template, elements):
    if _is_namedtuple(template):
        return type(template)(*elements)
    return type(template)(elements)


def _rebuild_dict(template, items):
    if isinstance(template, collections.defaultdict):
        return type(template)(template.default_factory, items)
    result = type(template)(items)
    if isinstance(template, attr_dict.AttrDict):
        # Locked where the template is, whatever the constructor decided.
        result.__dict__['_locked'] = template.locked
    return result


def _describe(structure):
    name = type(structure).__name__
    if isinstance(structure, (tuple, list, dict)):
        return f'a {name} of length {len(structure)}'
    return f'a leaf of type {name}'


def _format_path(path):
    if not path:
        return 'the top level'
    return 'position ' + ''.join(f'[{key!r}]' for key in path)
