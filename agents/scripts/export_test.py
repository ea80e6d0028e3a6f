"""Tests of exporting trained policies as SavedModels (and ONNX)."""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from agents import tools
from agents.environments import env_construction
from agents.training import checkpoints
from agents.training import config_io
from agents.scripts import configs
# Before the scripts that share its flags: train defines them unguarded,
# which fails once visualize defined them (see shared_flags.define_run_flags).
from agents.scripts import train  # pylint: disable=unused-import
from agents.scripts import export
from agents.training import policy_export
from agents.scripts import visualize
from agents.scripts.train_reliability_test import _main

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', PYTHONPATH=_ROOT)


def _run(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False,
        env=env or _ENV, cwd=cwd or _ROOT, timeout=300)


class _Probe(gym.Env):
    """Environment that observes what it is told and records the action."""

    def __init__(self, observation_space, action_space):
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.observ = None
        self.action = None

    def reset(self, *, seed=None, options=None):
        return self.observ, {}

    def step(self, action):
        self.action = np.array(action)
        return self.observ, 0.0, False, False, {}

    def render(self):
        return None


class _Spaces:
    """A batch of environments for the graph that is never stepped."""

    def __init__(self, env, size):
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        self._size = size

    def __len__(self):
        return self._size


class _Reference:
    """PPO's own greedy actions of a checkpoint, through the env wrappers.

    Raw observations pass the training wrappers (RangeNormalize,
    ClipAction, ConvertTo32Bit, as `env_construction.create_environment`
    stacks them) around a probe environment, the algorithm's `perform` of
    a TF1 graph computes the mode, and the wrappers map it to the probe's
    action.
    """

    def __init__(self, config, num_agents):
        env = env_construction.create_environment(
            config, batch_wrappers=True)
        self.observation_space = env.observation_space
        self.action_space = env.action_space
        env.close()
        self._probe = _Probe(self.observation_space, self.action_space)
        env = self._probe
        if config.get('normalize_ranges', True):
            env = tools.wrappers.RangeNormalize(env)
        if isinstance(env.action_space, gym.spaces.Box):
            env = tools.wrappers.ClipAction(env)
        self._env = tools.wrappers.ConvertTo32Bit(env)
        v1 = tf.compat.v1
        self._graph = tf.Graph()
        with self._graph.as_default():
            # Fixed initial weights, so the tests see the same policies.
            v1.set_random_seed(0)
            batch_env = tools.InGraphBatchEnv(_Spaces(self._env, num_agents))
            step = v1.train.get_or_create_global_step()
            algo = config.algorithm(
                batch_env, step, tf.constant(False), tf.constant(False),
                config)
            self._observ = v1.placeholder(
                tf.float32, batch_env.observ.shape)
            self._action, _ = algo.perform(
                tf.range(num_agents), self._observ)
            self._begin = algo.begin_episode(tf.range(num_agents))
            self._policy_variables = [
                variable for variable in v1.global_variables()
                if variable.name.startswith(('network/', 'normalize_observ/'))]
            self._saved = [
                variable for variable in v1.global_variables()
                if '_temporary' not in variable.name]
            self._session = v1.Session()
            self._session.run(v1.global_variables_initializer())

    def restore(self, checkpoint):
        """Load the policy's variables of a checkpoint."""
        with self._graph.as_default():
            tf.compat.v1.train.Saver(self._policy_variables).restore(
                self._session, checkpoint)

    def randomize_and_save(self, checkpoint, seed=0):
        """Perturb the weights and normalizer statistics, then save."""
        rng = np.random.default_rng(seed)
        with self._graph.as_default():
            for variable in self._policy_variables:
                value = self._session.run(variable)
                name = variable.name
                if name.startswith('normalize_observ/count'):
                    value = np.int64(100)
                elif name.startswith('normalize_observ/var_sum'):
                    value = 99 * rng.uniform(0.2, 3, value.shape) ** 2
                elif name.endswith('/bias:0'):
                    # Small, so that no output is dominated by its bias.
                    value = value + 0.01 * rng.normal(size=value.shape)
                else:
                    value = value + 0.3 * rng.normal(size=value.shape)
                self._session.run(variable.assign(np.asarray(value).astype(
                    variable.dtype.base_dtype.as_numpy_dtype)))
            tf.compat.v1.train.Saver(self._saved).save(
                self._session, checkpoint)

    def begin_episode(self):
        """Zero the recurrent states."""
        self._session.run(self._begin)

    def greedy(self, observ):
        """Environment actions of PPO's mode for raw observations."""
        wrapped = []
        for row in observ:
            self._probe.observ = row.astype(self.observation_space.dtype)
            wrapped.append(self._env.reset()[0])
        actions = self._session.run(
            self._action, {self._observ: np.stack(wrapped)})
        result = []
        for action in actions:
            self._env.step(action)
            result.append(self._probe.action)
        return np.stack(result)


def _raw_observations(space, count, seed=0):
    """Float32 observations spread over the space (normal where unbounded)."""
    rng = np.random.default_rng(seed)
    low = np.where(np.isfinite(space.low), space.low, -3)
    high = np.where(np.isfinite(space.high), space.high, 3)
    observ = rng.uniform(low, high, (count,) + space.shape)
    return observ.astype(np.float32)


def _synthetic_run(logdir, name, **overrides):
    """A run folder with config.yaml and a checkpoint of random weights.

    The checkpoint is saved from PPO's own graph, with the weights and the
    observation normalizer's statistics perturbed away from their initial
    values.
    """
    config = tools.AttrDict(getattr(configs, name)())
    with config.unlocked:
        config.update(overrides)
        config.logdir = str(logdir)
        config[config_io.SOURCE_KEY] = f'agents.scripts.configs:{name}'
    config.lock()
    os.makedirs(logdir)
    config_io.save_config(config, str(logdir))
    return str(logdir)


@pytest.fixture(scope='module', name='pendulum_run')
def fixture_pendulum_run(tmp_path_factory):
    """A tiny trained pendulum run and its CLI export, with the timing.

    The training script's `main` runs in this process, sparing an import
    of TensorFlow; unseeded, it leaves op determinism alone.
    """
    base = tmp_path_factory.mktemp('runs')
    assert _main(
        '--config=pendulum', f'--logdir={base}', '--timestamp=run',
        '--env_mode=inprocess', '--set=steps=1000', '--set=eval_every=1000',
        '--set=update_every=2', '--set=update_epochs=1',
        '--set=policy_layers=[16,16]', '--set=value_layers=[16,16]') == 0
    logdir = str(base / 'run-pendulum')
    outdir = str(base / 'pendulum-policy')
    result = _run(
        '-m', 'agents.scripts.export', f'--logdir={logdir}',
        f'--outdir={outdir}')
    assert result.returncode == 0, result.stderr
    return logdir, outdir, result.stdout


def test_pendulum_greedy_matches_ppo(pendulum_run):
    logdir, outdir, stdout = pendulum_run
    assert re.fullmatch(
        rf'Exported saved_model of {re.escape(logdir)}/model\.ckpt-\d+ '
        rf'\(\d+ weights\) to {re.escape(outdir)} in \d+\.\d s\.\n', stdout)
    reference = _Reference(config_io.load_config(logdir), 1000)
    reference.restore(checkpoints.list_checkpoints(logdir)[0])
    observ = _raw_observations(reference.observation_space, 1000)
    policy = tf.saved_model.load(outdir)
    action = policy.action(observ).numpy()
    assert action.dtype == np.float32 and action.shape == (1000, 1)
    np.testing.assert_allclose(action, reference.greedy(observ), atol=1e-5)
    # Outside of [-1, 1] the mode is clipped, then scaled to Pendulum's +-2.
    assert np.abs(action).max() <= 2
    size = sum(
        os.path.getsize(os.path.join(folder, name))
        for folder, _, names in os.walk(outdir) for name in names)
    assert size < 1e6
    with open(os.path.join(outdir, 'assets.extra', 'policy.json'),
              encoding='utf-8') as file_:
        metadata = json.load(file_)
    assert metadata['env'] == 'Pendulum-v1'
    assert metadata['max_length'] == 200
    assert (metadata['stochastic'], metadata['recurrent'],
            metadata['discrete']) == (False, False, False)
    assert list(policy.signatures) == ['serving_default']


@pytest.mark.parametrize('name, overrides, num_agents, steps', [
    ('cartpole', dict(policy_layers=(16, 16), value_layers=(8,)), 1000, 1),
    ('hopper', dict(policy_layers=(32, 32), value_layers=(8,)), 1000, 1),
    ('pendulum_partial',
     dict(policy_layers=(16, 8), value_layers=(8, 4)), 10, 100),
])
def test_greedy_matches_ppo(tmp_path, name, overrides, num_agents, steps):
    logdir = _synthetic_run(tmp_path / 'run', name, **overrides)
    config = config_io.load_config(logdir)
    reference = _Reference(config, num_agents)
    reference.randomize_and_save(os.path.join(logdir, 'model.ckpt-1'))
    outdir = str(tmp_path / 'policy')
    policy_export.export_run(logdir, outdir)
    policy = tf.saved_model.load(outdir)
    observ = _raw_observations(
        reference.observation_space, num_agents * steps).reshape(
            (steps, num_agents) + reference.observation_space.shape)
    state = policy.initial_state(num_agents) if steps > 1 else None
    session = _onnx_session(logdir, str(tmp_path / 'onnx'))
    onnx_state = None if state is None else np.zeros(state.shape, np.float32)
    reference.begin_episode()
    for step in range(steps):
        expected = reference.greedy(observ[step])
        if state is None:
            action = policy.action(observ[step]).numpy()
            onnx_action, = session.run(['action'], {'observ': observ[step]})
        else:
            action, state = policy.action(observ[step], state)
            action = action.numpy()
            onnx_action, onnx_state = session.run(
                ['action', 'next_state'],
                {'observ': observ[step], 'state': onnx_state})
        np.testing.assert_allclose(onnx_action, expected, atol=1e-5)
        if name == 'cartpole':
            assert action.dtype == np.int64
            np.testing.assert_array_equal(action, expected)
            assert set(np.unique(action)) == {0, 1}
        else:
            assert action.dtype == np.float32
            np.testing.assert_allclose(action, expected, atol=1e-5)
    if name == 'pendulum_partial':
        # A state of the policy's and the value's GRU.
        assert state.shape == (num_agents, 8 + 4)
        assert sorted(policy.signatures) == [
            'initial_state', 'serving_default']
        served = policy.signatures['serving_default'](
            observ=observ[0], state=policy.initial_state(num_agents))
        assert sorted(served) == ['action', 'state']


def _onnx_session(logdir, outdir):
    """Export to ONNX and open it with onnxruntime."""
    onnxruntime = pytest.importorskip('onnxruntime')
    pytest.importorskip('tf2onnx')
    metadata = policy_export.export_run(logdir, outdir, export_format='onnx')
    assert metadata['format'] == 'onnx'
    assert sorted(os.listdir(outdir)) == ['model.onnx', 'policy.json']
    return onnxruntime.InferenceSession(
        os.path.join(outdir, 'model.onnx'),
        providers=['CPUExecutionProvider'])


def test_loads_without_agents_in_eager_mode(pendulum_run, tmp_path):
    _, outdir, _ = pendulum_run
    observ = _raw_observations(gym.make('Pendulum-v1').observation_space, 5)
    # Keep the loaded model: its functions need its variables alive.
    loaded = tf.saved_model.load(outdir)
    expected = loaded.action(observ).numpy()
    np.save(tmp_path / 'observ.npy', observ)
    code = (
        'import importlib.util, sys\n'
        "assert importlib.util.find_spec('agents') is None, sys.path\n"
        'import numpy as np, tensorflow as tf\n'
        'assert tf.executing_eagerly()\n'
        f'policy = tf.saved_model.load({outdir!r})\n'
        f"observ = np.load({str(tmp_path / 'observ.npy')!r})\n"
        'print(policy.action(observ).numpy().tolist())\n')
    # Without site, the editable install's path finder is not loaded; the
    # site-packages folder alone holds TensorFlow and NumPy.
    env = dict(TF_CPP_MIN_LOG_LEVEL='2', PATH=os.environ.get('PATH', ''),
               PYTHONPATH=sysconfig.get_paths()['purelib'])
    result = _run('-S', '-c', code, env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(
        np.array(json.loads(result.stdout), np.float32), expected)


def test_saved_model_cli_serves(pendulum_run, tmp_path):
    _, outdir, _ = pendulum_run
    observ = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, -3.0]], np.float32)
    loaded = tf.saved_model.load(outdir)
    expected = loaded.action(observ).numpy()
    np.save(tmp_path / 'observ.npy', observ)
    cli = os.path.join(os.path.dirname(sys.executable), 'saved_model_cli')
    result = subprocess.run(
        [cli, 'run', '--dir', outdir, '--tag_set', 'serve',
         '--signature_def', 'serving_default',
         '--inputs', f"observ={tmp_path / 'observ.npy'}"],
        capture_output=True, text=True, check=False, env=_ENV, timeout=300)
    assert result.returncode == 0, result.stderr
    served = re.search(r'Result for output key action:\n(.*)',
                       result.stdout, re.DOTALL).group(1)
    values = np.array([float(value) for value in re.findall(
        r'-?\d+\.\d+(?:e[-+]\d+)?', served)], np.float32)
    # The command prints 8 decimals.
    np.testing.assert_allclose(values, expected.ravel(), rtol=1e-6, atol=1e-8)


@pytest.fixture(scope='module', name='visualized')
def fixture_visualized(pendulum_run, tmp_path_factory):
    """Returns of 3 greedy episodes that `visualize` records, by seed (an
    episode renders 201 frames into a video: 0.9 s each)."""
    statistics = visualize.visualize(
        pendulum_run[0], str(tmp_path_factory.mktemp('videos')),
        num_agents=3, num_episodes=3, env_mode='inprocess', seed=100)
    return {100 + episode['agent']: episode['return']
            for episode in statistics['episodes']}


def test_seeded_episodes_match_visualize(pendulum_run, visualized):
    outdir = pendulum_run[1]
    assert sorted(visualized) == [100, 101, 102]
    policy = tf.saved_model.load(outdir)
    for agent in range(3):
        env = gym.make('Pendulum-v1')
        # Visualize seeds environment i with seed + i when it builds it;
        # the episode begins at the simulation's first reset after that.
        env.reset(seed=100 + agent)
        observ, _ = env.reset()
        total, done = 0.0, False
        while not done:
            action = policy.action(observ[None])[0].numpy()
            observ, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        # Visualize sums the rewards in float32: 200 roundings of returns
        # near -1,500 differ from this float64 sum by up to about 1e-2.
        assert total == pytest.approx(visualized[100 + agent], rel=1e-5)


def test_stochastic_samples_repeat_by_seed(pendulum_run, tmp_path):
    logdir, outdir, _ = pendulum_run
    stochastic = str(tmp_path / 'stochastic')
    policy_export.export_run(logdir, stochastic, stochastic=True)
    greedy = tf.saved_model.load(outdir)
    policy = tf.saved_model.load(stochastic)
    observ = np.zeros((1000, 3), np.float32)
    first = policy.action(observ, seed=np.int64(7)).numpy()
    np.testing.assert_array_equal(
        policy.action(observ, seed=np.int64(7)).numpy(), first)
    assert not np.array_equal(
        policy.action(observ, seed=np.int64(8)).numpy(), first)
    assert not np.array_equal(policy.action(observ).numpy(), first)
    # The samples spread around the mode, clipped to Pendulum's range.
    assert np.abs(first).max() <= 2
    assert np.std(first) > 0.1
    assert np.median(first) == pytest.approx(
        greedy.action(observ[:1]).numpy()[0, 0], abs=0.2)
    assert sorted(policy.signatures) == ['seeded', 'serving_default']
    served = policy.signatures['seeded'](observ=observ, seed=np.int64(7))
    np.testing.assert_array_equal(served['action'].numpy(), first)


def _main_error(capsys, *flags_):
    """Run the command line in this process, which must exit with code 2.

    Returns:
      What it wrote to stderr.
    """
    argv = ['export'] + list(flags_)
    saved = {name: export.FLAGS[name].value for name in (
        'logdir', 'outdir', 'checkpoint', 'stochastic', 'format',
        'overwrite')}
    try:
        export.FLAGS(argv)
        with pytest.raises(SystemExit) as exit_:
            export.main(argv[:1])
    finally:
        for name, value in saved.items():
            export.FLAGS[name].value = value
    assert exit_.value.code == 2
    return capsys.readouterr().err


def _snapshot(folder):
    return {
        os.path.relpath(os.path.join(path, name), folder): open(
            os.path.join(path, name), 'rb').read()
        for path, _, names in os.walk(folder) for name in names}


def test_run_folder_without_checkpoint(pendulum_run, tmp_path, capsys):
    logdir = tmp_path / 'run'
    logdir.mkdir()
    shutil.copy(os.path.join(pendulum_run[0], 'config.yaml'), logdir)
    outdir = tmp_path / 'out'
    assert _main_error(
        capsys, f'--logdir={logdir}', f'--outdir={outdir}') == (
        f'Error: Run folder {logdir} has no checkpoint yet; train until the '
        'first one is written.\n')
    assert not outdir.exists()
    assert sorted(os.listdir(tmp_path)) == ['run']


def test_config_without_the_later_keys_takes_their_defaults(
        pendulum_run, tmp_path):
    """A config.yaml from before the network options exports the same policy.

    The run's values of those keys are the defaults, which an older
    config.yaml without them gets at the export's edge.
    """
    logdir, outdir, _ = pendulum_run
    older = str(tmp_path / 'run')
    shutil.copytree(logdir, older)
    path = os.path.join(older, 'config.yaml')
    with open(path, encoding='utf-8') as file_:
        text = file_.read()
    keys = ('activation', 'mean_activation', 'weight_init', 'recurrent_value',
            'normalize_ranges')
    text, count = re.subn(
        rf"^(?:{'|'.join(keys)}):.*\n", '', text, flags=re.MULTILINE)
    assert count == len(keys)
    with open(path, 'w', encoding='utf-8') as file_:
        file_.write(text)
    exported = str(tmp_path / 'policy')
    policy_export.export_run(older, exported)
    observ = np.random.RandomState(0).normal(size=(5, 3)).astype(np.float32)
    # Held in variables: a loaded model must outlive its functions' calls.
    policy, original = tf.saved_model.load(exported), tf.saved_model.load(
        outdir)
    np.testing.assert_array_equal(
        policy.action(observ).numpy(), original.action(observ).numpy())


def test_checkpoint_not_matching_config(pendulum_run, tmp_path, capsys):
    logdir = str(tmp_path / 'run')
    shutil.copytree(pendulum_run[0], logdir)
    path = os.path.join(logdir, 'config.yaml')
    with open(path, encoding='utf-8') as file_:
        text = file_.read()
    text = text.replace('policy_layers:\n- 16\n', 'policy_layers:\n- 32\n')
    with open(path, 'w', encoding='utf-8') as file_:
        file_.write(text)
    checkpoint = checkpoints.list_checkpoints(logdir)[0]
    outdir = tmp_path / 'out'
    assert _main_error(
        capsys, f'--logdir={logdir}', f'--outdir={outdir}') == (
        f'Error: Checkpoint {checkpoint} does not match config.yaml: '
        'variable network/policy/hidden_0/kernel has shape [3, 16], the '
        'configured network expects [3, 32].\n')
    assert sorted(os.listdir(tmp_path)) == ['run']


def test_nonempty_outdir_needs_overwrite(pendulum_run, tmp_path, capsys):
    logdir, outdir, _ = pendulum_run
    existing = str(tmp_path / 'policy')
    shutil.copytree(outdir, existing)
    before = _snapshot(existing)
    assert _main_error(
        capsys, f'--logdir={logdir}', f'--outdir={existing}') == (
        f'Error: --outdir {existing} exists and is not empty; pass '
        '--overwrite to replace it.\n')
    assert _snapshot(existing) == before
    assert sorted(os.listdir(tmp_path)) == ['policy']
    # A failing export leaves the old one alone even with --overwrite.
    names = ', '.join(
        map(os.path.basename, checkpoints.list_checkpoints(logdir)))
    assert _main_error(
        capsys, f'--logdir={logdir}', f'--outdir={existing}',
        '--checkpoint=model.ckpt-7', '--overwrite') == (
        f"Error: No checkpoint 'model.ckpt-7' in {logdir}; available: "
        f'{names}.\n')
    assert _snapshot(existing) == before
    metadata = policy_export.export_run(
        logdir, existing, stochastic=True, overwrite=True)
    assert metadata['stochastic']
    assert sorted(os.listdir(tmp_path)) == ['policy']
    assert sorted(tf.saved_model.load(existing).signatures) == [
        'seeded', 'serving_default']


def test_onnx_without_the_extra(pendulum_run, tmp_path, capsys, monkeypatch):
    # A None entry makes the import fail, as when the package is missing.
    monkeypatch.setitem(sys.modules, 'tf2onnx', None)
    outdir = tmp_path / 'out'
    assert _main_error(
        capsys, f'--logdir={pendulum_run[0]}', f'--outdir={outdir}',
        '--format=onnx') == (
        'Error: --format=onnx needs tf2onnx, which is not installed (import '
        "of tf2onnx halted; None in sys.modules); pip install -e "
        "'.[export]'.\n")
    assert not os.listdir(tmp_path)


def test_onnx_matches_saved_model(pendulum_run, tmp_path):
    logdir, outdir, _ = pendulum_run
    session = _onnx_session(logdir, str(tmp_path / 'onnx'))
    observ = _raw_observations(gym.make('Pendulum-v1').observation_space, 1000)
    action, = session.run(['action'], {'observ': observ})
    loaded = tf.saved_model.load(outdir)
    np.testing.assert_allclose(
        action, loaded.action(observ).numpy(), atol=1e-5)


def test_docs_snippet_runs_an_episode(pendulum_run):
    # The snippet named export, in the README or a page of docs/.
    found = []
    for path in [os.path.join(_ROOT, 'README.md')] + sorted(
            glob.glob(os.path.join(_ROOT, 'docs', '*.md'))):
        with open(path, encoding='utf-8') as file_:
            found += [(path, snippet) for snippet in re.findall(
                r'<!-- snippet: export -->\n```python\n(.*?)```',
                file_.read(), re.DOTALL)]
    assert len(found) == 1, found
    path, snippet = found[0]
    assert len(snippet.strip().splitlines()) <= 12
    snippet = snippet.replace('/tmp/pendulum-policy', pendulum_run[1])
    namespace = {}
    exec(compile(snippet, path, 'exec'), namespace)  # pylint: disable=exec-used
    assert -16.3 * 200 <= namespace['total'] <= 0


def test_visualize_renders_an_exported_policy(
        pendulum_run, visualized, tmp_path):
    videos = str(tmp_path / 'videos')
    statistics = visualize.visualize_policy(
        pendulum_run[1], videos, num_episodes=2, seed=100)
    assert sorted(os.listdir(videos)) == [
        'episode-000.mp4', 'episode-001.mp4', 'episodes.json']
    with open(os.path.join(videos, 'episodes.json'), encoding='utf-8') as file_:
        assert json.load(file_) == statistics
    assert statistics['policy'] == pendulum_run[1]
    assert statistics['env'] == 'Pendulum-v1'
    for index, episode in enumerate(statistics['episodes']):
        assert (episode['index'], episode['length'], episode['frames']) == (
            index, 200, 201)
        assert episode['return'] == pytest.approx(
            visualized[100 + index], abs=1e-3)


def test_visualize_policy_needs_an_export(pendulum_run, tmp_path):
    logdir = pendulum_run[0]
    with pytest.raises(visualize.VisualizeError) as error:
        visualize.visualize_policy(logdir, str(tmp_path / 'videos'))
    assert str(error.value) == (
        f'--policy {logdir} holds no saved_model.pb and '
        'assets.extra/policy.json; expected a folder written by '
        'agents.scripts.export.')
    assert not os.listdir(tmp_path)


def test_visualize_policy_names_an_onnx_export(tmp_path):
    """An ONNX export is refused in one line that names the format."""
    folder = tmp_path / 'onnx'
    folder.mkdir()
    (folder / 'model.onnx').write_bytes(b'')
    (folder / 'policy.json').write_text('{}', encoding='utf-8')
    with pytest.raises(visualize.VisualizeError) as error:
        visualize.visualize_policy(str(folder), str(tmp_path / 'videos'))
    assert str(error.value) == (
        f'--policy {folder} holds an ONNX export (model.onnx), which '
        'visualize does not run; expected the SavedModel folder of '
        'agents.scripts.export (its default --format=saved_model).')
    assert sorted(os.listdir(tmp_path)) == ['onnx']
