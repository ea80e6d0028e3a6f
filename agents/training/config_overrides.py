"""Overrides of a config's values, `--set=KEY=VALUE`: YAML converted to the
type of the value it replaces."""

import difflib

import numpy as np
import ruamel.yaml

from agents.scripts import configs
from agents.training import config_io


def apply_overrides(config, settings):
    """Set values of a `tools.AttrDict` from 'KEY=VALUE' strings; return
    the dict of the keys set to their new values. A YAML value must fit the
    type of the value it replaces (a list for a tuple, an import path for a
    callable); any value may replace None, and null a value that is None by
    default (an option switched off). Else a ConfigError names the setting,
    the key and the type, changing nothing."""
    overrides = {}
    for setting in settings:
        key, text = split_setting(setting)
        shown = config_io.shorten(setting)
        if key not in config:
            close = difflib.get_close_matches(key, [str(k) for k in config])
            hint = (f"did you mean '{close[0]}'?" if close else
                    f"keys: {', '.join(sorted(str(k) for k in config))}.")
            raise config_io.ConfigError(
                f"--set={shown}: the config has no key "
                f"'{config_io.shorten(key, 40)}'; {hint}")
        overrides[key] = _convert_override(shown, key, config[key], text)
    with config.unlocked:
        config.update(overrides)
    return overrides


def split_setting(setting):
    """The key and the text of a 'KEY=VALUE' setting; a ConfigError where
    it has no '=' or no key."""
    key, equals, text = str(setting).partition('=')
    if not equals or not key.strip():
        raise config_io.ConfigError(
            f'--set={config_io.shorten(setting)} is not KEY=VALUE; expected '
            'e.g. --set=learning_rate=1e-3.')
    return key.strip(), text


def _convert_override(setting, key, old, text):
    """The value of an override, converted to the type of the old value."""
    yaml = ruamel.yaml.YAML(typ='safe', pure=True)
    try:
        value = config_io.parse_yaml(yaml, text, 200) if text.strip() else None
    except ValueError as error:
        raise config_io.ConfigError(
            f'--set={setting}: not a valid value for {key} ({error}).'
        ) from error
    if isinstance(value, list):
        value = tuple(value)
    if old is None or (
            value is None and configs.default().get(key, 0) is None):
        return value
    expected, convert = _override_type(old)
    try:
        return convert(value)
    except config_io.ConfigError as error:
        raise config_io.ConfigError(
            f'--set={setting}: {key} expects {expected}; {error}') from error
    except (TypeError, ValueError, OverflowError) as error:
        raise config_io.ConfigError(
            f'--set={setting}: {key} expects {expected}, got '
            f'{config_io.shorten(repr(value))}.') from error


def _override_type(old):
    """Description and converter of values that may replace `old`."""

    def integer(value):
        # A number that is no integer stays, for the rules to judge:
        # `worker_timeout` takes it.
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        value = number(value)
        return int(value) if value.is_integer() else value

    def number(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(value)
        return float(value)

    def of_type(kind):
        def check(value):
            if not isinstance(value, kind):
                raise TypeError(value)
            return value
        return check

    for kinds, expected, convert in (
            ((bool, np.bool_), 'true or false (bool)', of_type(bool)),
            ((int, np.integer), 'a number (int)', integer),
            ((float, np.floating), 'a number (float)', number),
            (str, 'a string (str)', of_type(str)),
            ((tuple, list), 'a list such as [64, 64] (tuple)', of_type(tuple)),
            (dict, 'a mapping such as {a: 1} (dict)', of_type(dict))):
        if isinstance(old, kinds):
            return expected, convert
    if callable(old):
        return "an import path 'package.module:name' (callable)", (
            lambda value: config_io.import_callable(of_type(str)(value)))
    kind = type(old).__name__
    return f'a value of type {kind}', of_type(type(old))
