"""Experiment configurations: plain functions returning dictionaries.

Each task inherits the defaults with `return dict(default(), **locals())`;
the training script wraps the result in a locked `tools.AttrDict`.
"""

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
    # Most agents a run may have: a typo such as 1000000 would build that
    # many environments for minutes; raise it where the machine holds more.
    max_agents = 1024
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
    # Run the ops in the calling thread rather than the inter-op pool:
    # faster for small networks (benchmarks/caller_thread.py). The Python of
    # in-process environments then runs in that thread too, where
    # asynchronous exceptions such as Ray's cancellation land in it
    # (sweep.py turns it off).
    caller_thread = True
    # Run many steps per session call: training (PPO.collect, feed-forward
    # networks, also with rollout_length) in every env mode, XLA-compiled on
    # in-graph tasks (env mode graph), a plain graph loop around Python and
    # C environments; each evaluation on in-graph tasks as one compiled
    # call of all its steps (tools.compiled_rollout). False steps one
    # session call per batch step.
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
    # Run the whole update (advantages, value targets and every mini-batch
    # step) as one XLA-compiled call: 1.46x as fast as plain graph ops at
    # the pendulum and cheetah networks (benchmarks/compiled_update.py),
    # after a compile of a few seconds once per process (or a load from
    # the persistent cache, see scripts/xla_cache.py). False: plain ops.
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


def pendulum():
    """Swing up and balance a pendulum (classic control)."""
    env = 'Pendulum-v1'
    max_length = 200
    steps = 1.5e5  # 150k
    # Tuned for few environment steps to a mean return of -200 and a good
    # final score (benchmarks/learning.py, 3 seeds at 100k, README
    # "Learning"): an update every 8 episodes of 8 agents (1,600 steps), 20
    # epochs under a KL target of 0.1, a discount of 0.98 (a horizon long
    # enough to plan the swing-up), rewards scaled by the return's standard
    # deviation, a wider initial policy and 128x128 networks (64x64 ended
    # about 3 lower). The learning rate decays to zero at `steps`; without
    # the decay one seed in three collapsed after 40k steps. Eight greedy
    # evaluation episodes, on environments of their own, every 2,000
    # steps: 50 points on a curve of 100k.
    num_agents = 8
    update_every = 8
    eval_every = 2000
    eval_episodes = 8
    discount = 0.98
    reward_normalization = 'return'
    gae_lambda = 0.95
    learning_rate = 1e-3
    learning_rate_decay = 'linear'
    max_gradient_norm = 0.5
    policy_layers = 128, 128
    value_layers = 128, 128
    init_std = 0.6
    kl_target = 0.1
    update_epochs = 20
    batch_size = 8
    return dict(default(), **locals())


def pendulum_partial():
    """Pendulum that sees its angle but not its velocity, recurrent policy.

    The observation lacks the angular velocity, so the policy must infer it
    from the observations over time: a GRU of 64 units after a hidden
    layer. The value network has a GRU of its own (a feed-forward value
    cannot tell a fast from a slow pendulum at the same angle), the
    rewards are scaled by the return's standard deviation and the discount
    stays at 0.9: 3 seeds at 100k end at -248, -251 and -223, where the
    2017 network (feed-forward value, rewards scaled by their own standard
    deviation) ended at -729 to -872. Mini-batches hold whole episodes, so
    the recurrent state is carried from their first step.
    """
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
    """Balance a pole on a cart with two discrete actions.

    Every reward is 1, so their standard deviation is zero and the default
    `reward_normalization='reward'` would turn each into the clip value of
    10, with value targets up to 1,000; dividing by the discounted return's
    standard deviation keeps them near unit scale, and all seeds then hold
    500 (benchmarks/learning.py, 3 seeds at 100k; with 'reward' the greedy
    policy dropped to 200-400 between reports). Evaluation runs on
    environments of its own, eight greedy episodes every 2,000 steps: 50
    points on a curve of 100k, and a 2,000-step run evaluates once.
    """
    env = 'CartPole-v1'
    max_length = 500
    steps = 1e5  # 100k
    network = networks.feed_forward_categorical
    num_agents = 8
    eval_every = 2000
    eval_episodes = 8
    reward_normalization = 'return'
    discount = 0.99
    gae_lambda = 0.95
    learning_rate = 1e-3
    learning_rate_decay = 'linear'
    policy_layers = 64, 64
    value_layers = 64, 64
    max_gradient_norm = 0.5
    update_every = 8
    update_epochs = 10
    batch_size = 8
    return dict(default(), **locals())


def _locomotion():
    """RL Baselines3 Zoo's MuJoCo settings, for `cheetah` at 1M steps.

    The PPO of RL Baselines3 Zoo's tuned MuJoCo settings, on our batch: an
    update every 512 steps, as the Zoo's one environment with rollouts of
    512 steps, here from 2 agents handing over rollouts of 256 steps each
    (a batch step of 2 environments costs little more than one of 1; with
    8 agents of 64 steps the final returns at 1M fell to 4,062-5,321); many
    epochs over mini-batches of single steps (`chunk_length` 1), the
    clipped objective without the KL penalty, rewards scaled by the
    discounted return's standard deviation, a linear policy mean, a small
    initial standard deviation, and separate 256x256 ReLU networks. An
    evaluation of one greedy episode per agent follows every 10,000
    training steps.
    """
    max_length = 1000
    steps = 1e6  # 1M
    num_agents = 2
    rollout_length = 256
    update_steps = 512
    # Rows of the memory: a rollout of each agent, and the end of an
    # episode within it.
    update_every = 4
    eval_every = 10000
    eval_episodes = 2
    reward_normalization = 'return'
    mean_activation = None
    kl_penalty = False
    init_std = 0.135  # exp(-2)
    policy_layers = 256, 256
    value_layers = 256, 256
    chunk_length = 1
    batch_size = 64
    return dict(default(), **locals())


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
    """Settings for Hopper, Walker, Ant, Humanoid and Reacher, for 1M steps.

    The PPO setup that Tianshou and CleanRL publish MuJoCo scores with:
    separate 64x64 tanh networks with orthogonal weights and a 0.01 policy
    output scale, 10 epochs over mini-batches of 64 single steps every
    ~2,000 steps, a learning rate of 3e-4 decaying to zero, the clipped
    objective without the KL penalty, rewards scaled by the discounted
    return's standard deviation, and a linear policy mean starting from a
    standard deviation of exp(-0.5). Two agents finish their episodes
    together, so an update follows every 1,000 steps of each.
    """
    steps = 1e6  # 1M
    max_length = 1000
    num_agents = 2
    update_every = 64  # Capacity of the memory, in episodes.
    update_steps = 2000
    eval_every = 10000
    eval_episodes = 2
    reward_normalization = 'return'
    mean_activation = None
    kl_penalty = False
    ppo_clip = 0.2
    weight_init = 'orthogonal'
    init_output_factor = 0.01
    init_std = 0.607  # exp(-0.5)
    activation = tf.nn.tanh
    policy_layers = 64, 64
    value_layers = 64, 64
    chunk_length = 1
    batch_size = 64
    update_epochs = 10
    learning_rate = 3e-4
    learning_rate_decay = 'linear'
    max_gradient_norm = 0.5
    discount = 0.99
    gae_lambda = 0.95
    return dict(default(), **locals())


def hopper():
    """Hop forward with a planar one-legged robot (MuJoCo).

    A small entropy bonus keeps the gaits robust: without it, seed 2's
    greedy gait fell in about half of its episodes over its last 300k
    steps (final 1,790; with it 3,333). RL Zoo's tuned Hopper settings
    (discount 0.999, GAE 0.99, lr ~1e-4, initial standard deviation
    exp(-2), 256x256 ReLU) stood still on our PPO: seed 0 scored 990-998
    from 280k to 570k steps, and the discount and GAE alone kept seed 2
    at ~1,000 to 710k (README).
    """
    env = 'Hopper-v5'
    entropy_regularization = 0.001
    return dict(_mujoco(), **locals())


def walker():
    """Walk forward with a planar biped (MuJoCo)."""
    env = 'Walker2d-v5'
    return dict(_mujoco(), **locals())


def ant():
    """Walk forward with a four-legged robot (MuJoCo).

    Without the contact forces in the observation, as the tasks of the
    published scores (see `tasks.ant_without_contact_forces`): with them,
    seed 0 ended at 1,048 after 1M steps, mostly standing for the alive
    bonus.
    """
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
