"""The configuration file of a run folder, `config.yaml`: callables stored as
import paths (`!callable`), a `functools.partial` as a `!partial` mapping,
read by a safe loader. No TensorFlow: worker processes import this module."""

import functools
import importlib
import importlib.util
import io
import os
import sys

import cloudpickle
import numpy as np
import ruamel.yaml

from agents import tools
from agents.tools import atomic_file
from agents.tools.run_errors import ConfigError
from agents.tools.run_errors import shorten


_CALLABLE_TAG = '!callable'
_PARTIAL_TAG = '!partial'
# The key of config.yaml naming the run's config function.
SOURCE_KEY = 'config_function'


# A setting or config.yaml holds a few dozen items; YAML aliases can make
# 150 characters stand for millions.
MAX_VALUE_DEPTH = 16
MAX_VALUE_ITEMS = 10000


def parse_yaml(yaml, text, limit):
    """Load YAML text and check its size (depth and items); a ValueError
    says why in one line of at most `limit` characters."""
    try:
        value = yaml.load(text)
        _check_size(value)
    except ConfigError:
        raise
    except RecursionError as error:
        raise ValueError('it nests too deeply') from error
    except (ruamel.yaml.YAMLError, ValueError) as error:
        raise ValueError(
            shorten(' '.join(str(error).split()), limit)) from error
    return value


def _check_size(value):
    """Raise a ValueError at the first item over the limits."""
    stack, count = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > MAX_VALUE_ITEMS:
            raise ValueError(f'it holds more than {MAX_VALUE_ITEMS} items')
        children = (
            [*item, *item.values()] if isinstance(item, dict)
            else item if isinstance(item, (list, tuple)) else ())
        if depth >= MAX_VALUE_DEPTH and children:
            raise ValueError(
                f'it nests lists or mappings more than {MAX_VALUE_DEPTH} '
                'deep')
        stack.extend((child, depth + 1) for child in children)


class ConfigNotFoundError(ConfigError, OSError):
    """A run folder has no config.yaml; an `IOError` as in 2017, whose
    scripts start a new run under `except IOError:`."""


def save_config(config, logdir=None):
    """Write the configuration to `logdir/config.yaml` atomically (nothing
    with `logdir` None); return it with `logdir` set as in 2017. A
    ConfigError where a value cannot be stored or the file written."""
    if not logdir:
        return config
    if isinstance(config, tools.AttrDict):
        with config.unlocked:
            config.logdir = logdir
    else:
        config['logdir'] = logdir
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Representer = _ConfigRepresenter
    yaml.default_flow_style = False
    # Long values such as file paths stay on their key's line.
    yaml.width = 4096
    buffer = io.StringIO()
    buffer.write(_HEADER + '\n')
    yaml.dump(dict(config), buffer)
    buffer.write(_END + '\n')
    path = os.path.join(logdir, 'config.yaml')
    try:
        os.makedirs(logdir, exist_ok=True)
        atomic_file.write_atomic(path, buffer.getvalue())
    except OSError as error:
        raise ConfigError(
            f'Cannot write {path}: {error.strerror or error}.') from error
    return config


def load_config(logdir):
    """The locked `tools.AttrDict` of a run folder's config.yaml; a
    `ConfigNotFoundError` where it has none, a ConfigError where it is cut
    short, invalid, or does not import."""
    path, text = read_config_text(logdir)
    lines = [line.strip() for line in text.splitlines()]
    if lines and lines[0] == _HEADER and _END not in lines:
        raise ConfigError(
            f"{path} is incomplete: its last line '{_END}' is missing, so "
            'it was cut short; restore it, or start a new run with another '
            '--timestamp.')
    try:
        values = parse_yaml(_yaml(_SourceConstructor), text, 300)
        source = isinstance(values, dict) and values.get(SOURCE_KEY)
        if isinstance(source, str) and _is_file_source(source):
            # Its callables are stored under the module name of the file.
            load_file_module(source.rpartition(':')[0])
        values = parse_yaml(_yaml(_ConfigConstructor), text, 300)
    except ConfigError:
        raise
    except ValueError as error:
        raise ConfigError(f'Invalid YAML in {path}: {error}') from error
    if not isinstance(values, dict):
        raise ConfigError(
            f'Expected a mapping in {path}, got {type(values).__name__}.')
    config = tools.AttrDict(values)
    config.lock()
    return config


def read_config_text(logdir):
    """The path and the text of a run folder's config.yaml; a
    `ConfigNotFoundError` where it has none, a ConfigError where unreadable."""
    path = os.path.join(logdir, 'config.yaml')
    if not os.path.exists(path):
        raise ConfigNotFoundError(f'No config.yaml in run folder {logdir}.')
    try:
        with open(path, encoding='utf-8') as file_:
            return path, file_.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f'Cannot read {path}: {error}.') from error


# The first line announces the last, so that a file cut short is refused.
_HEADER = '# batch-ppo run configuration; it ends with the line below.'
_END = '# end of config.yaml'


def import_callable(path):
    """The callable of an import path 'package.module:Qual.name', or a
    ConfigError where it does not import or is not a public callable."""
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


def import_config_function(spec):
    """The config function of 'package.module:function' or
    'file.py:function' (a ConfigError where it does not import), and its
    source for `SOURCE_KEY`, a file by its absolute path."""
    location, colon, name = str(spec).rpartition(':')
    if not colon or not location or not name.isidentifier():
        raise ConfigError(
            f"Config '{spec}' must look like 'package.module:function' or "
            "'path/to/file.py:function'.")
    if not _is_file_source(spec):
        return import_callable(spec), spec
    module = load_file_module(location)
    function = getattr(module, name, None)
    if name.startswith('_') or not callable(function):
        raise ConfigError(
            f"Config file {module.__file__} has no public function "
            f"'{name}'.")
    return function, f'{module.__file__}:{name}'


def load_file_module(path):
    """Import a Python file as the module named after it, once, or raise a
    ConfigError; cloudpickle sends it by value (workers cannot import it)."""
    path = os.path.abspath(os.path.expanduser(path))
    name = os.path.splitext(os.path.basename(path))[0]
    if not os.path.isfile(path):
        raise ConfigError(f'Config file {path} does not exist.')
    if not path.endswith('.py') or not name.isidentifier():
        raise ConfigError(
            f"Config file {path} must be a Python file whose name is a "
            "module name, such as 'my_configs.py'.")
    module = sys.modules.get(name)
    if module is not None:
        origin = getattr(module, '__file__', None) or 'Python'
    else:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else path
    if os.path.abspath(str(origin)) != path:
        raise ConfigError(
            f"Config file {path} has the name of the module '{name}' of "
            f'{origin}; rename the file.')
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as error:
            del sys.modules[name]
            raise ConfigError(
                f'Cannot import config file {path}: '
                f'{type(error).__name__}: {error}') from error
    if name not in cloudpickle.list_registry_pickle_by_value():
        cloudpickle.register_pickle_by_value(module)
    return module


def _is_file_source(spec):
    """Whether a config spec names a file rather than a module."""
    location = str(spec).rpartition(':')[0]
    return location.endswith('.py') or os.sep in location


def callable_path(value):
    """The import path of a module-level callable, 'module:qualname'."""
    module = getattr(value, '__module__', None)
    qualname = getattr(value, '__qualname__', None)
    if not module or not qualname or '<' in qualname:
        raise ConfigError(
            f'Cannot store {value!r} in config.yaml: only module-level '
            'functions and classes have an import path.')
    return f'{module}:{qualname}'


class _ConfigRepresenter(ruamel.yaml.representer.SafeRepresenter):
    """Safe representer without aliases."""

    def ignore_aliases(self, data):
        return True


def _represent_other(representer, value):
    """The node of a value that YAML's safe types leave out."""
    if isinstance(value, functools.partial):
        return representer.represent_mapping(_PARTIAL_TAG, dict(
            function=value.func, args=list(value.args),
            keywords=dict(value.keywords)))
    if isinstance(value, np.generic):
        return representer.represent_data(value.item())
    if isinstance(value, dict):
        return representer.represent_dict(
            {str(key): item for key, item in value.items()})
    if isinstance(value, (tuple, list)):
        return representer.represent_list(list(value))
    if callable(value):
        return representer.represent_scalar(
            _CALLABLE_TAG, callable_path(value))
    return representer.represent_undefined(value)


def _yaml(constructor):
    """A safe YAML loader of a constructor class."""
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml.Constructor = constructor
    return yaml


class _SourceConstructor(ruamel.yaml.constructor.SafeConstructor):
    """Safe constructor reading every tagged value as None (no imports)."""


class _ConfigConstructor(ruamel.yaml.constructor.SafeConstructor):
    """Safe constructor importing tagged callables; lists as tuples."""


def _construct_tuple(constructor, node):
    return tuple(constructor.construct_sequence(node, deep=True))


def _construct_partial(constructor, node):
    if not isinstance(node, ruamel.yaml.nodes.MappingNode):
        raise ruamel.yaml.constructor.ConstructorError(
            None, None, f'expected a mapping after {_PARTIAL_TAG}',
            node.start_mark)
    fields = constructor.construct_mapping(node, deep=True)
    function = fields.get('function')
    args = fields.get('args', ())
    keywords = fields.get('keywords', {})
    if not callable(function) or not isinstance(args, tuple) or not (
            isinstance(keywords, dict)) or set(fields) - {
                'function', 'args', 'keywords'}:
        raise ConfigError(
            f'Cannot read the {_PARTIAL_TAG} value {dict(fields)!r}; '
            f'expected a mapping of function ({_CALLABLE_TAG} path), args '
            '(list) and keywords (mapping).')
    return functools.partial(function, *args, **keywords)


# PyYAML's tags of the 2017 files: an AttrDict is read as a mapping, a name
# as an import path, a tuple as a list; any other Python tag is an error.
_PYTHON_TAG = 'tag:yaml.org,2002:python/'


def _construct_legacy_object(constructor, suffix, node):
    if suffix.rpartition('.')[2] != 'AttrDict' or not isinstance(
            node, ruamel.yaml.nodes.MappingNode):
        raise ruamel.yaml.constructor.ConstructorError(
            None, None, f"refusing to construct the Python object "
            f"'{suffix}' (only a 2017 config's AttrDict is read)",
            node.start_mark)
    values = constructor.construct_mapping(node, deep=True)
    return dict(values.get('dictitems') or {})


def _construct_legacy_callable(unused_constructor, dotted, unused_node):
    """The callable that a 2017 tag names, 'package.module.name' (its value
    is '')."""
    parts = dotted.split('.')
    for cut in range(len(parts) - 1, 0, -1):
        module_name = '.'.join(parts[:cut])
        try:
            importlib.import_module(module_name)
        except ImportError:
            continue
        return import_callable(f"{module_name}:{'.'.join(parts[cut:])}")
    module_name, _, name = dotted.rpartition('.')
    return import_callable(f'{module_name}:{name}')


_ConfigRepresenter.add_representer(dict, _represent_other)
_ConfigRepresenter.add_multi_representer(object, _represent_other)
_SourceConstructor.add_multi_constructor('!', lambda *unused_args: None)
_SourceConstructor.add_multi_constructor(
    _PYTHON_TAG, lambda *unused_args: None)
_ConfigConstructor.add_constructor(
    _CALLABLE_TAG, lambda constructor, node: import_callable(
        constructor.construct_scalar(node)))
_ConfigConstructor.add_constructor(
    'tag:yaml.org,2002:seq', _construct_tuple)
_ConfigConstructor.add_constructor(_PARTIAL_TAG, _construct_partial)
_ConfigConstructor.add_multi_constructor(
    _PYTHON_TAG + 'name:', _construct_legacy_callable)
_ConfigConstructor.add_constructor(_PYTHON_TAG + 'tuple', _construct_tuple)
_ConfigConstructor.add_multi_constructor(
    _PYTHON_TAG + 'object/new:', _construct_legacy_object)
