"""The rejax peer of benchmarks/peers.py: PPO on gymnax, compiled by JAX.

rejax (PPO in the PureJaxRL design) writes the environment, the rollout, the
advantages, the epochs of mini-batches and the evaluations as JAX arrays, and
compiles the whole training run into one XLA call. It runs in a virtual
environment of its own, so that TensorFlow stays untouched and the worker's
memory and CPU time are JAX's alone:

    python3 -m venv ~/venv-jax    # setup.py's bench-jax extra:
    ~/venv-jax/bin/pip install 'rejax==0.1.3' 'gymnax==0.0.9' \
        'jax==0.10.2' absl-py
    python benchmarks/peers.py --systems=ours,rejax_same \
        --jax_python=~/venv-jax/bin/python

This module never imports TensorFlow or `agents`; peers.py imports it in
both interpreters. Systems:

  rejax_same     rejax PPO doing the work of our config, see
                 `same_work_settings` for the mapping and what cannot match
  rejax_default  rejax's own Pendulum settings (`REJAX_PENDULUM`)

How its times compare with ours: the wall-clock starts before rejax builds
the environment and the networks and includes the compilation of the whole
run (reported as `compile_seconds` too), as ours includes building and
initializing its graph. rejax evaluates inside its compiled loop, after
every `eval_freq` training steps; the evaluation here is ours (greedy
episodes of the policy mean, `eval_episodes` of them, as many environments
as episodes), and a host callback ordered with the computation records the
wall-clock time and score of each when it finishes, so the first of these at
or above the target is the time to target as ours is timed after its eval
phase. rejax's loop is one compiled call and cannot stop early, so
`--until_target` still runs it to the end; its time to target is the same.
"""

import math
import os
import time
import types

# rejax's PPO settings for Pendulum-v1 in its repository
# (configs/gymnax/pendulum.yaml, rejax 0.1.3): 100 environments of 100 steps
# per update, 10 epochs of 10 mini-batches, 64x64 swish networks (the
# default), observations normalized, rewards not.
REJAX_PENDULUM = dict(
    agent_kwargs=dict(activation='swish'),
    num_envs=100, num_steps=100, num_epochs=10, num_minibatches=10,
    learning_rate=1e-3, max_grad_norm=10.0, gamma=0.995, gae_lambda=0.95,
    clip_eps=0.2, ent_coef=0.0, vf_coef=0.5, normalize_observations=True)

# Our task ids with the gymnax environment of the same dynamics and rewards.
GYMNAX_TASKS = {'Pendulum-v1': 'Pendulum-v1'}

# The packages of setup.py's bench-jax extra; installing them alone keeps
# TensorFlow (our install_requires) out of the JAX environment.
_EXTRA_HINT = ("install the bench-jax extra there, in a virtual environment "
               "of its own: pip install 'rejax==0.1.3' 'gymnax==0.0.9' "
               "'jax==0.10.2' absl-py")


def same_work_settings(config):
    """rejax PPO settings that do the work of one of our configs.

    The mapping: one environment per agent (`num_envs = num_agents`); a
    rollout of as many steps as our update collects (`update_every *
    max_length / num_agents` per environment, or `update_steps`, or our
    `rollout_length`); as many mini-batches as ours (the update's
    transitions over `batch_size * chunk_length`); the same epochs, hence
    the same gradient steps per environment step (on Pendulum 8
    environments of 200 steps, 20 epochs of 4 mini-batches of 400
    transitions); the same learning rate and its linear decay to zero over
    the run, discount, GAE lambda (none is lambda 1), entropy bonus, hidden
    layers and activation; observations normalized, rewards scaled by the
    discounted return's deviation where ours is (`'return'`).

    What rejax has no option for, and so differs: a clipped ratio (0.2, or
    our `ppo_clip`) instead of our adaptive KL penalty; the value's change
    clipped by the same bound (ours unclipped); `max_grad_norm` clips each
    gradient element (`optax.clip`), where ours bounds the global norm of
    all gradients; separate Adam optimizers of the policy and the value
    (value loss weighted 0.5), where ours adds both losses under one; an
    initial action deviation of 1 (ours `init_std`, 0.6 on Pendulum) and a
    linear policy mean with actions clipped to the range (ours a tanh mean
    in a normalized range); Flax's default weight initialization (LeCun
    normal; ours Glorot with a 0.1 output scale); advantages normalized per
    mini-batch (ours per update); no observation clipping (ours at 5); and
    an episode's time limit ends it without bootstrapping (ours bootstraps
    truncated episodes).

    Args:
        config: Our completed config (attribute and `get` access).

    Raises:
        ValueError: When a setting has no rejax counterpart to map to.

    Returns:
        JSON-serializable dict of `PPO.create` arguments plus
        `learning_rate_decay` (None or 'linear').
    """
    rollout = config.get('update_steps') or (
        config.update_every * config.max_length)
    num_steps = config.get('rollout_length') or rollout // config.num_agents
    transitions = num_steps * config.num_agents
    if not config.get('rollout_length') and rollout % config.num_agents:
        raise ValueError(
            f'The update of {rollout} steps does not split over '
            f'num_agents = {config.num_agents} environments.')
    minibatch = config.batch_size * config.chunk_length
    if transitions % minibatch:
        raise ValueError(
            f'The update of {transitions} transitions does not split into '
            f'mini-batches of {minibatch}.')
    if tuple(config.policy_layers) != tuple(config.value_layers):
        raise ValueError(
            f'policy_layers {tuple(config.policy_layers)} and value_layers '
            f'{tuple(config.value_layers)} differ; rejax uses one size for '
            f'both.')
    activation = config.get('activation')
    activation = getattr(activation, '__name__', activation) or 'relu'
    return dict(
        learning_rate_decay=config.get('learning_rate_decay'),
        agent_kwargs=dict(
            activation=activation,
            hidden_layer_sizes=list(config.policy_layers)),
        num_envs=config.num_agents,
        num_steps=num_steps,
        num_epochs=config.update_epochs,
        num_minibatches=transitions // minibatch,
        learning_rate=config.learning_rate,
        # No bound stands for none: rejax's default is infinity.
        max_grad_norm=config.get('max_gradient_norm') or math.inf,
        gamma=config.discount,
        gae_lambda=config.get('gae_lambda') or 1.0,
        clip_eps=config.get('ppo_clip') or 0.2,
        ent_coef=config.get('entropy_regularization') or 0.0,
        normalize_observations=True,
        normalize_rewards=config.get('reward_normalization') == 'return',
        reward_normalization_discount=config.discount)


def default_settings(task):
    """rejax's own settings of a task, in the form of `same_work_settings`.

    Raises:
        ValueError: When rejax has no settings for the task here.
    """
    if task != 'Pendulum-v1':
        raise ValueError(
            f"rejax_default has settings for Pendulum-v1 only, not '{task}'.")
    return dict(REJAX_PENDULUM, learning_rate_decay=None)


def iteration_steps(settings):
    """Training environment steps of one rejax update."""
    return settings['num_envs'] * settings['num_steps']


def check_task(task):
    """Raise a ValueError unless gymnax has the task."""
    if task not in GYMNAX_TASKS:
        raise ValueError(
            f"rejax runs gymnax tasks only: {', '.join(GYMNAX_TASKS)}; "
            f"got '{task}'.")


def import_error_message(python):
    """The one line printed when `python` cannot import rejax."""
    return f'rejax cannot be imported by {python}; {_EXTRA_HINT}.'


def create_algo(spec, record=None):
    """rejax PPO as the spec says, evaluating greedily on its schedule.

    Args:
        spec: Dict from peers.py's `make_spec` with a `rejax` entry of
            settings; `eval_every` must be a multiple of its update's steps
            (rejax trains whole updates between evaluations).
        record: None, or `record(train_steps, lengths, returns)`, called on
            the host when an evaluation has finished (an ordered host
            callback; `jax.vmap` cannot batch one, so vmapped runs leave
            it out).

    Raises:
        ImportError: With the install hint, when rejax is missing.
        ValueError: When the evaluation period splits an update.

    Returns:
        The rejax PPO; its `train(rng)` returns the final train state and,
        per evaluation, the lengths and returns of the greedy episodes.
    """
    modules = import_rejax()
    jnp = modules.jax.numpy
    settings = dict(spec['rejax'])
    period = spec['eval_every']
    if period % iteration_steps(settings):
        raise ValueError(
            f'eval_every = {period} is not a multiple of the '
            f'{iteration_steps(settings)} steps of one rejax update.')
    updates = math.ceil(spec['steps'] / iteration_steps(settings))
    if settings.pop('learning_rate_decay', None) == 'linear':
        # Per optimizer step; each network takes every mini-batch step.
        settings['learning_rate'] = modules.optax.linear_schedule(
            settings['learning_rate'], 0.0,
            updates * settings['num_epochs'] * settings['num_minibatches'])
    algo = modules.PPO.create(
        env=GYMNAX_TASKS[spec['task']], total_timesteps=int(spec['steps']),
        eval_freq=period, skip_initial_evaluation=True, **settings)

    def greedy_evaluation(algo, train_state, rng):
        def act(observ, unused_rng):
            if algo.normalize_observations:
                observ = algo.normalize_obs(train_state.obs_rms_state, observ)
            mean = algo.actor.apply(
                train_state.actor_ts.params, observ[None],
                method=lambda actor, observ: actor.action_mean(
                    actor.features(observ)))
            space = algo.env.action_space(algo.env_params)
            return jnp.clip(mean[0], space.low, space.high)

        lengths, returns = modules.evaluate(
            act, rng, algo.env, algo.env_params, spec['eval_episodes'],
            spec['max_length'])
        if record is not None:
            modules.io_callback(
                record, None, train_state.global_step, lengths, returns,
                ordered=True)
        return lengths, returns

    return algo.replace(eval_callback=greedy_evaluation)


def train(spec):
    """Train rejax PPO as the spec says, evaluating on the spec's schedule.

    Args:
        spec: As `create_algo` takes it, with a `seed`.

    Raises:
        ImportError: With the install hint, when rejax is missing.
        ValueError: When the evaluation period splits an update.

    Returns:
        Dict of the reports (training steps, all steps so far, seconds,
        mean evaluation return), the seconds, the total steps and the
        compile seconds.
    """
    jax = import_rejax().jax
    _use_compile_cache(jax, spec)
    # As ours, the clock starts after the imports, before the environment
    # and the networks are built.
    start = time.monotonic()
    reports = []
    counter = dict(eval_steps=0)

    def record(train_steps, lengths, returns):
        # Runs on the host when the compiled evaluation has finished.
        counter['eval_steps'] += int(lengths.sum())
        reports.append(dict(
            train_steps=int(train_steps),
            total_steps=int(train_steps) + counter['eval_steps'],
            seconds=time.monotonic() - start,
            score=float(returns.mean())))

    algo = create_algo(spec, record)
    rng = jax.random.PRNGKey(spec['seed'])
    compile_start = time.monotonic()
    compiled = jax.jit(algo.train).lower(rng).compile()
    compile_seconds = time.monotonic() - compile_start
    train_state, _ = compiled(rng)
    jax.block_until_ready(train_state)
    jax.effects_barrier()
    return dict(
        reports=reports, seconds=time.monotonic() - start,
        total_steps=int(train_state.global_step) + counter['eval_steps'],
        compile_seconds=compile_seconds)


def train_seeds(spec):
    """Train rejax PPO for several seeds in one compiled, vmapped call.

    rejax's way to train a population (its README): `jax.vmap` of the
    train function over one key per seed, compiled once. Each member
    starts from `PRNGKey(seed)`, as `train` does for one seed.

    Args:
        spec: As `create_algo` takes it, with a list of `seeds`.

    Raises:
        ImportError: With the install hint, when rejax is missing.
        ValueError: When the evaluation period splits an update.

    Returns:
        Dict of the seconds (from before the environments and networks are
        built to the end, compilation included), the compile seconds, the
        total environment steps of all members (training and evaluation),
        their training steps, each member's evaluation returns (one mean
        per evaluation) and the versions of the JAX packages.
    """
    jax = import_rejax().jax
    _use_compile_cache(jax, spec)
    start = time.monotonic()
    algo = create_algo(spec)
    keys = jax.numpy.stack(
        [jax.random.PRNGKey(seed) for seed in spec['seeds']])
    compile_start = time.monotonic()
    compiled = jax.jit(jax.vmap(algo.train)).lower(keys).compile()
    compile_seconds = time.monotonic() - compile_start
    train_state, (lengths, returns) = compiled(keys)
    jax.block_until_ready((train_state, lengths, returns))
    seconds = time.monotonic() - start
    train_steps = int(train_state.global_step.sum())
    return dict(
        seconds=seconds, compile_seconds=compile_seconds,
        total_steps=train_steps + int(lengths.sum()),
        train_steps=train_steps,
        scores=returns.mean(axis=-1).tolist(),
        packages=jax_packages())


def import_rejax():
    """Import JAX and rejax, which the caller times without the imports.

    Raises:
        ImportError: With the install hint, when one is missing.

    Returns:
        A namespace of `jax`, `optax`, `io_callback`, rejax's `PPO` and
        `evaluate`.
    """
    try:
        # pylint: disable=import-outside-toplevel
        import jax
        import optax
        from jax.experimental import io_callback
        from rejax import PPO
        from rejax.evaluate import evaluate
    except ImportError as error:
        raise ImportError(
            f'{error}; {_EXTRA_HINT}.') from error
    return types.SimpleNamespace(
        jax=jax, optax=optax, io_callback=io_callback, PPO=PPO,
        evaluate=evaluate)


def jax_packages():
    """Versions of the packages of the bench-jax extra in this interpreter."""
    from importlib import metadata  # pylint: disable=import-outside-toplevel
    versions = {}
    for name in ('jax', 'jaxlib', 'rejax', 'gymnax', 'flax', 'optax'):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def _use_compile_cache(jax, spec):
    """JAX's persistent cache of compiled code, as ours uses XLA's."""
    if spec.get('compile_cache'):
        jax.config.update('jax_compilation_cache_dir', os.path.join(
            spec['compile_cache'], 'jax'))
        jax.config.update('jax_persistent_cache_min_compile_time_secs', 0)
