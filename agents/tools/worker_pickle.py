"""Pickle what a worker receives (say a 2017 constructor holding the whole
config) with the functions and classes of modules that import TensorFlow
as `Deferred` references, imported by the worker on first use."""

import copyreg
import functools
import importlib
import io
import sys
import types

import cloudpickle

# Dunder attributes of the object that a `Deferred` reads from it.
_NAMES = ('__name__', '__wrapped__')
# Functions and classes a worker may receive by reference.
_BY_REFERENCE = (type, types.FunctionType, types.BuiltinFunctionType)


def dumps(value):
    """Pickle a value, such as an environment constructor, for a worker."""
    buffer = io.BytesIO()
    _Pickler(buffer).dump(value)
    return buffer.getvalue()


class Deferred:
    """A function or class (`qualname`) of a module that imports TensorFlow,
    imported on first use by calls, attribute reads and pickling."""

    def __init__(self, module, qualname):
        # Those of the object, which messages name it by.
        self.__module__ = module
        self.__qualname__ = qualname
        self._target = None

    def resolve(self):
        """The function or class itself, imported on the first call."""
        if self._target is None:
            self._target = _import_object(self.__module__, self.__qualname__)
        return self._target

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, name):
        # Not the protocols of pickling and copying, nor its own state.
        if name == '_target' or (name.startswith('__') and name not in _NAMES):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __reduce__(self):
        return Deferred, (self.__module__, self.__qualname__)

    def __repr__(self):
        return f'<{self.__module__}:{self.__qualname__}, imported on first use>'


def _import_object(module, qualname):
    """The object of a module by its qualified name, importing the module."""
    value = importlib.import_module(module)
    for part in qualname.split('.'):
        value = getattr(value, part)
    return value


class _Pickler(cloudpickle.Pickler):
    """cloudpickle's pickler that defers what imports TensorFlow."""

    def reducer_override(self, obj):
        path = _deferred_path(obj) if isinstance(obj, _BY_REFERENCE) else None
        if path is not None:
            return Deferred, path
        path = _deferred_path(type(obj))
        # An instance needs its class: the worker imports it.
        reduced = path and _with_class(
            obj.__reduce_ex__(self.proto), type(obj), path)
        return reduced or super().reducer_override(obj)


def _with_class(reduced, cls, path):
    """A reduce tuple with `cls` replaced by its import, or None."""
    if not isinstance(reduced, tuple) or len(reduced) < 2:
        return None
    function, args = reduced[:2]
    if function is cls:
        return (Deferred(*path), tuple(args)) + reduced[2:]
    if function is copyreg.__newobj__ and args and args[0] is cls:
        return (_new, path + tuple(args[1:])) + reduced[2:]
    return None


def _new(module, qualname, *args):
    """`copyreg.__newobj__` of a class imported by its name."""
    cls = _import_object(module, qualname)
    return cls.__new__(cls, *args)


def _deferred_path(obj):
    """Module and qualified name to defer `obj` by, or None to pickle it."""
    module_name = getattr(obj, '__module__', None)
    qualname = getattr(obj, '__qualname__', None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or (
            '<' in qualname or module_name == '__main__'):
        return None
    module = sys.modules.get(module_name)
    if module is None or not _module_imports_tensorflow(module):
        return None
    by_value = cloudpickle.list_registry_pickle_by_value()
    if module_name in by_value or module_name.split('.')[0] in by_value:
        return None
    try:
        if _import_object(module_name, qualname) is not obj:
            return None
    except (AttributeError, ImportError):
        return None
    return module_name, qualname


@functools.cache
def _module_imports_tensorflow(module):
    """Whether a module is TensorFlow's or holds one of its modules."""
    names = [module.__name__] + [
        value.__name__ for value in list(vars(module).values())
        if isinstance(value, types.ModuleType)]
    return any(name.split('.')[0] == 'tensorflow' for name in names)
