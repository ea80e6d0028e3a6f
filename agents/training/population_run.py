"""The run of a population (`train.py --seeds`): its checks, its simulation
graph for the trainer's loop, the members' evaluations and summaries in
folders `seed-S`, and the table of their final scores."""

import json
import logging
import math
import os

import numpy as np
import tensorflow.compat.v1 as tf

from agents import tools
from agents.algorithms.ppo import ppo_step
from agents.algorithms.ppo import stacked_variable
from agents.environments import env_modes
from agents.environments import graph_env
from agents.tools import atomic_file
from agents.tools import compiled_ops
from agents.tools import compiled_rollout
from agents.tools import rollout_env
from agents.tools import seed_statistics
from agents.training import config_overrides
from agents.training import config_spec
from agents.training import member_checkpoint
from agents.training import population
from agents.training import simulation
from agents.training import sweep_grid
from agents.training import sweep_records
from agents.training.config_io import ConfigError

# The members' final scores and their summary, and every member's
# evaluations (rows of config, seed, step and score), in the run folder.
RESULTS_NAME = 'results.json'
CURVES_NAME = 'curves.csv'


def split_settings(settings, seeds):
    """The 'KEY=VALUE' `settings` of the keys given once, and the variant
    settings (see `member_checkpoint.members`) of every combination of the
    keys given several times, None without; a ConfigError where a setting
    repeats, or where variants come without the `seeds` of a
    population."""
    values = sweep_grid.setting_values(settings)
    varied = {key: texts for key, texts in values.items() if len(texts) > 1}
    if varied and not seeds:
        raise ConfigError(
            f'--set={next(iter(varied))} is given several times, which '
            'makes variants of a population; pass --seeds too (e.g. '
            '--seeds=0).')
    return [setting for setting in settings if len(values[
        config_overrides.split_setting(setting)[0]]) == 1], (
            sweep_grid.combinations(varied) if varied else None)


def check_population(config, seeds, env_mode, flag, variants=None):
    """Raise a ConfigError naming `flag` (the `--seeds` given) where the
    config cannot train a member per seed (and variant setting) in the env
    mode: an in-graph mode and an env without task, more environments than
    `max_agents` for the members (P x `num_agents`), or variants that are
    invalid or change the graph (`population.members_config`)."""
    if env_modes.in_graph_mode(env_mode):
        graph_env.check_task(config, flag)
    full = config_spec.with_defaults(config)
    size = len(member_checkpoint.members(seeds, variants))
    total = size * full.num_agents
    if variants:
        flag += f' with {len(variants)} variants'
        values = population.variant_values(full, variants)
        for variant in values:
            config_spec.check_config(full.copy(**variant))
        try:
            population.members_config(full, values)
        except ValueError as error:
            raise ConfigError(f'Variants of --set: {error}') from error
    if total > full.max_agents:
        raise ConfigError(
            f'{flag} makes {size} members of num_agents='
            f'{full.num_agents}, {total} environments; expected at most '
            f'max_agents={full.max_agents} (raise it where intended).')


def define_population(config, seeds, env_mode='graph',
                      saved=graph_env.NEW_RUN, variants=None):
    """The simulation of a population for the trainer's loop, as
    `simulation.define_simulation` defines a run's, with `members` (its
    `Population`, in the env mode, see `graph_env.define_run_batches`) and
    `reports` (its `MemberReports`): a phase of training is one collect of
    every member, a member per seed and variant setting (see
    `member_checkpoint.members`); an evaluation evaluates each member on
    evaluation environments of its own, those of its seed's single run.
    The loop's scores pool the members' episodes."""
    seeds, settings = zip(*member_checkpoint.members(seeds, variants))
    members = population.Population(
        config, seeds, env_mode, saved, settings if variants else None)
    # One scope: a second of the same name would be another.
    with tf.variable_scope(os.path.dirname(member_checkpoint.SEEDS_VARIABLE)):
        for path, value in (
                (member_checkpoint.SEEDS_VARIABLE, np.array(seeds, np.int64)),
                (member_checkpoint.VARIANTS_VARIABLE,
                 member_checkpoint.encode_settings(settings))):
            tf.Variable(value, trainable=False, name=os.path.basename(path))
    reports = MemberReports(config.logdir, seeds, settings)
    eval_done, eval_score = _define_evaluation(
        members, config, reports.scores)
    batch_env = members.batch_env
    switches = simulation.define_switches()
    (made, done, score), run_steps = simulation.collect_in_phase(
        members.collect, batch_env, switches.step, config)
    return simulation.define_phases(
        config, switches, algo=members.algo, batch_env=batch_env,
        done=tf.reshape(done, [-1]), score=tf.reshape(score, [-1]),
        summary=tf.constant(''), eval_batch_env=None,
        eval_done=tf.reshape(eval_done, [-1]),
        eval_score=tf.reshape(eval_score, [-1]),
        eval_summary=simulation.mean_score_summary(
            eval_done, eval_score, switches.should_log),
        eval_feed={}, eval_run_steps=simulation.phase_steps(config)[1],
        run_steps=run_steps, made_steps=made * len(batch_env),
        members=members, reports=reports)


def _define_evaluation(members, config, scores):
    """Every member's first episodes on its evaluation environments, those
    of its seed's single run, in one session call: done and score `[P,
    eval_episodes]`, after the members' mean scores went to the variable
    `scores` `[P]` (NaN where none ended)."""
    batch_env = members.eval_batch_env
    env = rollout_env.rollout_env(batch_env)
    view = members.algo.evaluation_view(batch_env, config.eval_stochastic)
    if env.jit_compile:
        done, score = _compiled_evaluation(
            batch_env, env, view, config.max_length, members.size)
    else:
        # One batch of every member's environments, the members' policies
        # stepped together.
        done, score = (
            tf.reshape(tensor, [members.size, -1])
            for tensor in compiled_rollout.first_episodes(
                batch_env, _MembersPolicy(members, view), config.max_length))
    ended = tf.cast(done, tf.float32)
    mean_scores = tf.reduce_sum(
        tf.where(done, score, tf.zeros_like(score)), 1) / (
            tf.reduce_sum(ended, 1))
    store = scores.assign(mean_scores)
    return (tools.identity_after([store], done),
            tools.identity_after([store], score))


def _compiled_evaluation(batch_env, env, view, max_length, size):
    """Done and score `[P, eval_episodes]` of every member's first episodes
    on its in-graph task, in one compiled function called per member."""
    rollout = compiled_ops.compiled_function(_member_rollout(
        compiled_rollout.rollout_function(batch_env, view, max_length)))
    carries = []
    for member in range(size):
        with stacked_variable.member_view(member):
            carries.append(rollout(
                tf.constant(member), env.rollout_seed(), env.initial()))
    with stacked_variable.member_view(stacked_variable.WHOLE):
        return compiled_rollout.finish(
            batch_env, tf.nest.map_structure(
                lambda *tensors: tf.stack(tensors), *carries))


class _MembersPolicy:
    """The `compiled_rollout` policy of every member's `view` on one batch
    of their environments, a block of them per member."""

    def __init__(self, members, view):
        self._members = members
        self._view = view

    def initial_state(self, batch_size):
        """The view's initial state of the whole batch."""
        return self._view.initial_state(batch_size)

    def step(self, observ, state, key):
        """The members' actions and next states (None without), each
        member's of its block."""
        size = self._members.size

        def _step(observ, state):
            action, state = self._view.step(
                observ, ppo_step.network_state(state), key)
            return action, () if state is None else state

        blocks = tf.nest.map_structure(
            lambda tensor: tf.reshape(
                tensor, [size, -1] + tensor.shape[1:].as_list()),
            (observ, () if state is None else state))
        action, state = tf.nest.map_structure(
            lambda tensor: tf.reshape(
                tensor, [-1] + tensor.shape[2:].as_list()),
            self._members.mapped(_step, *blocks))
        return action, ppo_step.network_state(state)


def _member_rollout(rollout):
    """`rollout(seed, env_state)` of `compiled_rollout.rollout_function` as
    the function `(member, seed, env_state)` that reads the variables of
    the int32 `member`: traced and compiled once for all members."""

    def _rollout(member, seed, env_state):
        with stacked_variable.member_view(member):
            return rollout(seed, env_state)

    return _rollout


class MemberReports:
    """Each member's scores of the last evaluation: `mean_score` summaries
    in `seed-S/eval` (`VARIANT/seed-S/eval`) of the run folder, and the
    final table and `results.json`, per variant."""

    def __init__(self, logdir, seeds, settings=None):
        """Report the scores of the members of the `seeds` and variant
        `settings` (None: none) of a run folder (None: write nothing) from
        the variable `scores` `[P]`, which evaluations assign."""
        self._logdir = logdir
        self._seeds = list(seeds)
        self._settings = list(settings or [()] * len(self._seeds))
        self._names = [member_checkpoint.member_name(*member)
                       for member in zip(self._seeds, self._settings)]
        # The members of each variant, by its name ('' without variants).
        self._variants = {}
        for index, setting in enumerate(self._settings):
            self._variants.setdefault(
                sweep_grid.setting_name(setting), []).append(index)
        # Checkpointed, so that a run resumed at its end reports them.
        scope, name = member_checkpoint.SCORES_VARIABLE.split('/')
        with tf.variable_scope(scope):
            self.scores = tf.Variable(
                tf.fill([len(seeds)], np.nan), trainable=False, name=name)
        self._writers = None

    def report(self, sess, step):
        """Write each member's last score (where finite) at the step; return
        the scores, in the order of the members."""
        scores = [float(score) for score in sess.run(self.scores)]
        if not self._logdir:
            return scores
        if self._writers is None:
            self._writers = [
                tf.summary.FileWriter(os.path.join(self._logdir, name, 'eval'))
                for name in self._names]
        for writer, score in zip(self._writers, scores):
            if math.isfinite(score):
                writer.add_summary(tf.Summary(value=[tf.Summary.Value(
                    tag='mean_score', simple_value=score)]), step)
            writer.flush()
        return scores

    def describe(self, sess, phase):
        """The members' IQM and range of an evaluation's scores, per
        variant, for its progress line (None for other phases)."""
        if phase != 'eval':
            return None
        scores = sess.run(self.scores)
        texts = []
        for variant, indices in self._variants.items():
            finite = [scores[index] for index in indices
                      if math.isfinite(scores[index])]
            text = 'no member ended an episode'
            if finite:
                text = (
                    'members IQM '
                    f'{seed_statistics.interquartile_mean(finite):.1f} range '
                    f'{min(finite):.1f} to {max(finite):.1f}')
            missing = len(indices) - len(finite)
            if finite and missing:
                text += f' ({missing} without an episode)'
            texts.append(f'{variant}: {text}' if variant else text)
        return '; '.join(texts)

    def finish(self, sess):
        """Log the table of the members' final scores and their IQM with
        its interval (per variant); write them to `results.json`, and every
        member's evaluations to `curves.csv`; return them."""
        rows = [
            dict(member=name, seed=seed, setting=dict(setting),
                 final_score=float(score) if math.isfinite(score) else None)
            for name, seed, setting, score in zip(
                self._names, self._seeds, self._settings,
                sess.run(self.scores))]
        results = dict(members=rows, final=_summary(rows))
        if len(self._variants) > 1:
            results['variants'] = [
                dict(variant=variant, setting=rows[indices[0]]['setting'],
                     final=_summary([rows[index] for index in indices]))
                for variant, indices in self._variants.items()]
        logger = logging.getLogger('agents')
        width = max(len(row['member']) for row in rows)
        for row in rows:
            logger.info('%s  %s', row['member'].ljust(width),
                        sweep_records.format_score(row['final_score']))
        summaries, label = ([('final', results['final'])], 'score') if (
            'variants' not in results) else ([
                (row['variant'], row['final'])
                for row in results['variants']], 'variant')
        for line in seed_statistics.summary_table(summaries, label=label):
            logger.info('%s', line)
        if self._logdir:
            atomic_file.write_atomic(
                os.path.join(self._logdir, RESULTS_NAME),
                json.dumps(results, indent=2) + '\n')
            seed_statistics.write_curves_csv(
                os.path.join(self._logdir, CURVES_NAME), self._curve_rows())
        return results

    def _curve_rows(self):
        """Rows `(config, seed, step, score)` of every member's evaluations
        in its event files, those of earlier sessions of the run too."""
        # The run folder is TIMESTAMP-CONFIG.
        label = os.path.basename(os.path.normpath(self._logdir)).partition(
            '-')[2]
        rows = []
        for name, seed, setting in zip(
                self._names, self._seeds, self._settings):
            folder = os.path.join(self._logdir, name, 'eval')
            curve = {}
            names = (tf.io.gfile.listdir(folder)
                     if tf.io.gfile.isdir(folder) else [])
            for name in sorted(names):
                for event in tf.train.summary_iterator(
                        os.path.join(folder, name)):
                    for value in event.summary.value:
                        if value.tag == 'mean_score':
                            curve[event.step] = value.simple_value
            # A variant's label as a sweep's group.
            group = '-'.join(
                [label] + [sweep_grid.setting_name(setting)] * bool(setting))
            rows += [(group, seed, step, score)
                     for step, score in sorted(curve.items())]
        return rows

    def close(self):
        """Close the summary writers."""
        for writer in self._writers or ():
            writer.close()
        self._writers = None


def _summary(rows):
    """The `seed_statistics.seed_summary` of the rows' final scores (None
    where none is finite)."""
    finite = [row['final_score'] for row in rows
              if row['final_score'] is not None]
    return seed_statistics.seed_summary(finite) if finite else None
