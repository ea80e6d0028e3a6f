"""Tests for the scopes of state that checkpoints leave out."""

import re

import tensorflow.compat.v1 as tf

from agents import tools
from agents.tools import temporary_scope

# The pattern 2017 training scripts pass to `define_saver`.
PATTERN_2017 = r'.*_temporary/.*'


def test_repeated_scopes_keep_the_suffix():
    with tf.Graph().as_default():
        names = []
        for _ in range(3):
            with temporary_scope.temporary_scope('loop') as scope:
                names.append(tf.Variable(0, name='a').name)
            with temporary_scope.reenter(scope):
                names.append(tf.Variable(0, name='b').name)
        with tf.name_scope('outer'):
            with temporary_scope.temporary_scope('loop'):
                names.append(tf.Variable(0, name='c').name)
    assert names == [
        'loop_temporary/a:0', 'loop_temporary/b:0',
        'loop_1_temporary/a:0', 'loop_1_temporary/b:0',
        'loop_2_temporary/a:0', 'loop_2_temporary/b:0',
        'outer/loop_temporary/c:0']


def test_a_2017_saver_pattern_leaves_out_every_loop_and_env_state():
    """A second Loop once put its score means under `loop_temporary_1/`.

    A 2017 saver kept them, restored them into evaluation, and the mean
    score printed mixed in old episodes.
    """
    with tf.Graph().as_default():
        for _ in range(2):
            loop = tools.Loop(None)
            loop.add_phase(
                'eval', tf.constant([True]), tf.constant([1.0]),
                tf.constant(''), 10)
            tools.InGraphBatchEnv(tools.BatchEnv(
                [tools.MockEnvironment(
                    observ_shape=(2,), action_shape=(1,),
                    min_duration=3, max_duration=3)], True))
        kept = [
            variable.name for variable in tf.global_variables()
            if not re.match(PATTERN_2017, variable.name)]
    assert kept == ['global_step:0']
