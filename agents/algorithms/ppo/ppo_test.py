"""Tests of PPO: options, rollouts, updates and their summaries."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from agents.algorithms.ppo import utility
from agents.algorithms.ppo import ppo


def ppo_in_graph(durations=(3,), **overrides):
    """PPO over one in-process mock environment, in the default graph."""
    # pylint: disable=import-outside-toplevel
    from agents import tools
    from agents.scripts import configs
    config = tools.AttrDict(configs.default())
    with config.unlocked:
        # The compiled update has tests of its own.
        config.update(max_length=10, steps=1000, update_every=50,
                      compile_update=False)
        config.update(overrides)
    # Sampled actions may leave the mock's range; training clips them too.
    env = tools.InGraphBatchEnv(tools.BatchEnv([tools.wrappers.ClipAction(
        tools.MockEnvironment(durations=durations))], True))
    step = tf.Variable(0, trainable=False, dtype=tf.int64)
    # Variables as in training: Grappler folds conditionals on constants.
    algo = ppo.PPO(
        env, step, tf.Variable(True, trainable=False),
        tf.Variable(False, trainable=False), config)
    return algo, tools.simulate(  # pylint: disable=not-callable
        env, algo, log=False)


def _count_updates(algo, step, rounds, steps):
    """Run `rounds` times `steps` steps in a new session.

    Returns:
      The number of updates after each round, and the memory's episode and
      step counts at the end.
    """
    # pylint: disable=protected-access
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = []
        for _ in range(rounds):
            for _ in range(steps):
                sess.run(step)
            seen.append(sess.run(algo._num_updates))
        return seen, sess.run((algo._memory_index, algo._memory_steps))


@pytest.mark.parametrize('mode, seen', [
    # The mock's episode of three steps rewards 1, 2, 3.
    ('reward', [1, 2, 3, 1, 2, 3]),
    # Discounted returns so far with discount 0.5, restarting per episode.
    ('return', [1, 2.5, 4.25, 1, 2.5, 4.25]),
])
def test_reward_normalization_statistics(mode, seen):
    """The reward scale is that of the rewards or of the running returns."""
    with tf.Graph().as_default():
        algo, step = ppo_in_graph(reward_normalization=mode, discount=0.5)
        # pylint: disable=protected-access
        reward_filter = algo._reward_filter
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(6):
                sess.run(step)
            count, mean, std = sess.run(
                (reward_filter.count, reward_filter.mean, reward_filter.std))
    assert count == 6
    assert mean == pytest.approx(np.mean(seen))
    assert std == pytest.approx(np.std(seen, ddof=1), rel=1e-5)


@pytest.mark.parametrize('kl_penalty, expected', [(True, True), (False, False)])
def test_kl_penalty_can_be_left_out(kl_penalty, expected):
    """Without the KL penalty the policy loss is the clipped surrogate."""
    with tf.Graph().as_default():
        algo, _ = ppo_in_graph(kl_penalty=kl_penalty, ppo_clip=0.2)
        old = utility.policy_from_params(False, (
            tf.zeros([1, 2, 3]), tf.zeros([1, 2, 3])))
        new = utility.policy_from_params(False, (
            tf.ones([1, 2, 3]), tf.zeros([1, 2, 3])))
        loss, statistics = algo._policy_loss(  # pylint: disable=protected-access
            old, new, tf.zeros([1, 2, 3]), tf.ones([1, 2]), tf.constant([2]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            loss, surrogate, penalty, cutoff = sess.run((
                loss, statistics['surrogate_loss'], statistics['kl_penalty'],
                statistics['kl_cutoff']))
    # KL of unit-variance Gaussians one apart in 3 dimensions: 1.5; both
    # the penalty (coefficient 1) and the cutoff are then far from zero.
    assert (penalty > 0 and cutoff > 0) == expected
    assert loss == pytest.approx(surrogate + penalty + cutoff)
    # The ratio exp(-1.5) falls below 1 - 0.2, so the surrogate is the
    # unclipped ratio times the unit advantage.
    assert surrogate == pytest.approx(-np.exp(-1.5), rel=1e-5)


@pytest.mark.parametrize('update_steps, updates', [
    # Episodes of three steps: only the episode count of 10 would train.
    (None, [0, 0, 0, 0]),
    # Six steps are two episodes: an update after every second one.
    (6, [0, 1, 1, 2]),
])
def test_update_steps_trigger_training(update_steps, updates):
    """Training starts once the memory holds `update_steps` steps."""
    with tf.Graph().as_default():
        algo, step = ppo_in_graph(
            update_every=10, update_steps=update_steps, update_epochs=1,
            batch_size=2, chunk_length=2)
        seen, memory = _count_updates(algo, step, rounds=4, steps=3)
    assert seen == updates
    assert memory == ((4, 12) if update_steps is None else (0, 0))


def test_rollouts_hand_over_segments_of_running_episodes():
    """Every two steps a segment moves to the memory, episodes or not.

    Episodes of five steps: the counts of steps go on across episodes, so
    the first episode gives segments of 2, 2 and 1 steps (its end), the
    second 1 (completing a rollout), 2 and 2 (its end and a rollout's).
    """
    with tf.Graph().as_default():
        algo, step = ppo_in_graph(durations=(5,), rollout_length=2)
        # pylint: disable=protected-access
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(10):
                sess.run(step)
            data, length = sess.run(algo._memory.data())
            index, steps, counts = sess.run((
                algo._memory_index, algo._memory_steps, algo._rollout_steps))
    assert (index, steps, counts.tolist()) == (6, 10, [0])
    np.testing.assert_array_equal(length[:6], [2, 2, 1, 1, 2, 2])
    # Rows hold no more than a rollout; observations count the steps of
    # the episode (normalized, so compare their order only).
    assert data.observ.shape[1] == 2
    # Only segments whose episode goes on bootstrap their last step.
    bootstrap = data.bootstrap[:6]
    goes_on = [(0, 1), (1, 1), (3, 0), (4, 1)]
    for row, time in goes_on:
        assert bootstrap[row, time] != 0
    mask = np.zeros_like(bootstrap, bool)
    for row, time in goes_on:
        mask[row, time] = True
    valid = np.arange(2)[None] < length[:6, None]
    assert not bootstrap[valid & ~mask].any()


@pytest.mark.parametrize('update_steps, updates', [(4, [1, 2]), (None, [0, 0])])
def test_rollouts_trigger_training(update_steps, updates):
    """Rollouts fill the memory up to `update_steps` mid-episode."""
    with tf.Graph().as_default():
        algo, step = ppo_in_graph(
            durations=(100,), rollout_length=2, update_steps=update_steps,
            update_every=10, update_epochs=1, batch_size=2, chunk_length=2)
        seen, _ = _count_updates(algo, step, rounds=2, steps=4)
    assert seen == updates


def test_rollouts_refuse_recurrent_networks():
    """A segment of a recurrent policy would start from the wrong state."""
    # pylint: disable=import-outside-toplevel
    from agents.scripts import networks
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=(
                r'Config rollout_length=8 needs a feed-forward network')):
            ppo_in_graph(
                rollout_length=8, network=networks.recurrent_gaussian,
                policy_layers=(8, 8), value_layers=(8, 8))


def test_update_logs_when_a_run_since_the_last_asked():
    """Updates seldom fall on the steps that log; they log when asked since.

    Only the first step asks for summaries; the update comes four steps
    later, with its summaries, and the next update has none.
    """
    with tf.Graph().as_default():
        algo, step = ppo_in_graph(
            durations=(100,), rollout_length=2, update_steps=4,
            update_every=10, update_epochs=1, batch_size=2, chunk_length=2)
        # pylint: disable=protected-access
        ask = algo._should_log.assign(True)
        stop = algo._should_log.assign(False)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tags = []
            for index in range(8):
                sess.run(ask if index == 0 else stop)
                summary = sess.run(step)[2]
                tags.append({
                    value.tag for value in
                    tf.Summary.FromString(summary).value} if summary else set())
    assert 'training/update/loss' not in tags[0]
    assert 'training/update/loss' in tags[3]
    assert 'training/adjust_penalty/kl_change' in tags[3]
    assert not set().union(*tags[4:])


def test_caller_thread_and_pool_train_alike():
    """The update's parts run in their order whoever runs the ops.

    Ops run in the calling thread (training's default) or in the inter-op
    pool. Ordering left to chance, such as a KL pass racing the mini-batch
    steps it must follow, gives different weights in the two.
    """
    results = []
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        algo, step = ppo_in_graph(
            update_every=2, update_epochs=3, batch_size=2, chunk_length=3)
        # One graph, a fresh session per run: each starts from the same
        # seeded initial values and random streams.
        for pool in (-1, 0, 0, 0, 0):
            options = tf.RunOptions(inter_op_thread_pool=pool)
            # pylint: disable=protected-access
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(30):
                    sess.run(step, options=options)
                results.append(sess.run(
                    [algo._num_updates, algo._penalty] +
                    tf.trainable_variables()))
    assert results[0][0] == 5
    for result in results[1:]:
        for expected, value in zip(results[0], result):
            np.testing.assert_array_equal(value, expected)
