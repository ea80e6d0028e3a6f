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
from agents.training import config_spec
from agents.training import member_checkpoint
from agents.training import population
from agents.training import simulation
from agents.training import sweep_records
from agents.training.config_io import ConfigError

# The members' final scores and their summary, and every member's
# evaluations (rows of config, seed, step and score), in the run folder.
RESULTS_NAME = 'results.json'
CURVES_NAME = 'curves.csv'


def check_population(config, seeds, env_mode, flag):
    """Raise a ConfigError naming `flag` (the `--seeds` given) where the
    config cannot train a member per seed in the env mode: an in-graph mode
    and an env without task, or more environments than `max_agents` for
    the members (P x `num_agents`)."""
    if env_modes.in_graph_mode(env_mode):
        graph_env.check_task(config, flag)
    full = config_spec.with_defaults(config)
    total = len(seeds) * full.num_agents
    if total > full.max_agents:
        raise ConfigError(
            f'{flag} makes {len(seeds)} members of num_agents='
            f'{full.num_agents}, {total} environments; expected at most '
            f'max_agents={full.max_agents} (raise it where intended).')


def define_population(config, seeds, env_mode='graph',
                      saved=graph_env.NEW_RUN):
    """The simulation of a population for the trainer's loop, as
    `simulation.define_simulation` defines a run's, with `members` (its
    `Population`, in the env mode, see `graph_env.define_run_batches`) and
    `reports` (its `MemberReports`): a phase of training is one collect of
    every member; an evaluation evaluates each member on evaluation
    environments of its own, those of its seed's single run. The loop's
    scores pool the members' episodes."""
    members = population.Population(config, seeds, env_mode, saved)
    scope, name = member_checkpoint.SEEDS_VARIABLE.split('/')
    with tf.variable_scope(scope):
        tf.Variable(np.array(seeds, np.int64), trainable=False, name=name)
    reports = MemberReports(config.logdir, seeds)
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
    in `seed-S/eval` of the run folder, and the final table and
    `results.json`."""

    def __init__(self, logdir, seeds):
        """Report the `seeds`' scores of a run folder (None: write nothing)
        from the variable `scores` `[P]`, which evaluations assign."""
        self._logdir = logdir
        self._seeds = list(seeds)
        # Checkpointed, so that a run resumed at its end reports them.
        scope, name = member_checkpoint.SCORES_VARIABLE.split('/')
        with tf.variable_scope(scope):
            self.scores = tf.Variable(
                tf.fill([len(seeds)], np.nan), trainable=False, name=name)
        self._writers = None

    def report(self, sess, step):
        """Write each member's last score (where finite) at the step."""
        if not self._logdir:
            return
        if self._writers is None:
            self._writers = [
                tf.summary.FileWriter(os.path.join(
                    self._logdir, f'seed-{seed}', 'eval'))
                for seed in self._seeds]
        for writer, score in zip(self._writers, sess.run(self.scores)):
            if math.isfinite(score):
                writer.add_summary(tf.Summary(value=[tf.Summary.Value(
                    tag='mean_score', simple_value=score)]), step)
            writer.flush()

    def describe(self, sess, phase):
        """The members' IQM and range of an evaluation's scores, for its
        progress line (None for other phases)."""
        if phase != 'eval':
            return None
        scores = [score for score in sess.run(self.scores)
                  if math.isfinite(score)]
        if not scores:
            return 'no member ended an episode'
        text = (f'members IQM {seed_statistics.interquartile_mean(scores):.1f}'
                f' range {min(scores):.1f} to {max(scores):.1f}')
        missing = len(self._seeds) - len(scores)
        if missing:
            text += f' ({missing} without an episode)'
        return text

    def finish(self, sess):
        """Log the table of the members' final scores and their IQM with
        its interval; write them to `results.json`, and every member's
        evaluations to `curves.csv`; return them."""
        rows = [
            dict(member=f'seed-{seed}', seed=seed,
                 final_score=float(score) if math.isfinite(score) else None)
            for seed, score in zip(self._seeds, sess.run(self.scores))]
        finite = [row['final_score'] for row in rows
                  if row['final_score'] is not None]
        results = dict(members=rows, final=seed_statistics.seed_summary(
            finite) if finite else None)
        logger = logging.getLogger('agents')
        width = max(len(row['member']) for row in rows)
        for row in rows:
            logger.info('%s  %s', row['member'].ljust(width),
                        sweep_records.format_score(row['final_score']))
        for line in seed_statistics.summary_table(
                [('final', results['final'])], label='score'):
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
        for seed in self._seeds:
            folder = os.path.join(self._logdir, f'seed-{seed}', 'eval')
            curve = {}
            names = (tf.io.gfile.listdir(folder)
                     if tf.io.gfile.isdir(folder) else [])
            for name in sorted(names):
                for event in tf.train.summary_iterator(
                        os.path.join(folder, name)):
                    for value in event.summary.value:
                        if value.tag == 'mean_score':
                            curve[event.step] = value.simple_value
            rows += [(label, seed, step, score)
                     for step, score in sorted(curve.items())]
        return rows

    def close(self):
        """Close the summary writers."""
        for writer in self._writers or ():
            writer.close()
        self._writers = None
