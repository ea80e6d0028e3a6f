"""Experiment configurations: plain functions returning dictionaries, each
inheriting with `return dict(default(), **locals())`; docs/learning.md has
the scores of each and why its settings are so."""

# Every local variable of a config function is a returned setting.
# pylint: disable=possibly-unused-variable

import tensorflow.compat.v1 as tf

from agents import algorithms
from agents.scripts import networks
from agents.scripts import tasks


def default():
    """Default configuration for PPO."""
    # General
    algorithm = algorithms.PPO
    num_agents = 16
    max_agents = 1024  # Refuses typos such as 1000000; raise it at need.
    eval_episodes = 16  # Evaluation environments, one episode each.
    eval_stochastic = False  # Sample evaluation actions; False: the mode.
    use_gpu = False
    seed = None
    # Environment
    normalize_ranges = True
    max_length = None  # Episode cap; None uses the env's own time limit.
    worker_timeout = 600  # Seconds a worker may take to answer.
    restart_workers = False  # Replace failed workers and drop their episode.
    session_threads = None  # Threads of TensorFlow's pools; None: per core.
    # Ops (and in-process environments) in the calling thread, not the
    # inter-op pool: faster for small networks (benchmarks/caller_thread.py).
    caller_thread = True
    # Many steps per session call (PPO.collect), XLA-compiled on in-graph
    # tasks. False: one session call per batch step.
    compile_rollout = True
    # Training steps between evaluations; None: those of update_every
    # full-length episodes (at most `steps`).
    eval_every = None
    # Network
    network = networks.feed_forward_gaussian
    weight_summaries = dict(
        all=r'.*', policy=r'.*/policy/.*', value=r'.*/value/.*')
    policy_layers = 200, 100
    value_layers = 200, 100
    activation = tf.nn.relu  # Of the hidden layers.
    mean_activation = 'tanh'  # Or None: a linear policy mean.
    weight_init = 'glorot'  # Or 'orthogonal'.
    init_output_factor = 0.1
    init_std = 0.35
    recurrent_value = False  # A GRU in the value too (recurrent_gaussian).
    # Optimization
    update_every = 16  # Episodes per update.
    update_steps = None  # Or train once the episodes hold this many steps.
    # Or hand each agent's running segment to the memory every this many
    # of its steps, bootstrapped, as fixed-length rollouts (SB3's n_steps).
    rollout_length = None
    update_epochs = 25
    optimizer = tf.train.AdamOptimizer
    learning_rate = 1e-4
    learning_rate_decay = None  # Or 'linear': to zero at `steps`.
    batch_size = 20  # Chunks per mini-batch.
    chunk_length = 50  # Steps per chunk.
    max_gradient_norm = None
    # The update as one XLA-compiled call: 1.46x as fast as plain graph ops
    # (benchmarks/compiled_update.py), after a compile of a few seconds.
    compile_update = True
    # Losses
    discount = 0.995
    gae_lambda = None
    bootstrap_truncated = True
    reward_normalization = 'reward'  # Or 'return' (its std), or None.
    value_loss_clip = None
    entropy_regularization = 0.0
    kl_penalty = True  # False needs `ppo_clip`.
    kl_target = 1e-2
    kl_cutoff_factor = 2
    kl_cutoff_coef = 1000
    kl_init_penalty = 1
    ppo_clip = None
    return locals()


def _classic_control():
    """What pendulum and cartpole share, tuned for few steps to a good score:
    without the decay of the learning rate one pendulum seed in three
    collapsed after 40k steps."""
    num_agents = 8
    update_every = 8
    eval_every = 2000
    eval_episodes = 8
    reward_normalization = 'return'
    gae_lambda = 0.95
    learning_rate = 1e-3
    learning_rate_decay = 'linear'
    max_gradient_norm = 0.5
    batch_size = 8
    return dict(default(), **locals())


def pendulum():
    """Swing up and balance a pendulum (classic control)."""
    env = 'Pendulum-v1'
    max_length = 200
    steps = 1.5e5  # 150k
    discount = 0.98
    policy_layers = 128, 128
    value_layers = 128, 128
    init_std = 0.6
    kl_target = 0.1
    update_epochs = 20
    return dict(_classic_control(), **locals())


def pendulum_partial():
    """Pendulum that sees its angle but not its velocity, recurrent policy
    and value (docs/learning.md); mini-batches hold whole episodes, so the
    recurrent state is carried from their first step."""
    env = tasks.pendulum_without_velocity
    network = networks.recurrent_gaussian
    recurrent_value = True
    discount = 0.9
    # The schedule these scores were measured with (not `pendulum`'s).
    num_agents = 16
    update_every = 16
    eval_episodes = 16
    kl_target = 0.03
    policy_layers = 64, 64
    value_layers = 64, 64
    chunk_length = 200
    batch_size = 2
    return dict(pendulum(), **locals())


def pendulum_partial_feed_forward():
    """The same partially observed pendulum with a feed-forward policy."""
    network = networks.feed_forward_gaussian
    return dict(pendulum_partial(), **locals())


def cartpole():
    """Balance a pole on a cart with two discrete actions; every reward is
    1, so only the return's normalization (not the reward's) fits."""
    env = 'CartPole-v1'
    max_length = 500
    steps = 1e5  # 100k
    network = networks.feed_forward_categorical
    discount = 0.99
    policy_layers = 64, 64
    value_layers = 64, 64
    update_epochs = 10
    return dict(_classic_control(), **locals())


def _mujoco_base():
    """What the MuJoCo configs share: 1M steps of 2 agents, no KL penalty."""
    max_length = 1000
    steps = 1e6  # 1M
    num_agents = 2
    eval_every = 10000
    eval_episodes = 2
    reward_normalization = 'return'
    mean_activation = None
    kl_penalty = False
    chunk_length = 1
    batch_size = 64
    return dict(default(), **locals())


def _locomotion():
    """RL Baselines3 Zoo's MuJoCo settings, for `cheetah` at 1M steps: an
    update every 512 steps, from 2 agents (docs/learning.md)."""
    rollout_length = 256
    update_steps = 512
    # Rows of the memory: a rollout of each agent, and the end of an
    # episode within it.
    update_every = 4
    init_std = 0.135  # exp(-2)
    policy_layers = 256, 256
    value_layers = 256, 256
    return dict(_mujoco_base(), **locals())


def cheetah():
    """Run forward with a planar cheetah (MuJoCo)."""
    env = 'HalfCheetah-v5'
    discount = 0.98
    gae_lambda = 0.92
    learning_rate = 2.0633e-5
    entropy_regularization = 0.0004
    ppo_clip = 0.1
    update_epochs = 20
    max_gradient_norm = 0.8
    return dict(_locomotion(), **locals())


def _mujoco():
    """Settings for Hopper, Walker, Ant, Humanoid and Reacher, for 1M steps:
    the PPO setup of Tianshou's and CleanRL's published MuJoCo scores."""
    update_every = 64  # Capacity of the memory, in episodes.
    update_steps = 2000  # 1,000 of each agent, whose episodes end together.
    ppo_clip = 0.2
    weight_init = 'orthogonal'
    init_output_factor = 0.01
    init_std = 0.607  # exp(-0.5)
    activation = tf.nn.tanh
    policy_layers = 64, 64
    value_layers = 64, 64
    update_epochs = 10
    learning_rate = 3e-4
    learning_rate_decay = 'linear'
    max_gradient_norm = 0.5
    discount = 0.99
    gae_lambda = 0.95
    return dict(_mujoco_base(), **locals())


def hopper():
    """Hop forward with a planar one-legged robot (MuJoCo); the entropy bonus
    keeps the greedy gaits from falling (docs/learning.md)."""
    env = 'Hopper-v5'
    entropy_regularization = 0.001
    return dict(_mujoco(), **locals())


def walker():
    """Walk forward with a planar biped (MuJoCo)."""
    env = 'Walker2d-v5'
    return dict(_mujoco(), **locals())


def ant():
    """Walk forward with a four-legged robot (MuJoCo), without the contact
    forces in the observation, as the published scores (docs/learning.md)."""
    env = tasks.ant_without_contact_forces
    return dict(_mujoco(), **locals())


def humanoid():
    """Walk forward with a humanoid (MuJoCo)."""
    env = 'Humanoid-v5'
    return dict(_mujoco(), **locals())


def reacher():
    """Reach a target with a two-joint arm (MuJoCo)."""
    env = 'Reacher-v5'
    max_length = 50
    eval_episodes = 10
    return dict(_mujoco(), **locals())
