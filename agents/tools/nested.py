"""Map, zip, filter and flatten nested tuples, lists, dicts and namedtuples
(other values are leaves), keeping the containers' types and lock states and
the first structure's key order; tuples, lists and namedtuples mix freely."""

import builtins
import collections

from agents.tools import attr_dict

# The 2017 interface: map, zip and filter, and their argument `flatten`.
# pylint: disable=redefined-outer-name,redefined-builtin

# What `filter` returns for a removed leaf, and its containers for a
# container that it emptied.
_DROPPED = object()


def map(function, *structures, flatten=False):
    """Call a function with the leaves of one or more structures at each
    position: the results nested alike, or with `flatten` a flat tuple; a
    TypeError without structures, a ValueError where their nesting differs."""
    _require(structures, 'map')
    if flatten:
        return tuple(function(*leaves) for leaves in _leaves(structures))
    return _map(function, structures, ())


def zip(*structures, flatten=False):
    """Combine the leaves at each position of structures into tuples.

    A single structure comes back as a copy (as in 2017), not with
    one-element tuples. Arguments and errors as `map`.
    """
    _require(structures, 'zip')
    if len(structures) == 1:
        return map(lambda leaf: leaf, structures[0], flatten=flatten)
    return map(lambda *leaves: leaves, *structures, flatten=flatten)


def flatten(structure):
    """The leaves of a structure as a tuple, depth first in order."""
    return tuple(leaves[0] for leaves in _leaves((structure,)))


def filter(predicate, *structures, flatten=False):
    """Keep only the leaves for which a predicate is true.

    Containers emptied by the filter are removed (those empty before stay);
    removed namedtuple fields become None; a dropped single leaf gives `()`
    (as in 2017). Several structures give tuples of their leaves. Arguments
    and errors as `map`.
    """
    _require(structures, 'filter')
    select = (lambda leaves: leaves[0]) if len(structures) == 1 else tuple
    if flatten:
        return tuple(
            select(leaves) for leaves in _leaves(structures)
            if predicate(*leaves))
    result = _map(
        lambda *leaves: select(leaves) if predicate(*leaves) else _DROPPED,
        structures, ())
    return () if result is _DROPPED else result


def _require(structures, name):
    """Raise the TypeError of a call without structures."""
    if not structures:
        raise TypeError(f'{name}() needs at least one structure.')


def _leaves(structures):
    """The tuples of the leaves of the structures at each position."""
    leaves = []
    _map(lambda *leaf: leaves.append(leaf), structures, ())
    return leaves


def _map(function, structures, path):
    """`map` below `path`, without `_DROPPED` results and what they fill."""
    kind = _check_same_nesting(structures, path)
    first = structures[0]
    if kind == 'leaf':
        return function(*structures)
    if kind == 'dict':
        keys = list(first)
        parts = [[structure[key] for structure in structures] for key in keys]
    else:
        keys = range(len(first))
        parts = builtins.zip(*structures)
    values = [
        _map(function, part, path + (key,))
        for key, part in builtins.zip(keys, parts)]
    kept = [value is not _DROPPED for value in values]
    if path and first and not any(kept):
        return _DROPPED
    if kind == 'dict':
        return _rebuild_dict(first, [
            (key, value) for key, value, keep in builtins.zip(
                keys, values, kept) if keep])
    if hasattr(type(first), '_fields'):  # A namedtuple.
        return type(first)(*(
            value if keep else None
            for value, keep in builtins.zip(values, kept)))
    return type(first)(
        value for value, keep in builtins.zip(values, kept) if keep)


def _check_same_nesting(structures, path):
    """The kind of the structures; a ValueError where they differ."""
    kinds = [_kind(structure) for structure in structures]
    first = structures[0]
    for index, (structure, kind) in enumerate(
            builtins.zip(structures[1:], kinds[1:]), 1):
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
    """'dict', 'sequence' or 'leaf'."""
    if isinstance(structure, dict):
        return 'dict'
    if isinstance(structure, (tuple, list)):
        return 'sequence'
    return 'leaf'


def _rebuild_dict(template, items):
    """A dict of the template's type and lock state holding the items."""
    if isinstance(template, collections.defaultdict):
        return type(template)(template.default_factory, items)
    result = type(template)(items)
    if isinstance(template, attr_dict.AttrDict):
        result.__dict__['_locked'] = template.locked
    return result


def _describe(structure):
    """'a tuple of length 2' or 'a leaf of type int'."""
    name = type(structure).__name__
    if isinstance(structure, (tuple, list, dict)):
        return f'a {name} of length {len(structure)}'
    return f'a leaf of type {name}'


def _format_path(path):
    """'the top level' or 'position [key][index]'."""
    if not path:
        return 'the top level'
    return 'position ' + ''.join(f'[{key!r}]' for key in path)
