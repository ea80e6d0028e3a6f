"""Functions over nested tuples, lists, dicts and namedtuples.

Other values are leaves. Results keep the containers' types (a locked
AttrDict stays locked) and the first structure's dict key order. Structures
passed together must have the same nesting (tuples, lists and namedtuples
mix freely).
"""

import builtins
import collections

from agents.tools import attr_dict

# The 2017 interface: map, zip and filter, and their argument `flatten`.
# pylint: disable=redefined-outer-name
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
        A structure like the first one holding the results.
    """
    if not structures:
        raise TypeError('map() needs at least one structure.')
    if flatten:
        return tuple(
                function(*leaves) for leaves in _zip_leaves(structures, ()))
    return _map(function, structures, ())


def zip(*structures, flatten=False):
    """Combine the leaves at each position of structures into tuples.

    A single structure comes back as a copy (as in 2017), not with
    one-element tuples. Arguments and errors as `map`.

    Returns:
        A structure like the first one with tuples of leaves as its leaves.
    """
    if not structures:
        raise TypeError('zip() needs at least one structure.')
    if len(structures) == 1:
        return map(lambda leaf: leaf, structures[0], flatten=flatten)
    return map(lambda *leaves: leaves, *structures, flatten=flatten)


def flatten(structure):
    """The leaves of a structure as a tuple, depth first in order."""
    return tuple(leaves[0] for leaves in _zip_leaves((structure,), ()))


def filter(predicate, *structures, flatten=False):
    """Keep only the leaves for which a predicate is true.

    Containers emptied by the filter are removed (those empty before stay);
    removed namedtuple fields become None; a dropped single leaf gives `()`
    (as in 2017). Arguments and errors as `map`.

    Returns:
        A structure like the first one with the kept leaves, tuples of one
        leaf of each structure where several are given.
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
