"""The configuration file of a run folder: `config.yaml` in YAML.

Callables in a configuration (algorithm, network, optimizer, ...) are stored
as their import paths under the `!callable` tag, and the file is read with a
safe loader that resolves only those tags: loading a config never constructs
arbitrary Python objects.

This module does not import TensorFlow, so that environment worker processes
may import it.
"""

import importlib
import io
import os
import tempfile

import numpy as np
import ruamel.yaml

from agents import tools


_CALLABLE_TAG = '!callable'


class ConfigError(ValueError):
    """A configuration file or value that cannot be used."""


def save_config(config, logdir=None):
    """Write the configuration to `logdir/config.yaml` atomically.

    Callables (algorithm, network, optimizer, ...) are stored as their
    import paths, so loading never constructs arbitrary Python objects.

    Args:
      config: Configuration mapping.
      logdir: Directory to write to; nothing is written when None.

    Raises:
      ConfigError: When a value cannot be stored, before anything is
          written, or when the file cannot be written.

    Returns:
      The configuration.
    """
    if not logdir:
        return config
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Representer = _ConfigRepresenter
    yaml.default_flow_style = False
    buffer = io.StringIO()
    yaml.dump(_to_yaml(dict(config)), buffer)
    path = os.path.join(logdir, 'config.yaml')
    try:
        os.makedirs(logdir, exist_ok=True)
        write_atomic(path, buffer.getvalue())
    except OSError as error:
        raise ConfigError(
            f'Cannot write {path}: {error.strerror or error}.') from error
    return config


def load_config(logdir):
    """Load the configuration stored in a run folder.

    Args:
      logdir: Run folder containing config.yaml.

    Raises:
      ConfigError: When the file is missing, is not valid YAML, or names a
          callable that cannot be imported.

    Returns:
      Locked `tools.AttrDict` of the configuration.
    """
    path = os.path.join(logdir, 'config.yaml')
    if not os.path.exists(path):
        raise ConfigError(f'No config.yaml in run folder {logdir}.')
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Constructor = _ConfigConstructor
    try:
        with open(path, encoding='utf-8') as file_:
            values = yaml.load(file_)
    except ruamel.yaml.YAMLError as error:
        detail = ' '.join(str(error).split())
        raise ConfigError(f'Invalid YAML in {path}: {detail}') from error
    if not isinstance(values, dict):
        raise ConfigError(
            f'Expected a mapping in {path}, got {type(values).__name__}.')
    values = {key: _from_yaml(value) for key, value in values.items()}
    config = tools.AttrDict(values)
    config.lock()
    return config


def write_atomic(path, content):
    """Write text to a file so that readers see the old or the new content.

    Args:
      path: Destination file.
      content: Text to write.
    """
    directory = os.path.dirname(os.path.abspath(path))
    handle, temp_path = tempfile.mkstemp(
        dir=directory, prefix='.' + os.path.basename(path) + '.')
    try:
        with os.fdopen(handle, 'w', encoding='utf-8') as file_:
            file_.write(content)
            file_.flush()
            os.fsync(file_.fileno())
        os.replace(temp_path, path)
    except BaseException:
        if os.path.exists(temp_path):
            os.remove(temp_path)
        raise


def import_callable(path):
    """Resolve an import path 'package.module:Qual.name' to the object.

    Args:
      path: Module path and qualified name separated by a colon.

    Raises:
      ConfigError: When the module or attribute does not exist or the
          object is not callable.

    Returns:
      The callable.
    """
    module_name, _, qualname = str(path).partition(':')
    if not module_name or not qualname:
        raise ConfigError(
            f"Callable '{path}' must look like 'package.module:name'.")
    try:
        value = importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(
            f"Cannot import module '{module_name}' of callable '{path}': "
            f'{error}') from error
    for part in qualname.split('.'):
        if part.startswith('_') or not hasattr(value, part):
            raise ConfigError(
                f"Module '{module_name}' has no public callable "
                f"'{qualname}' (from '{path}').")
        value = getattr(value, part)
    if not callable(value):
        raise ConfigError(f"'{path}' is not callable.")
    return value


def callable_path(value):
    """The import path of a module-level callable, 'module:qualname'."""
    module = getattr(value, '__module__', None)
    qualname = getattr(value, '__qualname__', None)
    if not module or not qualname or '<' in qualname:
        raise ConfigError(
            f'Cannot store {value!r} in config.yaml: only module-level '
            'functions and classes have an import path.')
    return f'{module}:{qualname}'


class _CallablePath(str):
    """Marks a string as an import path to dump with the callable tag."""


def _to_yaml(value):
    if isinstance(value, dict):
        return {str(key): _to_yaml(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_to_yaml(item) for item in value]
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if callable(value):
        return _CallablePath(callable_path(value))
    return value


def _from_yaml(value):
    if isinstance(value, dict):
        return {key: _from_yaml(item) for key, item in value.items()}
    if isinstance(value, list):
        return tuple(_from_yaml(item) for item in value)
    return value


class _ConfigRepresenter(ruamel.yaml.representer.SafeRepresenter):
    """Safe representer that also writes tagged callable import paths."""


class _ConfigConstructor(ruamel.yaml.constructor.SafeConstructor):
    """Safe constructor that resolves tagged callables by import path only."""


def _represent_callable(representer, value):
    return representer.represent_scalar(_CALLABLE_TAG, str(value))


def _construct_callable(constructor, node):
    return import_callable(constructor.construct_scalar(node))


_ConfigRepresenter.add_representer(_CallablePath, _represent_callable)
_ConfigConstructor.add_constructor(_CALLABLE_TAG, _construct_callable)
