"""Tests of reading a member of a population's checkpoint."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.training import member_checkpoint


def _save(path, values):
    """Write a checkpoint of variables of the given values by name."""
    with tf.Graph().as_default():
        variables = [tf.Variable(value, name=name)
                     for name, value in values.items()]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return tf.train.Saver(variables).save(sess, path)


@pytest.fixture(name='population')
def fixture_population(tmp_path):
    """A checkpoint of a population of three members."""
    return _save(str(tmp_path / 'population.ckpt'), {
        'population/seeds': np.array([3, 8, 5], np.int64),
        'population_evaluation/eval_scores': np.array(
            [-2.0, np.nan, -1.0], np.float32),
        'weights': np.arange(6, dtype=np.float32).reshape(3, 2),
        'step': np.int64(40)})


def test_find_member_by_name_or_the_best_last_evaluation(population):
    assert member_checkpoint.saved_members(tf.train.load_checkpoint(
        population)) == [(3, ()), (8, ()), (5, ())]
    assert member_checkpoint.find_member(population, None, ValueError) == (
        2, 'seed-5')
    assert member_checkpoint.find_member(
        population, 'seed-8', ValueError) == (1, 'seed-8')
    with pytest.raises(ValueError) as error:
        member_checkpoint.find_member(population, 'seed-9', ValueError)
    assert str(error.value) == (
        f'--member=seed-9 is not a member of {population}; expected one of '
        'seed-3, seed-8, seed-5.')


def test_members_of_variants_are_named_by_their_setting(tmp_path):
    settings = [(('learning_rate', '1e-3'), ('discount', '0.9'))] * 2 + [
        (('learning_rate', '3e-4'), ('discount', '0.9'))]
    assert member_checkpoint.members([3, 8], [settings[0], settings[2]]) == [
        (3, settings[0]), (8, settings[0]), (3, settings[2]),
        (8, settings[2])]
    path = _save(str(tmp_path / 'variants.ckpt'), {
        'population/seeds': np.array([3, 8, 3], np.int64),
        'population/variants': np.array(
            member_checkpoint.encode_settings(settings)),
        'population_evaluation/eval_scores': np.array(
            [-2.0, -3.0, -1.0], np.float32)})
    assert member_checkpoint.saved_members(tf.train.load_checkpoint(
        path)) == [(3, settings[0]), (8, settings[0]), (3, settings[2])]
    assert member_checkpoint.find_member(path, None, ValueError) == (
        2, 'learning_rate=3e-4-discount=0.9/seed-3')
    assert member_checkpoint.find_member(
        path, 'learning_rate=1e-3-discount=0.9/seed-8', ValueError)[0] == 1
    with pytest.raises(ValueError, match=(
            'expected one of learning_rate=1e-3-discount=0.9/seed-3, ')):
        member_checkpoint.find_member(path, 'seed-3', ValueError)


def test_a_single_runs_checkpoint_has_no_members(tmp_path):
    single = _save(str(tmp_path / 'single.ckpt'), {'step': np.int64(40)})
    assert member_checkpoint.find_member(single, None, ValueError) == (
        None, None)
    with pytest.raises(ValueError) as error:
        member_checkpoint.find_member(single, 'seed-3', ValueError)
    assert str(error.value) == (
        f'--member=seed-3 names a member of a population, but {single} is '
        'a single run; leave --member out.')


def test_restore_member_loads_its_slice_of_stacked_variables(population):
    with tf.Graph().as_default():
        weights = tf.Variable(tf.zeros([2]), name='weights')
        step = tf.Variable(np.int64(0), name='step')
        slots = tf.Variable(7.0, name='weights/Adam')
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            member_checkpoint.restore_member(
                sess, [weights, step, slots], population, 1)
            values = sess.run([weights, step, slots])
    np.testing.assert_array_equal(values[0], [2.0, 3.0])
    assert values[1:] == [40, 7.0]
