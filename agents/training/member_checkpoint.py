"""A member of a population's checkpoint, read as its single run's: which
member `--member=seed-S` (or `VARIANT/seed-S`) names (by default the best
last evaluation), and its slice of every stacked variable."""

import json
import math

import numpy as np
import tensorflow.compat.v1 as tf

from agents.training import sweep_grid

# The variables of the members' seeds and variants, and of their last
# evaluation's mean scores, which a population's checkpoints hold.
SEEDS_VARIABLE = 'population/seeds'
VARIANTS_VARIABLE = 'population/variants'
SCORES_VARIABLE = 'population_evaluation/eval_scores'


def members(seeds, variants=None):
    """The `(seed, setting)` members of every variant setting (tuples of
    `(key, text)` pairs; None: no variants) and seed, in that order."""
    return [(int(seed), tuple(setting))
            for setting in variants or [()] for seed in seeds]


def member_name(seed, setting=()):
    """The name of the member of the seed and the variant setting, e.g.
    'seed-2' or 'learning_rate=3e-4/seed-2', and its folder in the run."""
    variant = sweep_grid.setting_name(setting)
    return f'{variant}/seed-{seed}' if variant else f'seed-{seed}'


def encode_settings(settings):
    """The members' variant settings as checkpoints hold them."""
    return [json.dumps(setting) for setting in settings]


def saved_members(reader):
    """The `(seed, setting)` members of the population whose checkpoint
    `reader` reads (None: a single run's)."""
    if not reader.has_tensor(SEEDS_VARIABLE):
        return None
    seeds = reader.get_tensor(SEEDS_VARIABLE)
    settings = reader.get_tensor(VARIANTS_VARIABLE) if reader.has_tensor(
        VARIANTS_VARIABLE) else [b'[]'] * len(seeds)
    return [
        (int(seed), tuple(tuple(pair) for pair in json.loads(setting)))
        for seed, setting in zip(seeds, settings)]


def find_member(path, member, error):
    """The position and name of `member` ('seed-S' or 'VARIANT/seed-S';
    None: the member of the best last evaluation) among the members of the
    checkpoint `path`, or
    (None, None) for a single run's checkpoint without `member`; `error`
    (an exception class) where the member is not one of them."""
    saved = saved_members(tf.train.load_checkpoint(path))
    if saved is None:
        if member is not None:
            raise error(
                f'--member={member} names a member of a population, but '
                f'{path} is a single run; leave --member out.')
        return None, None
    names = [member_name(*member) for member in saved]
    if member is None:
        scores = tf.train.load_checkpoint(path).get_tensor(SCORES_VARIABLE)
        finite = [(score, -index) for index, score in enumerate(scores)
                  if math.isfinite(score)]
        # The first member where none has a score yet.
        index = -max(finite)[1] if finite else 0
        return index, names[index]
    if member not in names:
        raise error(
            f'--member={member} is not a member of {path}; expected one of '
            f"{', '.join(names)}.")
    return names.index(member), member


def member_value(reader, name, shape, index):
    """The checkpoint `reader`'s value of the variable `name` as the member
    `index` (None: a single run's checkpoint) sees it at `shape`: its slice
    where the variable is stacked."""
    value = reader.get_tensor(name)
    if index is not None and np.ndim(value) == len(shape) + 1 and (
            tf.TensorShape(shape).is_compatible_with(value.shape[1:])):
        return value[index]
    return value


def restore_member(sess, variables, path, index):
    """Load the member `index`'s values of `variables` from the checkpoint
    `path`; variables that it lacks (the single run's optimizer slots, which
    a population keeps apart) keep their values."""
    reader = tf.train.load_checkpoint(path)
    for variable in variables:
        name = variable.op.name
        if reader.has_tensor(name):
            variable.load(member_value(
                reader, name, variable.shape.as_list(), index), sess)
