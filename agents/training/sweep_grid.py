"""The runs of a sweep: every config, seed and setting, their configs, and
the packs of runs that train as one population."""

import itertools
import re

from agents.training import config_io
from agents.training import config_overrides
from agents.training import config_spec


class Run:
    """One training run of a sweep: a config, a seed and a setting of
    `(key, text)` pairs; `group` names all but the seed, `name` all, with
    the `shown_keys` of the setting (those that the sweep varies)."""

    def __init__(self, config_name, seed, setting, shown_keys):
        self.config_name = config_name
        self.seed = seed
        self.setting = setting
        self.shown_keys = shown_keys
        shown = setting_name(
            (key, text) for key, text in setting if key in shown_keys)
        self.group = slug(config_name) + (f'-{shown}' if shown else '')
        self.name = f'{self.group}-seed{seed}'


def grid(configs, seeds, settings=()):
    """The runs of every config, setting and seed, in that order; a key of
    the 'KEY=VALUE' `settings` given several values varies over them. A
    ConfigError where a setting is no 'KEY=VALUE' or repeats, or the configs
    or seeds are empty or repeat."""
    if not configs:
        raise config_io.ConfigError('Pass --configs with at least one config.')
    if not seeds:
        raise config_io.ConfigError('Pass --seeds with at least one seed.')
    for name, values in (('config', configs), ('seed', seeds)):
        repeated = sorted({
            str(value) for value in values if list(values).count(value) > 1})
        if repeated:
            raise config_io.ConfigError(
                f'The {name} {repeated[0]} is listed twice; expected each '
                'once.')
    values = setting_values(settings)
    shown = {key for key, texts in values.items() if len(texts) > 1}
    return [
        Run(config_name, seed, setting, shown)
        for config_name in configs
        for setting in combinations(values)
        for seed in seeds]


class Pack:
    """Runs that one Ray task trains in the folder `name`: a run alone, or
    a population of one config and `setting` whose `members`, a `(seed,
    variant setting)` per run, are those of `member_checkpoint.members` of
    its `seeds` and `variants` (None without). For `build_config` it reads
    as the run of its first seed."""

    def __init__(self, name, runs, variant_keys=()):
        self.name = name
        self.runs = runs
        self.config_name = runs[0].config_name
        self.setting = tuple(
            pair for pair in runs[0].setting if pair[0] not in variant_keys)
        self.members = [(run.seed, tuple(
            pair for pair in run.setting if pair[0] in variant_keys))
                        for run in runs]
        self.seeds = list(dict.fromkeys(seed for seed, _ in self.members))
        self.seed = self.seeds[0]
        self.variants = list(dict.fromkeys(
            variant for _, variant in self.members)) if variant_keys else None


def packs(runs, variant_keys):
    """The runs of `grid` in `Pack`s named 'population-GROUP', in the order
    of their first runs: runs of one config whose settings differ only in
    seeds and in the varied keys of `variant_keys` (keys that keep the
    graph's shapes)."""
    varied = runs[0].shown_keys
    variant_keys = varied & set(variant_keys)
    groups = {}
    for run in runs:
        groups.setdefault((run.config_name, tuple(
            pair for pair in run.setting if pair[0] not in variant_keys)),
                          []).append(run)
    # The grid lists a pack's runs by variant, then by seed: its members.
    return [
        Pack('population-' + Run(config_name, 0, setting, varied).group,
             group, variant_keys)
        for (config_name, setting), group in groups.items()]


def setting_values(settings):
    """The texts of each key of 'KEY=VALUE' `settings`, keys and texts in
    their order; a ConfigError where a setting is no 'KEY=VALUE' or
    repeats."""
    values = {}
    for item in settings:
        key, text = config_overrides.split_setting(item)
        if text in values.setdefault(key, []):
            raise config_io.ConfigError(
                f'--set={item} is given twice; expected each value once.')
        values[key].append(text)
    return values


def combinations(values):
    """Every setting, a tuple of `(key, text)` pairs, of the texts of each
    key (`setting_values`): a key of several texts varies over them."""
    return list(itertools.product(*[
        [(key, text) for text in texts] for key, texts in values.items()]))


def setting_name(setting):
    """The `(key, text)` pairs of a setting as a folder name, e.g.
    'learning_rate=1e-3-discount=0.9'."""
    return '-'.join(slug(f'{key}={text}') for key, text in setting)


def build_config(run, run_dir, cpus_per_run=1):
    """The configuration of a `Run` in its folder (a ConfigError where the
    config or a setting cannot be used); `cpus_per_run` are TensorFlow's
    threads where it leaves `session_threads` unset."""
    config = config_spec.load_config_spec(run.config_name)
    # Checked against the config's keys and types as train.py's --set.
    config_overrides.apply_overrides(
        config, [f'{key}={text}' for key, text in run.setting])
    with config.unlocked:
        config.seed = run.seed
        if config_spec.with_defaults(config).session_threads is None:
            config.session_threads = max(1, int(cpus_per_run))
        config.logdir = run_dir
    return config


def slug(text):
    """Text as a folder name: unusual characters become underscores."""
    return re.sub(r'[^\w.=+-]', '_', str(text))
