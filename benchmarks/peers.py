r"""Peer benchmark: our BatchPPO against Stable-Baselines3 and rejax PPO.

Trains each system on the same task and step budget, seed by seed in one
run, and prints per system a table of the environment steps per second end
to end, the wall-clock time, the CPU time, the peak memory, the evaluation
returns, and the wall-clock time until the mean evaluation return first
reached the task's target (-200 on Pendulum-v1). Install the peer first:

    pip install -e '.[bench]'
    python benchmarks/peers.py
    python benchmarks/peers.py --seeds=0 --steps=30000   # a quick look
    python benchmarks/peers.py --tasks=HalfCheetah-v5 \
        --systems=ours,ours_slices,sb3_same,sb3_zoo
    python benchmarks/peers.py --tasks=HalfCheetah-v5 \
        --systems=ours,sb3_zoo --until_target   # time to target only

benchmarks/peers_population.py times many seeds of a task at once, each
system's way (ours as one population, SB3 two processes at a time, rejax
vmapped over the seeds).

Systems:

  ours            our config of the task (agents/scripts/configs.py), with
                  the environment mode the training script picks by default
                  (`--env_mode=auto`: the in-graph task where the task has
                  one, as Pendulum-v1, else it times the candidates briefly)
  ours_graph      the same on the in-graph task (`--env_mode=graph`: the
                  environments are TensorFlow ops of the training graph)
  ours_inprocess  the same with the environments in the training process
  ours_slices     the same with one worker process per core, each stepping
                  a slice of the batch
  ours_processes  the same with one ExternalProcess worker per environment
  sb3_same        SB3 PPO doing the same work as `ours`: settings derived
                  from our config by `same_work_settings` (see there)
  sb3_zoo         SB3 PPO with the tuned RL-Zoo hyperparameters (`ZOO`)
  rejax_same      rejax PPO (JAX, the whole run one compiled call) doing
                  the same work as `ours`, see benchmarks/peers_rejax.py
  rejax_default   rejax PPO with its own Pendulum settings

The rejax systems run in the interpreter `--jax_python` names, a virtual
environment with the `bench-jax` extra and without TensorFlow:

    python3 -m venv ~/venv-jax    # setup.py's bench-jax extra:
    ~/venv-jax/bin/pip install 'rejax==0.1.3' 'gymnax==0.0.9' \
        'jax==0.10.2' absl-py
    python benchmarks/peers.py --systems=ours,rejax_same \
        --jax_python=~/venv-jax/bin/python

Both sides are measured alike. Every run is a fresh Python process (library
imports excluded from the times, included in the memory); its wall-clock
starts before the environments and the model are built and covers training
and evaluation. After every training phase of our config (`eval_every`
steps, by default `update_every * max_length`: 1,600 on Pendulum) each
system evaluates `eval_episodes` greedy episodes, ours on its training
batch in its own eval phase, SB3 with a callback on a separate DummyVecEnv
of one environment per episode (at most 16). Steps per second
count training and evaluation steps. Peak memory is the largest sum over
the run's process and its descendants of their resident set sizes (RSS,
sampled every 0.1 s; pages shared between processes count in each) and of
their proportional set sizes (PSS, every 2 s; shared pages split among
their processes, so worker processes forked from one parent add only what
they own). CPU time is the user plus system time of the process tree.
The systems of a seed run back to back, in an order rotating with the seed,
so that load from elsewhere on the machine spreads over all of them; medians
over seeds damp it further. SB3 runs on the CPU with one torch thread,
the fastest setting for these small networks on two cores.

With `--compile_cache=DIR`, both compiling systems keep their compiled
code in persistent caches below DIR (ours XLA's through TensorFlow, rejax
JAX's), as the seeds of a sweep would: the first run of a system compiles,
later runs of the same graph load. Without it every run compiles.

rejax compiles its whole run into one XLA call, evaluations included: its
wall-clock includes that compilation (also reported alone, "compile s"),
as ours includes building its graph, and a host callback times each of its
evaluations (ours: greedy episodes, `eval_episodes` of them) when it
finishes; its evaluation period is the first multiple of its update at or
after ours (1,600 steps with `rejax_same` on Pendulum, 10,000 with
`rejax_default`). See benchmarks/peers_rejax.py.

Algorithmic differences remain in the same-work comparison: ours uses the
KL-penalty objective of the paper (SB3 clips the ratio at 0.2), normalizes
rewards by their own scale (SB3's VecNormalize by the scale of the
discounted return), keeps the policy mean in [-1, 1] by a tanh, and
normalizes the action range of the environment.
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import app
from absl import flags

# Run as a script, so make the repository importable.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)

# Library imports (TensorFlow, torch, JAX) happen inside the functions that
# need them, so that an SB3 run never loads TensorFlow and our runs never
# load torch: each process's memory is its own system's. peers_rejax imports
# neither TensorFlow nor agents at module level.
from agents.training import provenance  # pylint: disable=wrong-import-position
# pylint: disable=wrong-import-position
from benchmarks import measured_process
from benchmarks import peers_rejax
# pylint: enable=wrong-import-position

SYSTEMS = (
    'ours', 'ours_graph', 'ours_inprocess', 'ours_slices', 'ours_processes',
    'sb3_same', 'sb3_zoo', 'rejax_same', 'rejax_default')
# The environment mode of each of our systems, see `env_modes.MODES`.
_ENV_MODES = dict(
    ours='auto', ours_graph='graph', ours_inprocess='inprocess',
    ours_slices='slices', ours_processes='processes')

TASKS = {
    'Pendulum-v1': dict(config='pendulum', steps=150e3, target=-200.0),
    'HalfCheetah-v5': dict(config='cheetah', steps=300e3, target=3000.0),
}

# RL Baselines3 Zoo, hyperparams/ppo.yml, both marked "Tuned" there. Keys
# other than PPO arguments: n_envs, normalize (VecNormalize with the
# algorithm's gamma, as the zoo does). Pendulum leaves batch_size at SB3's
# default of 64 and the network at MlpPolicy's default: separate 64x64 tanh
# policy and value networks, log_std_init 0. The zoo tunes HalfCheetah-v3;
# the v5 task has the same dynamics and rewards.
ZOO = {
    'Pendulum-v1': dict(
        n_envs=4, normalize=False, n_steps=1024, batch_size=64,
        gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
        learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4),
    'HalfCheetah-v5': dict(
        n_envs=1, normalize=True, n_steps=512, batch_size=64, gamma=0.98,
        learning_rate=2.0633e-05, ent_coef=0.000401762, clip_range=0.1,
        n_epochs=20, gae_lambda=0.92, max_grad_norm=0.8, vf_coef=0.58096,
        policy_kwargs=dict(
            log_std_init=-2, ortho_init=False, activation_fn='relu',
            net_arch=dict(pi=[256, 256], vf=[256, 256]))),
}

_EVAL_ENVS = 16

FLAGS = flags.FLAGS
flags.DEFINE_list('tasks', ['Pendulum-v1'], f'Tasks of {", ".join(TASKS)}.')
flags.DEFINE_list('systems', ['ours', 'sb3_same', 'sb3_zoo'],
                  f'Subset of {", ".join(SYSTEMS)}.')
flags.DEFINE_list('seeds', ['0', '1', '2'], 'Seeds; each runs every system.')
flags.DEFINE_float('steps', None, 'Training environment steps per run; '
                   'default per task (Pendulum 150k, HalfCheetah 300k).')
flags.DEFINE_float('target', None, 'Evaluation return to reach; default '
                   'per task (Pendulum -200, HalfCheetah 3000).')
flags.DEFINE_string('json', None, 'Also write all results to this file.')
flags.DEFINE_bool('until_target', False, 'End each run at its first '
                  'evaluation at or above the target: the time to target '
                  'in a fraction of the time; the final return is then '
                  'that of this evaluation.')
flags.DEFINE_string('jax_python', sys.executable, 'Python interpreter of '
                    'the rejax systems: one with the bench-jax extra.')
flags.DEFINE_string('compile_cache', None, 'A folder for persistent '
                    'caches of compiled code, ours (XLA through TensorFlow) '
                    'and rejax\'s (JAX) alike: a run after the first of a '
                    'system loads its compiled code, as the seeds of a '
                    'sweep do. Default: none, every run compiles.')
flags.DEFINE_list('ours_set', [], 'Overrides of our config as KEY=JSON, '
                  'e.g. compile_update=true; the same-work peers follow '
                  'them too.')
flags.DEFINE_string('worker_spec', None, 'Internal: run one training.')
flags.DEFINE_string('worker_out', None, 'Internal: result file of a run.')


def same_work_settings(config):
    """SB3 settings that do the work of one of our configs.

    The mapping: one SB3 environment per agent (`n_envs = num_agents`); a
    rollout of as many steps as our update collects (`update_every` episodes
    of `max_length` steps, so `n_steps = update_every * max_length /
    num_agents`; or `update_steps`; or our `rollout_length` where set); a
    mini-batch of as many transitions as ours (`batch_size` chunks of
    `chunk_length` steps); the same epochs, so the same number of
    gradient steps per environment step (on Pendulum 1,600 steps per update,
    4 mini-batches of 400 transitions, 20 epochs: 80 gradient steps); the
    same learning rate, gradient clipping, discount and GAE lambda (none is
    lambda 1), also its linear decay to zero over the run; the same hidden
    layers and ReLU activation for policy and
    value; the same initial action standard deviation and entropy bonus;
    observation and reward normalization with our clip values.

    Args:
        config: Our completed config (with `max_length`).

    Raises:
        ValueError: When the update does not split evenly over the agents.

    Returns:
        Dict of `n_envs`, `normalize` and PPO keyword arguments.
    """
    rollout = config.get('update_steps') or (
        config.update_every * config.max_length)
    if rollout % config.num_agents and not config.get('rollout_length'):
        raise ValueError(
            f'The update of {rollout} steps does not split over '
            f'num_agents = {config.num_agents} environments.')
    max_norm = config.get('max_gradient_norm')
    return dict(
        learning_rate_decay=config.get('learning_rate_decay'),
        n_envs=config.num_agents,
        normalize=dict(clip_obs=5.0, clip_reward=10.0),
        n_steps=(
            config.get('rollout_length') or rollout // config.num_agents),
        batch_size=config.batch_size * config.chunk_length,
        clip_range_vf=config.get('value_loss_clip'),
        n_epochs=config.update_epochs,
        learning_rate=config.learning_rate,
        gamma=config.discount,
        gae_lambda=config.get('gae_lambda') or 1.0,
        ent_coef=config.get('entropy_regularization') or 0.0,
        # SB3 always clips; a bound no gradient reaches stands for none.
        max_grad_norm=max_norm or 1e12,
        clip_range=config.get('ppo_clip') or 0.2,
        policy_kwargs=dict(
            net_arch=dict(pi=list(config.policy_layers),
                          vf=list(config.value_layers)),
            activation_fn='relu',
            log_std_init=math.log(config.init_std)))


def _quiet_tensorflow():
    """Load TensorFlow without its start-up lines, before our modules do."""
    from agents.training import quiet_start
    quiet_start.quiet_tensorflow()


def _our_config(task, steps, seed, overrides=None):
    """Our completed config of a task for a run, with `--ours_set`'s
    overrides (a dict of values)."""
    _quiet_tensorflow()
    from agents.training import config_spec
    config = config_spec.load_named_config(TASKS[task]['config'])
    with config.unlocked:
        config.update(overrides or {})
        config.steps = steps
        config.seed = seed
        config.logdir = None
    return config_spec.complete_config(config)


def _ours_overrides():
    """The values of `--ours_set` (empty in a worker, whose spec has them)."""
    overrides = {}
    for item in FLAGS.ours_set:
        key, _, value = item.partition('=')
        overrides[key] = json.loads(value)
    return overrides


def make_spec(system, task, seed, steps, stop_at=None):
    """Describe one training run for a worker process.

    Args:
        system: One of `SYSTEMS`.
        task: Gymnasium id, a key of `TASKS`.
        seed: Integer seed.
        steps: Training environment steps.
        stop_at: None, or an evaluation return at which the run ends.

    Returns:
        JSON-serializable dict; its steps are rounded up to whole updates of
        our config.
    """
    from agents.training import simulation
    config = _our_config(task, steps, seed, _ours_overrides())
    period, _ = simulation.phase_steps(config)
    # Whole updates, so that our last report ends the run as SB3's does.
    steps = math.ceil(steps / period) * period
    spec = dict(
        system=system, task=task, seed=seed, steps=steps,
        eval_every=period, stop_at=stop_at,
        eval_episodes=config.eval_episodes, max_length=config.max_length)
    if system in _ENV_MODES:
        spec.update(config=TASKS[task]['config'],
                    env_mode=_ENV_MODES[system],
                    overrides=_ours_overrides())
    elif system == 'sb3_same':
        spec.update(sb3=same_work_settings(config))
    elif system == 'sb3_zoo':
        spec.update(sb3=ZOO[task])
    elif system in ('rejax_same', 'rejax_default'):
        peers_rejax.check_task(task)
        settings = (peers_rejax.same_work_settings(config)
                    if system == 'rejax_same'
                    else peers_rejax.default_settings(task))
        # rejax trains whole updates between evaluations: the first
        # multiple of its update at or after ours.
        update = peers_rejax.iteration_steps(settings)
        eval_every = math.ceil(period / update) * update
        spec.update(rejax=settings, eval_every=eval_every,
                    steps=math.ceil(steps / eval_every) * eval_every)
    else:
        raise ValueError(f"Unknown system '{system}'; expected one of "
                         f"{', '.join(SYSTEMS)}.")
    return spec


def our_total_steps(task, steps):
    """Environment steps of one run of ours, training and evaluation.

    Args:
        task: Gymnasium id, a key of `TASKS`.
        steps: Training environment steps, whole updates (`make_spec`'s).

    Returns:
        Integer, as `_train_ours` counts its `total_steps`, with the
        overrides of `--ours_set`.
    """
    from agents.training import simulation
    config = _our_config(task, steps, 0, _ours_overrides())
    train_steps, eval_steps = simulation.phase_steps(config)
    phases = math.ceil(steps / train_steps)
    return phases * (train_steps + eval_steps)


def _train_ours(spec):
    """Train our PPO as the spec says; see `_train_sb3` for the result."""
    _quiet_tensorflow()
    from agents.training import simulation
    from agents.training import trainer
    from agents.scripts import utility
    utility.set_up_logging()
    start = time.monotonic()
    config = _our_config(
        spec['task'], spec['steps'], spec['seed'], spec.get('overrides'))
    train_steps, eval_steps = simulation.phase_steps(config)
    reports = []
    for index, score in enumerate(
            trainer.train(config, spec['env_mode'])):
        reports.append(dict(
            train_steps=(index + 1) * train_steps,
            total_steps=(index + 1) * (train_steps + eval_steps),
            seconds=time.monotonic() - start, score=float(score)))
        if _reached(reports[-1]['score'], spec.get('stop_at')):
            # Leaving the loop closes the generator, which ends training.
            break
    return dict(reports=reports, seconds=time.monotonic() - start,
                total_steps=reports[-1]['total_steps'] if reports else 0)


def _train_sb3(spec):
    """Train SB3 PPO as the spec says, evaluating on our schedule.

    Args:
        spec: Dict from `make_spec`.

    Raises:
        ImportError: Naming the extra, when SB3 or torch is missing.

    Returns:
        Dict of the reports (training steps, all steps so far, seconds,
        mean evaluation return), the seconds and the total steps.
    """
    try:
        import torch
        from stable_baselines3 import PPO
        from stable_baselines3.common import callbacks
        from stable_baselines3.common import env_util
        from stable_baselines3.common import vec_env
    except ImportError as error:
        raise ImportError(
            f"{error}; install the bench extra: pip install -e '.[bench]'"
        ) from error
    torch.set_num_threads(1)
    start = time.monotonic()
    settings = dict(spec['sb3'])
    if settings.pop('learning_rate_decay', None) == 'linear':
        # SB3 passes the remaining progress, from 1 down to 0.
        initial_rate = settings['learning_rate']
        settings['learning_rate'] = lambda remaining: initial_rate * remaining
    n_envs = settings.pop('n_envs')
    normalize = settings.pop('normalize')
    policy_kwargs = dict(settings.pop('policy_kwargs', {}))
    if policy_kwargs.get('activation_fn') == 'relu':
        policy_kwargs['activation_fn'] = torch.nn.ReLU
    env = env_util.make_vec_env(
        spec['task'], n_envs=n_envs, seed=spec['seed'],
        vec_env_cls=vec_env.DummyVecEnv)
    if normalize:
        kwargs = normalize if isinstance(normalize, dict) else {}
        env = vec_env.VecNormalize(env, gamma=settings['gamma'], **kwargs)
    # As many environments as episodes (up to 16), so that SB3 steps no
    # more evaluation episodes than it reports, as ours.
    eval_env = env_util.make_vec_env(
        spec['task'], n_envs=min(_EVAL_ENVS, spec['eval_episodes']),
        seed=spec['seed'] + 10000,
        vec_env_cls=vec_env.DummyVecEnv)
    model = PPO('MlpPolicy', env, seed=spec['seed'], device='cpu',
                policy_kwargs=policy_kwargs, verbose=0, **settings)
    counter = dict(eval_steps=0)
    reports = []

    def evaluate(num_timesteps):
        score, steps = _evaluate_sb3(
            model, eval_env, spec['eval_episodes'], env if normalize else None)
        counter['eval_steps'] += steps
        reports.append(dict(
            train_steps=num_timesteps,
            total_steps=num_timesteps + counter['eval_steps'],
            seconds=time.monotonic() - start, score=score))

    callback = _eval_callback(
        callbacks.BaseCallback, spec['eval_every'], evaluate,
        lambda: _reached(reports[-1]['score'], spec.get('stop_at')))
    model.learn(total_timesteps=int(spec['steps']), callback=callback)
    env.close()
    eval_env.close()
    return dict(reports=reports, seconds=time.monotonic() - start,
                total_steps=model.num_timesteps + counter['eval_steps'])


def _reached(score, stop_at):
    """Whether a run that stops at a return (or None: never) is done."""
    return stop_at is not None and score >= stop_at


def _eval_callback(base_callback, every, evaluate, done):
    """SB3 callback calling `evaluate(num_timesteps)` every `every` steps.

    Training ends after an evaluation for which `done()` is true; the
    callback derives from SB3's `base_callback` class.
    """

    class EvalEvery(base_callback):
        """Evaluates whenever the training steps pass a multiple."""

        def __init__(self):
            super().__init__()
            self._next = every

        def _on_step(self):
            # Called after every step of the vector env, so the check is
            # cheap; it fires on the step that reaches the next multiple.
            if self.num_timesteps >= self._next:
                self._next += every
                evaluate(self.num_timesteps)
                return not done()
            return True

    return EvalEvery()


def _evaluate_sb3(model, eval_env, episodes, normalizer):
    """Mean return of greedy episodes and the environment steps they took.

    Runs rounds of one episode per environment until `episodes` episodes
    finished; observations go through the training normalizer's current
    statistics without updating them.
    """
    returns, steps = [], 0
    while len(returns) < episodes:
        observ = eval_env.reset()
        running = [0.0] * eval_env.num_envs
        active = [True] * eval_env.num_envs
        while any(active):
            if normalizer is not None:
                observ = normalizer.normalize_obs(observ)
            action, _ = model.predict(observ, deterministic=True)
            observ, reward, done, _ = eval_env.step(action)
            steps += eval_env.num_envs
            for index in range(eval_env.num_envs):
                if active[index]:
                    running[index] += float(reward[index])
                    if done[index]:
                        active[index] = False
        returns.extend(running)
    return statistics.mean(returns[:episodes]), steps


def run_worker(spec_path, out_path):
    """Train one run in this process and write its result as JSON."""
    with open(spec_path, encoding='utf-8') as file_:
        spec = json.load(file_)
    cache = spec.get('compile_cache')
    if spec['system'].startswith('ours'):
        if cache:
            # Before TensorFlow loads, which reads the flag once.
            from agents.training import xla_cache
            xla_cache.use_persistent_cache(os.path.join(cache, 'xla'))
        result = _train_ours(spec)
    elif spec['system'] == 'rejax_vmap':
        # One compiled call for all of `spec['seeds']`, see
        # benchmarks/peers_population.py.
        result = peers_rejax.train_seeds(spec)
    elif spec['system'].startswith('rejax'):
        result = peers_rejax.train(spec)
    else:
        result = _train_sb3(spec)
    with open(out_path, 'w', encoding='utf-8') as file_:
        json.dump(result, file_)


def run_measured(spec, python=None):
    """Run one training in a child process and measure it from outside.

    Args:
        spec: Dict from `make_spec`.
        python: Interpreter of the child; None: this one.

    Raises:
        RuntimeError: With the child's output when it fails.

    Returns:
        The child's result plus the measurements of
        `measured_process.run_command`.
    """
    with tempfile.TemporaryDirectory() as folder:
        spec_path = os.path.join(folder, 'spec.json')
        out_path = os.path.join(folder, 'result.json')
        with open(spec_path, 'w', encoding='utf-8') as file_:
            json.dump(spec, file_)
        command = [python or sys.executable, os.path.abspath(__file__),
                   f'--worker_spec={spec_path}', f'--worker_out={out_path}']
        seeds = spec['seed'] if 'seed' in spec else spec['seeds']
        measured = measured_process.run_command(
            command, f"Run {spec['system']} seed {seeds}")
        with open(out_path, encoding='utf-8') as file_:
            result = json.load(file_)
    result.update(measured)
    return result


def check_jax_python(python):
    """Exit with one line unless `python` can import rejax and gymnax."""
    try:
        subprocess.run([python, '-c', 'import rejax, gymnax'], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        sys.exit(peers_rejax.import_error_message(python))


def summarize(result, target):
    """Per-run numbers of the tables."""
    reports = result['reports']
    reached = next(
        (report for report in reports if report['score'] >= target), None)
    return dict(
        steps_per_second=result['total_steps'] / result['seconds'],
        seconds=result['seconds'],
        cpu_seconds=result['cpu_seconds'],
        rss_mib=result['peak_rss'] / 2 ** 20,
        pss_mib=result['peak_pss'] / 2 ** 20,
        final=reports[-1]['score'] if reports else float('nan'),
        best=max((report['score'] for report in reports),
                 default=float('nan')),
        target_seconds=reached['seconds'] if reached else None,
        target_steps=reached['train_steps'] if reached else None,
        total_steps=result['total_steps'],
        # Compiled peers only; ours builds its graph within `seconds`.
        compile_seconds=result.get('compile_seconds'))


def _median(values):
    """Median where None (never reached) counts as infinitely late."""
    values = [math.inf if value is None else value for value in values]
    return statistics.median(values) if values else math.nan


def _format(value, spec):
    if value is None or math.isinf(value):
        return '-'
    return format(value, spec)


def print_table(task, system, seeds, rows, steps, target):
    """Print one system's runs and their medians as a markdown table."""
    print(f'\n### {task}, {system}: {steps:,.0f} training steps, '
          f'target {target:g}\n')
    titles = ['env steps/s', 'wall-clock s', 'CPU s', 'peak RSS MiB',
              'peak PSS MiB', 'final return', 'best return', 'to target s',
              'to target steps']
    keys = ['steps_per_second', 'seconds', 'cpu_seconds', 'rss_mib',
            'pss_mib', 'final', 'best', 'target_seconds', 'target_steps']
    formats = [',.0f', '.0f', '.0f', ',.0f', ',.0f', '.1f', '.1f', '.0f',
               ',.0f']
    if any(row.get('compile_seconds') is not None for row in rows):
        titles.insert(2, 'of it compile s')
        keys.insert(2, 'compile_seconds')
        formats.insert(2, '.1f')
    print(f"| seed | {' | '.join(titles)} |")
    print('| ---: ' * (len(titles) + 1) + '|')
    lines = [(str(seed), [row[key] for key in keys])
             for seed, row in zip(seeds, rows)]
    lines.append(('median', [_median([row[key] for row in rows])
                             for key in keys]))
    for name, values in lines:
        cells = [_format(value, spec) for value, spec in zip(values, formats)]
        print(f"| {name} | {' | '.join(cells)} |")


def print_ratios(task, rows_by_system):
    """Print ours/peer ratios of the medians for each comparison."""
    pairs = [
        ('same work', 'ours', 'sb3_same'),
        ('same work, in process', 'ours_inprocess', 'sb3_same'),
        ('same work, in-graph task', 'ours_graph', 'sb3_same'),
        ('same work, slices', 'ours_slices', 'sb3_same'),
        ('same work, worker processes', 'ours_processes', 'sb3_same'),
        ('each at its best settings', 'ours', 'sb3_zoo'),
        ('each at its best settings, in-graph task', 'ours_graph',
         'sb3_zoo'),
        ('same work, compiled peer', 'ours', 'rejax_same'),
        ('compiled peer at its settings', 'ours', 'rejax_default'),
        ('same work, compiled peer, in-graph task', 'ours_graph',
         'rejax_same'),
        ('in-graph task against gymnasium', 'ours_graph', 'ours_inprocess')]
    lines = []
    for label, ours, theirs in pairs:
        if ours not in rows_by_system or theirs not in rows_by_system:
            continue
        ours_rows, their_rows = rows_by_system[ours], rows_by_system[theirs]
        speed = (_median([row['steps_per_second'] for row in ours_rows]) /
                 _median([row['steps_per_second'] for row in their_rows]))
        ours_time = _median([row['target_seconds'] for row in ours_rows])
        their_time = _median([row['target_seconds'] for row in their_rows])
        if math.isinf(ours_time) or math.isinf(their_time):
            time_ratio = '-'
        else:
            time_ratio = f'{ours_time / their_time:.2f}'
        cpu = (_median([row['cpu_seconds'] for row in ours_rows]) /
               _median([row['cpu_seconds'] for row in their_rows]))
        lines.append(f'| {label} | {ours} / {theirs} | {speed:.2f} | '
                     f'{cpu:.2f} | {time_ratio} |')
    if lines:
        print(f'\n### {task}: ratios of the medians over seeds\n')
        # CPU time suffers less than wall-clock time from other work on a
        # shared machine.
        print('| comparison | systems | env steps/s (higher: ours faster) | '
              'CPU s (lower: ours cheaper) | time to target (lower: ours '
              'faster) |')
        print('| --- | --- | ---: | ---: | ---: |')
        print('\n'.join(lines))


def main(argv):
    """Run the benchmark as the flags say, or one run as a worker."""
    del argv
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    if FLAGS.worker_spec:
        run_worker(FLAGS.worker_spec, FLAGS.worker_out)
        return
    for system in FLAGS.systems:
        if system not in SYSTEMS:
            raise app.UsageError(
                f"Unknown system '{system}'; expected {', '.join(SYSTEMS)}.")
    for task in FLAGS.tasks:
        if task not in TASKS:
            raise app.UsageError(
                f"Unknown task '{task}'; expected {', '.join(TASKS)}.")
    seeds = [int(seed) for seed in FLAGS.seeds]
    systems = list(FLAGS.systems)
    if any(system.startswith('rejax') for system in systems):
        check_jax_python(FLAGS.jax_python)
    record = provenance.record(packages=dict(
        provenance.PACKAGES, torch=('torch',),
        stable_baselines3=('stable-baselines3',)))
    everything = {}
    for task in FLAGS.tasks:
        steps = FLAGS.steps or TASKS[task]['steps']
        target = (FLAGS.target if FLAGS.target is not None
                  else TASKS[task]['target'])
        results = {system: [] for system in systems}
        steps = make_spec('ours', task, seeds[0], steps)['steps']
        # Compiled peers round up to whole evaluation periods of theirs.
        system_steps = {system: make_spec(system, task, seeds[0], steps)[
            'steps'] for system in systems}
        for index, seed in enumerate(seeds):
            shift = index % len(systems)
            for system in systems[shift:] + systems[:shift]:
                spec = make_spec(system, task, seed, steps,
                                 target if FLAGS.until_target else None)
                if FLAGS.compile_cache:
                    spec['compile_cache'] = os.path.abspath(
                        os.path.expanduser(FLAGS.compile_cache))
                result = run_measured(
                    spec,
                    FLAGS.jax_python if system.startswith('rejax')
                    else None)
                results[system].append(result)
                row = summarize(result, target)
                print(f"{task} seed {seed} {system}: "
                      f"{row['steps_per_second']:,.0f} steps/s, "
                      f"{row['seconds']:.0f} s, final {row['final']:.1f}, "
                      f"to target {_format(row['target_seconds'], '.0f')} s",
                      file=sys.stderr, flush=True)
        rows_by_system = {
            system: [summarize(result, target) for result in runs]
            for system, runs in results.items()}
        for system in systems:
            print_table(task, system, seeds, rows_by_system[system],
                        system_steps[system], target)
        print_ratios(task, rows_by_system)
        sys.stdout.flush()
        everything[task] = dict(results=results, rows=rows_by_system)
    if FLAGS.json:
        provenance.write_json(FLAGS.json, everything, record)


if __name__ == '__main__':
    app.run(main)
