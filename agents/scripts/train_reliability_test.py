"""End-to-end tests: training survives faults, signals and bad input.

The tests run short trainings of tiny networks, in this process through
`train.train` or `train.main`, or as the script in a subprocess where real
signals must reach it. Faults happen inside real worker processes; signals
are real signals.
"""

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import gymnasium as gym
import numpy as np
import psutil
import pytest
import tensorflow.compat.v1 as tf

from agents import tools
from agents.parts import distributions
from agents.scripts import configs
from agents.environments import env_modes
from agents.scripts import networks
from agents.scripts import train
from agents.training import checkpoints
from agents.training import config_io
from agents.training import errors
from agents.testing import faulty_environment


class FaultyPendulum(gym.Wrapper):
    """Pendulum whose environment of one seed fails on one step.

    The class attributes choose the fault, so that a test sets them and the
    workers receive them with the class, which the `by_value` fixture sends
    by value. `fault` is None, 'raise', 'exit', 'kill' (SIGKILL to itself),
    'hang', 'nan_observ' or 'nan_reward'; it happens on the step number
    `fault_step` of the environment created with the seed `fault_seed`. With
    a `marker` path, the fault happens only while that file does not exist,
    and creates it; every step of any environment after that appends a
    line to `marker + '.after'`.
    """

    fault = None
    # Training environment 1 of a run of seed 0 (`env_modes.env_seeds`).
    fault_seed = env_modes.env_seeds(0, 2)[1]
    fault_step = 5
    marker = None

    def __init__(self):
        super().__init__(gym.make('Pendulum-v1'))
        self._seed = None
        self._steps = 0

    def reset(self, *, seed=None, options=None):
        """Reset, remembering the first seed."""
        if self._seed is None:
            self._seed = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        """Step, or fail where the class attributes say."""
        self._steps += 1
        if self.marker and os.path.exists(self.marker):
            with open(self.marker + '.after', 'a', encoding='utf-8') as file_:
                file_.write(f'{self._seed}\n')
        observ, reward, terminated, truncated, info = self.env.step(action)
        fault = self.fault
        if self._seed != self.fault_seed or self._steps != self.fault_step:
            fault = None
        if fault and self.marker:
            if os.path.exists(self.marker):
                fault = None
            else:
                with open(self.marker, 'w', encoding='utf-8') as file_:
                    file_.write(f'{self._seed}\n')
        if fault == 'raise':
            raise RuntimeError('simulator exploded')
        if fault == 'exit':
            os._exit(3)  # pylint: disable=protected-access
        if fault == 'kill':
            os.kill(os.getpid(), signal.SIGKILL)
        if fault == 'hang':
            time.sleep(600)
        if fault == 'nan_observ':
            observ = observ * np.nan
        if fault == 'nan_reward':
            reward = np.nan
        return observ, reward, terminated, truncated, info


class MultiBinaryEnv(gym.Env):
    """Environment with an action space the in-graph batch cannot hold."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.MultiBinary(2)

    def reset(self, *, seed=None, options=None):
        """Return zeros."""
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        """Return zeros; the episode never ends."""
        return np.zeros(3, np.float32), 0.0, False, False, {}

    def render(self):
        """Render nothing."""


class NaNSampleGaussian(distributions.DiagonalGaussian):
    """Gaussian policy whose samples are NaN, its parameters finite."""

    def sample(self, seed=None, key=None, noise=None):
        """Return NaN in the shape of a sample."""
        return super().sample(seed, key, noise) * np.nan


def nan_action_network(config, action_space, observations, length,
                       state=None):
    """Feed-forward network whose sampled actions are NaN."""
    output = networks.feed_forward_gaussian(
        config, action_space, observations, length, state)
    return output.copy(policy=NaNSampleGaussian(
        output.policy.mean, output.policy.logstd))


def nan_loss_network(config, action_space, observations, length,
                     state=None):
    """Feed-forward network with an extra loss that is NaN."""
    output = networks.feed_forward_gaussian(
        config, action_space, observations, length, state)
    return output.copy(loss=tf.constant(np.nan))


def _tiny_config(name='pendulum', **overrides):
    """A configuration of `configs` that trains 40 steps per phase in seconds.

    Tiny networks, two agents and episodes of at most 20 steps, updated
    every two episodes, seeded, writing nothing.
    """
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.update(
            policy_layers=(8,), value_layers=(8,), num_agents=2,
            update_every=2, eval_episodes=2, max_length=20, update_epochs=2,
            batch_size=2, chunk_length=10, steps=40, logdir=None, seed=0,
            update_steps=None, eval_every=None,
            # Its compile would cost each test seconds; the compiled
            # update has tests of its own (ppo_update_test).
            compile_update=False)
        config.update(overrides)
    return config


def _running(process):
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _workers():
    """Descendants of this process, except the multiprocessing helpers.

    The fork server and the resource tracker are children of this process
    that live as long as it does; workers are children of the fork server.
    """
    helpers = {
        child.pid for child in psutil.Process().children()
        if 'multiprocessing.forkserver' in ' '.join(child.cmdline())
        or 'multiprocessing.resource_tracker' in ' '.join(child.cmdline())}
    return [
        process for process in psutil.Process().children(recursive=True)
        if process.pid not in helpers and _running(process)]


def _wait_until_gone(processes, seconds=5):
    """Return the processes still running after waiting up to `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        processes = [process for process in processes if _running(process)]
        if not processes:
            break
        time.sleep(0.1)
    return processes


def _summary_values(directory, tag):
    """Values of a scalar summary in the event files of a directory."""
    values = []
    for name in sorted(os.listdir(directory)):
        for event in tf.train.summary_iterator(os.path.join(directory, name)):
            values += [value.simple_value for value in event.summary.value
                       if value.tag == tag]
    return values


class _Script:
    """The training script in a subprocess of its own process group.

    A thread reads its stderr, so that waiting for a line or for the exit
    of a script that hangs fails the test instead of hanging it.
    """

    def __init__(self, *args, fault_file=None, environ=None):
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3', **environ or {})
        if fault_file:
            env[faulty_environment.FAULT_FILE_VARIABLE] = str(fault_file)
        # pylint: disable-next=consider-using-with
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'agents.scripts.train', *args],
            stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True)
        self.lines = []
        self.descendants = []
        self._queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stderr:
            self._queue.put(line.rstrip('\n'))
        self._queue.put(None)

    def _next_line(self, deadline):
        """The next line of stderr, or None at its end."""
        try:
            line = self._queue.get(timeout=max(0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                'The script printed nothing more in time:\n' +
                '\n'.join(self.lines)) from None
        if line is not None:
            self.lines.append(line)
        return line

    def wait_for(self, pattern, seconds=180):
        """Read stderr lines until one matches; return it."""
        deadline = time.monotonic() + seconds
        while True:
            line = self._next_line(deadline)
            if line is None:
                raise AssertionError(
                    f'The script ended without {pattern!r}:\n' + '\n'.join(
                        self.lines))
            if re.search(pattern, line):
                return line

    def record_descendants(self):
        """Remember every process the script started so far."""
        self.descendants = psutil.Process(self.process.pid).children(
            recursive=True)
        return self.descendants

    def finish(self, seconds=60):
        """Wait for the exit and the end of stderr.

        A script that has not exited after `seconds` fails the test. The
        pipe ends once workers, which share it, are gone too.

        Returns:
            The exit code and the seconds until the exit.
        """
        start = time.monotonic()
        try:
            code = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f'The script did not exit within {seconds} seconds:\n' +
                '\n'.join(self.lines)) from None
        elapsed = time.monotonic() - start
        while self._next_line(start + 2 * seconds) is not None:
            pass
        return code, elapsed

    def kill(self):
        """Make sure the script and its process group are gone."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self._reader.join(10)


def _new_run_folder(logdir, timestamp, **overrides):
    """A run folder holding only the config.yaml of a tiny config."""
    config = _tiny_config(**overrides)
    run_dir = os.path.join(logdir, f'{timestamp}-pendulum')
    config_io.save_config(config, run_dir)
    return run_dir


def _edit_config(run_dir, **values):
    """Change values of a run folder's config.yaml."""
    config = config_io.load_config(run_dir)
    with config.unlocked:
        config.update(values)
    config_io.save_config(config, run_dir)


# 1. Worker faults.


@pytest.mark.parametrize('fault, message', [
    ('raise', r'RuntimeError in Environment worker .*\(pid \d+\): '
     r'RuntimeError: simulator exploded'),
    ('exit', r'Environment worker .* died \(exit code 3\)'),
    ('hang', r'Environment worker .* did not answer within 5 seconds; it '
     'was terminated'),
], ids=['raise', 'exit', 'hang'])
def test_worker_fault_stops_training_and_every_worker(
        by_value, monkeypatch, tmp_path, fault, message):
    """A failing worker stops training at once, named; no worker survives.

    A worker killed by a signal is the next test, through the script.
    """
    del by_value
    marker = str(tmp_path / 'fault')
    monkeypatch.setattr(FaultyPendulum, 'fault', fault)
    monkeypatch.setattr(FaultyPendulum, 'marker', marker)
    config = _tiny_config(env=FaultyPendulum, worker_timeout=5)
    scores = train.train(config, True)
    with pytest.raises(errors.TrainingError) as error:
        next(scores)
    after = tmp_path / 'fault.after'
    steps_after = after.read_text('utf-8').split() if after.exists() else []
    assert re.match(
        '^Training stopped: Environment 1 of the batch failed: '
        f'{message}', str(error.value))
    assert '\n' not in str(error.value)
    # Training stops within the batch step of the fault: at most the other
    # environment finishes its step of it.
    assert steps_after in ([], [str(env_modes.env_seeds(0, 2)[0])])
    assert not _wait_until_gone(_workers(), 1)


def test_worker_killed_by_signal_exits_script_with_one_line(tmp_path):
    """SIGKILL of a worker ends the script with one line and exit code 1."""
    run_dir = _new_run_folder(str(tmp_path), 'T')
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_processes')
    try:
        script.wait_for('Graph contains')
        forkserver, = [
            child for child in script.record_descendants()
            if child.ppid() == script.process.pid and 'forkserver' in ' '.join(
                child.cmdline())]
        # Two training workers, then two of the evaluation batch.
        workers = forkserver.children()
        assert len(workers) == 4
        # Workers import neither TensorFlow nor this module: a tenth of the
        # memory and seconds faster to start.
        assert not any('tensorflow' in ' '.join(
            region.path for region in worker.memory_maps())
            for worker in workers)
        workers[1].send_signal(signal.SIGKILL)
        code, seconds = script.finish()
    finally:
        script.kill()
    assert code == 1 and seconds < 20
    assert re.match(
        r'^Error: Training stopped: Environment [01] of the batch failed: '
        rf'Environment worker .* \(pid {workers[1].pid}\) died \(exit code '
        r'-9, killed by SIGKILL\); create a new environment to continue\.$',
        script.lines[-1]), script.lines[-1]
    assert not _wait_until_gone(script.descendants)
    assert os.path.exists(os.path.join(run_dir, 'config.yaml'))


@pytest.mark.parametrize('env_mode', [True, 'slices'])
def test_restart_workers_replaces_a_crashed_worker(by_value, monkeypatch,
                                                   tmp_path, env_mode):
    """A worker killed once is replaced and training completes.

    The config sets `restart_workers`; the train summaries count the
    restart.
    """
    del by_value
    monkeypatch.setattr(FaultyPendulum, 'fault', 'kill')
    monkeypatch.setattr(FaultyPendulum, 'marker', str(tmp_path / 'killed'))
    config = _tiny_config(
        env=FaultyPendulum, restart_workers=True, logdir=str(tmp_path))
    scores = list(train.train(config, env_mode))
    assert os.path.exists(tmp_path / 'killed')
    assert len(scores) == 1 and np.isfinite(scores[0])
    assert _summary_values(tmp_path / 'train', 'worker_restarts')[-1] == 1
    assert not _workers()


# 2. Signals: see train_signals_test.py.


def _recording(function, results):
    """Wrap a function to append its results to a list."""

    def wrapper(*args, **kwargs):
        result = function(*args, **kwargs)
        results.append(result)
        return result

    return wrapper


def _saved_checkpoints(lines):
    """The checkpoints that the script's log says it saved."""
    return [
        match.group(1) for match in map(
            re.compile(r'INFO Saved checkpoint (.*)\.$').search, lines)
        if match]


def _saved_checkpoint(script, run_dir):
    """The one checkpoint an interrupted script saved, and its step."""
    saved, = _saved_checkpoints(script.lines)
    assert checkpoints.list_checkpoints(run_dir) == [saved]
    step = int(saved.rsplit('-', 1)[1])
    assert step >= 80
    return saved, step


def _resume_one_phase(monkeypatch, logdir, run_dir, saved, env_mode, *flags):
    """Resume the interrupted run 'T' from `saved` in this process (with
    more `flags`).

    The run finishes within the next training and evaluation phase; the
    test fails unless it restored `saved` and wrote the next checkpoint.
    """
    step = int(saved.rsplit('-', 1)[1])
    _edit_config(run_dir, steps=(step // 80 + 1) * 40)
    restored = []
    monkeypatch.setattr(
        checkpoints, 'initialize_variables', _recording(
            checkpoints.initialize_variables, restored))
    assert _main(f'--logdir={logdir}', '--timestamp=T',
                 f'--env_mode={env_mode}', *flags) == 0
    assert restored == [saved]
    assert os.path.basename(checkpoints.list_checkpoints(run_dir)[0]) == (
        f'model.ckpt-{(step // 80 + 1) * 80}')


# 3. Crash consistency.


def _corrupt_copy(run_dir, source_step, step):
    """Add a truncated copy of a checkpoint as the latest one."""
    for suffix in ('.index', '.data-00000-of-00001', '.meta'):
        source = os.path.join(run_dir, f'model.ckpt-{source_step}{suffix}')
        target = os.path.join(run_dir, f'model.ckpt-{step}{suffix}')
        shutil.copy(source, target)
    data = os.path.join(run_dir, f'model.ckpt-{step}.data-00000-of-00001')
    with open(data, 'r+b') as file_:
        file_.truncate(os.path.getsize(data) // 2)
    tf.train.update_checkpoint_state(
        run_dir, os.path.join(run_dir, f'model.ckpt-{step}'),
        [os.path.join(run_dir, f'model.ckpt-{s}') for s in (source_step, step)])


def test_sigkill_leaves_a_run_that_resumes_past_a_corrupt_checkpoint(
        tmp_path):
    """A killed trainer leaves no process and a run folder that resumes.

    The run resumes from its last complete checkpoint, past a truncated
    latest one, as after a crash while saving on a full disk.
    """
    run_dir = str(tmp_path / 'T-pendulum')
    list(train.train(_tiny_config(logdir=run_dir), False))
    assert [os.path.basename(path) for path in checkpoints.list_checkpoints(
        run_dir)] == ['model.ckpt-80']
    _corrupt_copy(run_dir, 80, 160)
    _edit_config(run_dir, steps=1e5)
    with open(os.path.join(run_dir, 'config.yaml'), 'rb') as file_:
        config_bytes = file_.read()
    script = _Script(
        f'--logdir={tmp_path}', '--timestamp=T', '--env_mode=inprocess')
    try:
        script.wait_for(r'Restored checkpoint')
        script.record_descendants()
        script.wait_for(r'INFO Step \d+ \(eval\): mean score ')
        os.kill(script.process.pid, signal.SIGKILL)
        code, _ = script.finish()
    finally:
        script.kill()
    assert code == -signal.SIGKILL
    log = '\n'.join(script.lines)
    assert re.search(
        r'WARNING Cannot restore checkpoint .*model\.ckpt-160 \(.*\); trying '
        r'the previous one\.', log), log
    assert f'Restored checkpoint {run_dir}/model.ckpt-80.' in log
    assert not _wait_until_gone(script.descendants)
    # The folder is as before, so it resumes the same way again.
    with open(os.path.join(run_dir, 'config.yaml'), 'rb') as file_:
        assert file_.read() == config_bytes
    assert checkpoints.list_checkpoints(run_dir) == [
        os.path.join(run_dir, 'model.ckpt-160'),
        os.path.join(run_dir, 'model.ckpt-80')]


# 4. Bad input.


def _main(*args):
    """Run the script's main in this process; return its exit code."""
    # From the defaults, whatever another test of the process left set.
    train.FLAGS.unparse_flags()
    try:
        # Inside: a parse that fails part way keeps the flags it set.
        train.FLAGS(['train', *args])
        train.main([])
    except SystemExit as exit_:
        return exit_.code
    finally:
        train.FLAGS.unparse_flags()
    return 0


def _main_last_line(capsys, *args):
    """Run the script's main in this process.

    Returns:
      Its exit code and the last line it wrote to stderr.
    """
    code = _main(*args)
    return code, capsys.readouterr().err.strip().splitlines()[-1]


def _listing(directory):
    """Every file below a directory with its content."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(root, name)
            with open(path, 'rb') as file_:
                files[os.path.relpath(path, directory)] = file_.read()
    return files


_ENV = 'agents.scripts.train_reliability_test'


@pytest.mark.parametrize('config_yaml, message', [
    ('env: Pendulum-v0\n',
     "Error: Unknown env id 'Pendulum-v0'; valid ids: "),
    ('env: Blackjack-v1\n',
     'Error: Unsupported observation space Tuple(Discrete(32), '
     'Discrete(11), Discrete(2)); expected a Box.'),
    (f'env: !callable {_ENV}:MultiBinaryEnv\n',
     'Error: Unsupported action space MultiBinary(2); expected a Box or '
     'Discrete.'),
    ('env: [Pendulum-v1\n', 'Error: Invalid YAML in '),
    ('network: !callable no_such_module:network\n',
     "Error: Cannot import module 'no_such_module' of callable "
     "'no_such_module:network': No module named 'no_such_module'"),
    ("env: !!python/object/apply:os.system ['touch {marker}']\n",
     'Error: Invalid YAML in '),
    ('discount: 2\n', 'Error: Config discount=2 must be in [0, 1].'),
    ('worker_timeout: -1\n',
     'Error: Config worker_timeout=-1 must be a positive number of seconds '
     'up to 1e7 (16 weeks) or None.'),
    ('session_threads: 0\n',
     'Error: Config session_threads=0 must be an integer from 1 to 1024 '
     "(threads of each of TensorFlow's pools) or None."),
    ('seed: -1\n',
     'Error: Config seed=-1 must be an integer from 0 to 4294967295.'),
    ('env: !callable os:getcwd\n',
     "Error: Config env 'posix:getcwd' returned '/"),
    # The probes of issue 24: before, tracebacks, exit 0 after restoring
    # and writing, or a minute of building environments.
    ('steps: .nan\n', 'Error: Config steps=nan must be a finite number of '
     'environment steps from 1 to 1e12.'),
    ('steps: 1.0e+300\n', 'Error: Config steps=1e+300 must be a finite '
     'number of environment steps from 1 to 1e12.'),
    ('steps: -5\n', 'Error: Config steps=-5 must be a finite number of '
     'environment steps from 1 to 1e12.'),
    ('steps: 0\n', 'Error: Config steps=0 must be a finite number of '
     'environment steps from 1 to 1e12.'),
    ('max_length: -1\n',
     'Error: Config max_length=-1 must be an integer from 1 to 8388608 or '
     'None.'),
    ('num_agents: 0\n', 'Error: Config num_agents=0 must be an integer from '
     '1 to max_agents=1024.'),
    ('num_agents: -3\n', 'Error: Config num_agents=-3 must be an integer '
     'from 1 to max_agents=1024.'),
    ('num_agents: 1000000\n', 'Error: Config num_agents=1000000 must be an '
     'integer from 1 to max_agents=1024: it would build 1000000 '
     'environments; raise max_agents where the machine holds that many.'),
    ('update_every: 0\n',
     'Error: Config update_every=0 must be an integer from 1 to 838860.'),
], ids=[
    'env_id', 'observation_space', 'action_space', 'yaml', 'import',
    'python_object', 'algorithm_setting', 'worker_timeout',
    'session_threads', 'seed', 'env_not_an_env', 'steps_nan',
    'steps_1e300', 'steps_negative', 'steps_zero', 'max_length_negative',
    'num_agents_zero', 'num_agents_negative', 'num_agents_million',
    'update_every_zero'])
def test_invalid_saved_config_exits_2_and_changes_nothing(
        tmp_path, capsys, config_yaml, message):
    """A run folder with a bad config.yaml fails in one line, untouched."""
    run_dir = _new_run_folder(str(tmp_path), 'T', seed=None)
    marker = tmp_path / 'marker'
    path = os.path.join(run_dir, 'config.yaml')
    with open(path, encoding='utf-8') as file_:
        key = config_yaml.split(':')[0]
        lines = [line for line in file_ if not line.startswith(key + ':')]
    with open(path, 'w', encoding='utf-8') as file_:
        file_.write(''.join(lines) + config_yaml.format(marker=marker))
    before = _listing(tmp_path)
    code = _main(f'--logdir={tmp_path}', '--timestamp=T', '--noenv_processes')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1].startswith(message), lines[-1]
    assert _listing(tmp_path) == before
    assert not marker.exists()


@pytest.mark.parametrize('setting, message', [
    ('steps=.nan', 'steps=nan must be a finite number of environment steps '
     'from 1 to 1e12.'),
    ('steps=1e300', 'steps=1e+300 must be a finite number of environment '
     'steps from 1 to 1e12.'),
    ('steps=-5', 'steps=-5.0 must be a finite number of environment steps '
     'from 1 to 1e12.'),
    ('steps=0', 'steps=0.0 must be a finite number of environment steps '
     'from 1 to 1e12.'),
    ('max_length=-1',
     'max_length=-1 must be an integer from 1 to 2097152 or None.'),
    ('num_agents=0',
     'num_agents=0 must be an integer from 1 to max_agents=1024.'),
    ('num_agents=-3',
     'num_agents=-3 must be an integer from 1 to max_agents=1024.'),
    ('num_agents=1000000', 'num_agents=1000000 must be an integer from 1 to '
     'max_agents=1024: it would build 1000000 environments; raise '
     'max_agents where the machine holds that many.'),
], ids=[
    'steps_nan', 'steps_1e300', 'steps_negative', 'steps_zero',
    'max_length_negative', 'num_agents_zero', 'num_agents_negative',
    'num_agents_million'])
def test_invalid_setting_of_a_new_run_exits_2_without_writing(
        tmp_path, capsys, setting, message):
    """A --set value out of range fails in one line; no folder is made."""
    code = _main(
        f'--logdir={tmp_path}', '--config=pendulum', '--timestamp=T',
        f'--set={setting}', '--env_mode=inprocess')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1] == 'Error: Config ' + message
    assert os.listdir(tmp_path) == []


def test_config_without_a_required_key_exits_2(tmp_path, capsys):
    """A config.yaml that lost a key the script needs names the key."""
    run_dir = _new_run_folder(str(tmp_path), 'T', seed=None)
    path = os.path.join(run_dir, 'config.yaml')
    with open(path, encoding='utf-8') as file_:
        lines = [line for line in file_ if not line.startswith('algorithm:')]
    with open(path, 'w', encoding='utf-8') as file_:
        file_.write(''.join(lines))
    before = _listing(tmp_path)
    code = _main(f'--logdir={tmp_path}', '--timestamp=T')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1] == (
        "Error: Config has no 'algorithm'; expected the keys algorithm, env, "
        'num_agents, steps, update_every, eval_episodes.')
    assert _listing(tmp_path) == before


def test_unwritable_logdir_exits_2_without_writing(tmp_path, capsys):
    """A --logdir below a file fails in one line before creating anything."""
    (tmp_path / 'file').write_text('')
    code = _main(f'--logdir={tmp_path}/file/runs', '--config=pendulum')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1] == (
        f'Error: --logdir {tmp_path}/file/runs cannot be created: '
        f'{tmp_path}/file is a file, expected a directory.')
    assert os.listdir(tmp_path) == ['file']


@pytest.mark.parametrize('seed', ['-1', '4294967296'])
def test_seed_out_of_range_exits_2_without_writing(tmp_path, capsys, seed):
    """A seed that NumPy cannot take fails in one line."""
    code = _main(f'--logdir={tmp_path}', '--config=pendulum', f'--seed={seed}')
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert lines[-1] == (
        f'Error: --seed={seed} must be an integer from 0 to 4294967295.')
    assert os.listdir(tmp_path) == []


def test_bad_flag_exits_2_in_one_line(capsys):
    """A flag that does not parse fails with one line and code 2."""
    result = subprocess.run(
        [sys.executable, '-m', 'agents.scripts.train', '--seed=abc'],
        capture_output=True, text=True, check=False, timeout=120,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='3'))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: flag --seed=abc: invalid literal for int() with base 10: "
        "'abc'")
    with pytest.raises(SystemExit) as exit_:
        train.parse_flags(['train', '--no_such_flag=1'])
    train.FLAGS.unparse_flags()
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (
        "Error: Unknown command line flag 'no_such_flag'\n")


@pytest.mark.parametrize('fault, network, name, seeds', [
    ('nan_observ', None, 'observ', None),
    ('nan_reward', None, 'reward', None),
    (None, 'nan_action_network', 'action', None),
    (None, 'nan_loss_network', 'loss', None),
    # Member seed-0's second environment, of the population's fourth.
    ('nan_reward', None, 'reward of member seed-0', '1,0'),
], ids=['observ', 'reward', 'action', 'loss', 'population'])
def test_non_finite_values_exit_1_in_one_line(
        monkeypatch, tmp_path, capsys, fault, network, name, seeds):
    """NaN in observations, rewards, actions or the loss stops training.

    One line names the value (and a population's member), and the run
    folder keeps its files.
    """
    monkeypatch.setattr(FaultyPendulum, 'fault', fault)
    if seeds is None:
        monkeypatch.setattr(FaultyPendulum, 'fault_seed', None)
    overrides = dict(env=FaultyPendulum, seed=None)
    if network:
        overrides['network'] = getattr(sys.modules[__name__], network)
    run_dir = _new_run_folder(str(tmp_path), 'T', **overrides)
    with open(os.path.join(run_dir, 'config.yaml'), 'rb') as file_:
        config_bytes = file_.read()
    code = _main(f'--logdir={tmp_path}', '--timestamp=T', '--noenv_processes',
                 *[f'--seeds={seeds}'] * bool(seeds))
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert re.match(
        rf"^Error: Training stopped at global step \d+: '{name}' had NaN "
        r'values; expected finite numbers\.$', lines[-1]), lines[-1]
    with open(os.path.join(run_dir, 'config.yaml'), 'rb') as file_:
        assert file_.read() == config_bytes
    assert not checkpoints.list_checkpoints(run_dir)


# 5. Determinism: see train_test.py (seeded runs repeat, seeds differ).
