"""The policy of a training run as a TensorFlow 2 SavedModel.

`export_run` reads a run folder written by `agents.scripts.train`, takes the
weights of its policy network and the observation normalizer from a
checkpoint, and saves a `tf.Module` whose functions compute the policy's
action from the raw observation of the environment:

  raw observation -> RangeNormalize (the env wrapper's affine map to [-1, 1])
  -> PPO's running observation normalizer (center, scale, clip at 5)
  -> the network of config.yaml -> mode or sample of the action distribution
  -> ClipAction -> RangeNormalize's inverse map -> action of the env

The forward pass is the network function of the run's config.yaml itself,
traced into TensorFlow 2 functions: its `tf.get_variable` calls receive
`tf.Variable`s that hold the checkpoint's values through a custom getter of
a variable scope, so the exported numbers are the training graph's numbers.
The SavedModel needs TensorFlow alone to load and serve.

Functions of the loaded model (`policy = tf.saved_model.load(DIR)`):

  feed-forward: `policy.action(observ)` -> action batch; stochastic exports
      also take `seed` (int64 scalar; pass a new one per call).
  recurrent: `policy.initial_state(batch_size)` -> state `[batch, units]`;
      `policy.action(observ, state)` -> `(action, state)`; stochastic
      exports also take `seed`.

Signatures (`policy.signatures`, served by TF Serving and
`saved_model_cli run`): `serving_default` takes `observ` (and `state` for
recurrent policies) and returns `action` (and `state`); recurrent exports
add `initial_state` (`batch_size` -> `state`); stochastic exports add
`seeded`, which takes `seed` too. The export writes `policy.json` with the
environment and the signature layout beside the model, in `assets.extra`.

With `export_format='onnx'` the folder holds `model.onnx`, the
`serving_default` signature converted by tf2onnx (inputs `observ` and
`state`, outputs `action` and `next_state`: ONNX names every value once),
and `policy.json`.
"""

import functools
import json
import os
import re
import shutil
import tempfile
import time

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents import parts
from agents.scripts import config_io


METADATA_FILE = 'policy.json'
METADATA_FOLDER = 'assets.extra'
ONNX_FILE = 'model.onnx'
FORMATS = ('saved_model', 'onnx')

# PPO's observation normalizer: its variable scope and its arguments, as
# `agents.algorithms.ppo.PPO` creates it.
_OBSERV_FILTER = dict(center=True, scale=True, clip=5,
                      name='normalize_observ')
# The variable scope of the network template in PPO.
_NETWORK_SCOPE = 'network'
_CHECKPOINT_INDEX = re.compile(r'^model\.ckpt-(\d+)\.index$')
_ONNX_OPSET = 17


class ExportError(Exception):
    """A run folder, checkpoint, output folder or format that cannot export."""


def export_run(
        logdir, outdir, checkpoint=None, stochastic=False,
        export_format='saved_model', overwrite=False):
    """Export the policy of a run folder.

    The model is written to a temporary folder beside `outdir` and renamed
    into place once complete, so a failed export leaves `outdir` as it was.

    Args:
        logdir: Run folder written by `agents.scripts.train`.
        outdir: Folder to write; it must be missing or empty unless
            `overwrite`.
        checkpoint: Checkpoint name in the run folder or path; None takes
            the newest.
        stochastic: Whether the model samples actions instead of taking the
            mode of the policy.
        export_format: 'saved_model', or 'onnx' for `model.onnx` converted
            by tf2onnx (the `export` extra) and checked with onnxruntime.
        overwrite: Whether to replace an existing non-empty `outdir`.

    Raises:
        ExportError: With one line naming the problem.

    Returns:
        Dict of the metadata written to `policy.json`.
    """
    start = time.perf_counter()
    if export_format not in FORMATS:
        raise ExportError(
            f"--format={export_format} is not supported; expected one of "
            f"{', '.join(FORMATS)}.")
    if export_format == 'onnx':
        _check_onnx_extra()
    logdir = os.path.expanduser(logdir)
    outdir = os.path.abspath(os.path.expanduser(outdir))
    _check_outdir(outdir, overwrite)
    config = _load_run_config(logdir)
    checkpoint = find_checkpoint(logdir, checkpoint)
    module = build_policy(config, checkpoint, stochastic)
    metadata = dict(module.metadata, checkpoint=os.path.abspath(checkpoint),
                    format=export_format)
    parent = os.path.dirname(outdir)
    try:
        os.makedirs(parent, exist_ok=True)
        temporary = tempfile.mkdtemp(
            prefix='.' + os.path.basename(outdir) + '-', dir=parent)
    except OSError as error:
        raise ExportError(
            f'Cannot write --outdir {outdir}: {_first_line(error)}') from error
    # mkdtemp creates the folder for its owner alone; the export gets the
    # permissions of a folder made by os.makedirs.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(temporary, 0o777 & ~umask)
    try:
        if export_format == 'onnx':
            _save_onnx(module, temporary)
        else:
            tf.saved_model.save(
                module, temporary, signatures=module.signatures())
        folder = temporary if export_format == 'onnx' else os.path.join(
            temporary, METADATA_FOLDER)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, METADATA_FILE), 'w',
                  encoding='utf-8') as file_:
            file_.write(json.dumps(metadata, indent=2) + '\n')
        _move_into_place(temporary, outdir)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    metadata['seconds'] = time.perf_counter() - start
    return metadata


def find_checkpoint(logdir, checkpoint=None):
    """Path prefix of a checkpoint of a run folder.

    Args:
        logdir: Run folder.
        checkpoint: Name in the folder (e.g. `model.ckpt-4000`) or path;
            None takes the `model.ckpt-<step>` of the highest step, or the
            one TensorFlow's `checkpoint` index file names.

    Raises:
        ExportError: When there is no such checkpoint.

    Returns:
        Checkpoint path prefix.
    """
    if checkpoint is not None:
        path = os.path.join(logdir, os.path.expanduser(checkpoint))
        if not os.path.exists(path + '.index'):
            raise ExportError(
                f"No checkpoint '{checkpoint}' in {logdir}; expected the "
                f'name of a model.ckpt-<step>.index file in it.')
        return path
    steps = []
    for name in os.listdir(logdir):
        match = _CHECKPOINT_INDEX.match(name)
        if match:
            steps.append(int(match.group(1)))
    if steps:
        return os.path.join(logdir, f'model.ckpt-{max(steps)}')
    latest = tf.train.latest_checkpoint(logdir)
    if latest and os.path.exists(latest + '.index'):
        return latest
    raise ExportError(
        f'Run folder {logdir} has no checkpoint yet; train until the first '
        'one is written.')


def build_policy(config, checkpoint, stochastic=False):
    """The exportable policy module of a configuration and checkpoint.

    Args:
        config: Run configuration with `env`, `network` and the network's
            settings, as `config_io.load_config` returns it.
        checkpoint: Path prefix of a checkpoint of that run.
        stochastic: Whether to sample actions rather than take the mode.

    Raises:
        ExportError: When the environment cannot be built, or the checkpoint
            lacks a variable of the configured network or holds it in
            another shape.

    Returns:
        `PolicyModule`.
    """
    observation_space, action_space = _env_spaces(config)
    try:
        reader = tf.train.load_checkpoint(checkpoint)
    except (tf.errors.OpError, ValueError) as error:
        raise ExportError(
            f'Cannot read checkpoint {checkpoint}: '
            f'{_first_line(error)}') from error
    return PolicyModule(
        config, observation_space, action_space, _CheckpointValues(
            reader, checkpoint), stochastic)


class _CheckpointValues:
    """Values of a checkpoint by variable name, with one-line errors."""

    def __init__(self, reader, checkpoint):
        self._reader = reader
        self._checkpoint = checkpoint
        self._shapes = reader.get_variable_to_shape_map()

    def get(self, name, shape):
        """The value of a variable, checked against the expected shape."""
        if name not in self._shapes:
            raise ExportError(
                f'Checkpoint {self._checkpoint} does not match config.yaml: '
                f'it has no variable {name}, which the configured network '
                'needs.')
        value = self._reader.get_tensor(name)
        expected = tf.TensorShape(shape)
        if not expected.is_compatible_with(value.shape):
            raise ExportError(
                f'Checkpoint {self._checkpoint} does not match config.yaml: '
                f'variable {name} has shape {list(value.shape)}, the '
                f'configured network expects {expected.as_list()}.')
        return value


class PolicyModule(tf.Module):
    """A policy's forward pass from raw observations to env actions.

    The weights are `tf.Variable`s holding checkpoint values; the
    functions trace the run's network function, whose variable requests a
    custom getter answers with them.
    """

    def __init__(
            self, config, observation_space, action_space, values,
            stochastic=False):
        """Create the variables by running the network once.

        Args:
            config: Run configuration.
            observation_space: The environment's own Box observation space.
            action_space: The environment's own Box or Discrete action
                space.
            values: Object with `get(name, shape)` returning a variable's
                value.
            stochastic: Whether to sample actions.

        Raises:
            ExportError: When a variable is missing or has another shape, or
                seeded sampling meets an unknown distribution.
        """
        super().__init__(name='policy')
        # A partial, not the config: a module wraps dict attributes for
        # tracking.
        self._network_fn = functools.partial(config.network, config)
        self._stochastic = bool(stochastic)
        self._observ_shape = tuple(int(size) for size in
                                   observation_space.shape)
        self._discrete = isinstance(action_space, gym.spaces.Discrete)
        normalize = bool(config.get('normalize_ranges', True))
        self._observ_map, self._action_map = _range_maps(
            observation_space, action_space, normalize)
        if self._discrete:
            self._network_space = action_space
        else:
            # ClipAction's space, which the training graph's network saw.
            self._network_space = gym.spaces.Box(
                -np.inf, np.inf, action_space.shape, action_space.dtype)
        self._values = values
        self._variables_by_name = {}
        observ = tf.zeros((1,) + self._observ_shape, tf.float32)
        # The first pass creates the variables; it runs eagerly.
        output = self._network(observ, None, creating=True)
        self.weights = [
            self._variables_by_name[name]
            for name in sorted(self._variables_by_name)]
        self._values = None
        self._state_sizes = None
        if output.state is not None:
            self._state_sizes = [
                int(state.shape[-1])
                for state in tf.nest.flatten(output.state)]
            self._state_structure = tf.nest.map_structure(
                lambda unused_state: 0, output.state)
        if self._stochastic:
            self._check_distribution(output.policy)
        self._define_functions()
        # A JSON string: a module would wrap a dict attribute for tracking.
        self._metadata = json.dumps(dict(
            env=_describe_env(config.env),
            # Whether `env` is the import path of a constructor, not an id.
            env_constructor=not isinstance(config.env, str),
            max_length=config.get('max_length'),
            config_function=config.get(config_io.SOURCE_KEY),
            network=_describe_callable(config.network),
            stochastic=self._stochastic,
            recurrent=self.recurrent,
            discrete=self._discrete,
            observ_shape=list(self._observ_shape),
            action_shape=list(action_space.shape),
            action_dtype=self._action_dtype().name,
            state_size=sum(self._state_sizes or []) or None,
            weights=int(sum(np.prod(variable.shape)
                            for variable in self.weights))))

    @property
    def metadata(self):
        """Dict describing the policy: env, layout, number of weights."""
        return json.loads(self._metadata)

    @property
    def recurrent(self):
        """Whether the policy carries a state from step to step."""
        return self._state_sizes is not None

    def serving_inputs(self):
        """TensorSpecs of the inputs of `serving_default`, in order."""
        inputs = [tf.TensorSpec(
            (None,) + self._observ_shape, tf.float32, name='observ')]
        if self.recurrent:
            inputs.append(tf.TensorSpec(
                [None, sum(self._state_sizes)], tf.float32, name='state'))
        return inputs

    def serving_function(self):
        """The `tf.function` of `serving_default`, returning a dict."""
        return self._serve

    def signatures(self):
        """The signatures to save: name -> concrete function."""
        inputs = self.serving_inputs()
        result = {}
        if self.recurrent:
            result['initial_state'] = (
                self._serve_initial_state.get_concrete_function(
                    tf.TensorSpec([], tf.int32, name='batch_size')))
        result['serving_default'] = self._serve.get_concrete_function(
            *inputs)
        if self._stochastic:
            result['seeded'] = self._serve_seeded.get_concrete_function(
                *inputs, tf.TensorSpec([], tf.int64, name='seed'))
        return result

    def _define_functions(self):
        """Trace the functions that the SavedModel keeps."""
        observ = tf.TensorSpec((None,) + self._observ_shape, tf.float32)
        seed = tf.TensorSpec([], tf.int64)
        if not self.recurrent:

            def action(observ, seed=None):
                return self._act(observ, None, seed)[0]

            def serve(observ):
                return {'action': action(observ)}

            def serve_seeded(observ, seed):
                return {'action': action(observ, seed)}

            self.action = tf.function(action, autograph=False)
            self.action.get_concrete_function(observ)
            self._serve = tf.function(serve, autograph=False)
            if self._stochastic:
                self.action.get_concrete_function(observ, seed)
                self._serve_seeded = tf.function(
                    serve_seeded, autograph=False)
            return
        state = tf.TensorSpec([None, sum(self._state_sizes)], tf.float32)

        def recurrent_action(observ, state, seed=None):
            return self._act(observ, state, seed)

        def initial_state(batch_size):
            return tf.zeros(
                [batch_size, sum(self._state_sizes)], tf.float32,
                name='initial_state')

        def serve_recurrent(observ, state):
            action, state = recurrent_action(observ, state)
            return {'action': action, 'state': state}

        def serve_recurrent_seeded(observ, state, seed):
            action, state = recurrent_action(observ, state, seed)
            return {'action': action, 'state': state}

        def serve_initial_state(batch_size):
            return {'state': initial_state(batch_size)}

        self.action = tf.function(recurrent_action, autograph=False)
        self.action.get_concrete_function(observ, state)
        self.initial_state = tf.function(initial_state, autograph=False)
        self.initial_state.get_concrete_function(tf.TensorSpec([], tf.int32))
        self._serve = tf.function(serve_recurrent, autograph=False)
        self._serve_initial_state = tf.function(
            serve_initial_state, autograph=False)
        if self._stochastic:
            self.action.get_concrete_function(observ, state, seed)
            self._serve_seeded = tf.function(
                serve_recurrent_seeded, autograph=False)

    def _act(self, observ, state, seed):
        """Action (and state) for a batch of raw observations."""
        observ = tf.convert_to_tensor(observ, tf.float32)
        nested_state = None
        if state is not None:
            parts_ = tf.split(state, self._state_sizes, axis=-1)
            nested_state = tf.nest.pack_sequence_as(
                self._state_structure, parts_)
        output = self._network(observ, nested_state)
        if not self._stochastic:
            action = output.policy.mode()
        elif seed is None:
            action = output.policy.sample()
        else:
            action = self._seeded_sample(output.policy, seed)
        action = self._to_env_action(action[:, 0])
        if state is None:
            return action, None
        state = tf.concat(tf.nest.flatten(output.state), -1, name='next_state')
        return action, state

    def _network(self, observ, state, creating=False):
        """Run the configured network on a batch of raw observations."""
        if self._observ_map is not None:
            dtype, center, half_range = self._observ_map
            observ = tf.cast(observ, dtype)
            observ = tf.cast((observ - center) / half_range, tf.float32)
        getter = self._create_variable if creating else self._lookup_variable
        with tf.compat.v1.variable_scope(
                '', custom_getter=getter, auxiliary_name_scope=False):
            observ_filter = parts.StreamingNormalize(
                observ[0], **_OBSERV_FILTER)
            observ = observ_filter.transform(observ)
            with tf.compat.v1.variable_scope(_NETWORK_SCOPE):
                return self._network_fn(
                    self._network_space, observ[:, None],
                    tf.ones(tf.shape(observ)[:1], tf.int32), state)

    def _create_variable(self, *unused_args, **kwargs):
        name = kwargs['name']
        if name not in self._variables_by_name:
            value = self._values.get(name, kwargs.get('shape'))
            self._variables_by_name[name] = tf.Variable(
                value, trainable=False, name=name.replace('/', '.'))
        return self._variables_by_name[name]

    def _lookup_variable(self, *unused_args, **kwargs):
        return self._variables_by_name[kwargs['name']]

    def _to_env_action(self, action):
        """Clip and map a network action into the environment's space."""
        if self._discrete:
            return tf.cast(action, tf.int64, name='env_action')
        dtype, low, high, center, half_range = self._action_map
        action = tf.cast(action, dtype)
        action = tf.minimum(tf.maximum(action, low), high)
        return tf.identity(action * half_range + center, name='env_action')

    def _action_dtype(self):
        if self._discrete:
            return tf.int64
        return tf.as_dtype(self._action_map[0])

    @staticmethod
    def _check_distribution(policy):
        if not isinstance(policy, (parts.DiagonalGaussian, parts.Categorical)):
            raise ExportError(
                f'--stochastic supports the policies DiagonalGaussian and '
                f'Categorical, the network returns a '
                f'{type(policy).__name__}.')

    @staticmethod
    def _seeded_sample(policy, seed):
        """A sample drawn with stateless random ops keyed by `seed`."""
        key = tf.stack([tf.cast(seed, tf.int64), tf.constant(0, tf.int64)])
        if isinstance(policy, parts.DiagonalGaussian):
            noise = tf.random.stateless_normal(
                tf.shape(policy.mean), key, dtype=policy.mean.dtype)
            return policy.mean + policy.std * noise
        logits = policy.logits
        num_classes = tf.shape(logits)[-1]
        flat = tf.random.stateless_categorical(
            tf.reshape(logits, [-1, num_classes]), 1, key, dtype=tf.int32)
        return tf.reshape(flat, tf.shape(logits)[:-1])


def _range_maps(observation_space, action_space, normalize):
    """The affine maps of the env wrappers as constants.

    The same formulas as `tools.space_wrappers.range_scales`: bounds that
    are finite and distinct map to [-1, 1], others through centre 0 and
    half range 1, in the space's floating point type (float32 for integer
    observations).

    Returns:
        Tuple of `(dtype, center, half_range)` for observations, or None,
        and `(dtype, low, high, center, half_range)` for Box actions, or
        None: ClipAction's bounds in the normalised space, then the map
        back.
    """
    observ_map = None
    if normalize and _normalizable(observation_space):
        dtype = (observation_space.dtype
                 if observation_space.dtype.kind == 'f'
                 else np.dtype(np.float32))
        _, center, half_range = _scale(observation_space, dtype)
        observ_map = (dtype, center, half_range)
    if not isinstance(action_space, gym.spaces.Box):
        return observ_map, None
    dtype = action_space.dtype
    if normalize and _normalizable(action_space) and dtype.kind == 'f':
        mask, center, half_range = _scale(action_space, dtype)
        low = np.where(mask, -1.0, action_space.low.astype(np.float64))
        high = np.where(mask, 1.0, action_space.high.astype(np.float64))
    else:
        center = np.zeros(action_space.shape, dtype)
        half_range = np.ones(action_space.shape, dtype)
        low = action_space.low.astype(np.float64)
        high = action_space.high.astype(np.float64)
    return observ_map, (
        dtype, low.astype(dtype), high.astype(dtype), center, half_range)


def _scale(space, dtype):
    """Mask, centre and half range of the bounds, as RangeNormalize."""
    low = space.low.astype(np.float64)
    high = space.high.astype(np.float64)
    with np.errstate(invalid='ignore', over='ignore'):
        half_range = (high - low) / 2
        center = low + half_range
    mask = np.isfinite(half_range) & (half_range > 0)
    return (mask, np.where(mask, center, 0).astype(dtype),
            np.where(mask, half_range, 1).astype(dtype))


def _normalizable(space):
    """Whether a space is a Box with finite, distinct bounds somewhere."""
    if not isinstance(space, gym.spaces.Box):
        return False
    return bool(_scale(space, np.float64)[0].any())


def make_env(env, render_mode=None):
    """The environment of a config's `env`, without the training wrappers.

    Args:
        env: Gymnasium id or constructor taking `render_mode`.
        render_mode: Gymnasium render mode, or None.

    Returns:
        Gymnasium environment.
    """
    kwargs = {'render_mode': render_mode} if render_mode else {}
    if isinstance(env, str):
        return gym.make(env, **kwargs)
    return env(**kwargs)


def _env_spaces(config):
    """Observation and action space of the configured environment."""
    if 'env' not in config or 'network' not in config:
        raise ExportError(
            'The run configuration has no env or no network; expected a '
            'run folder written by agents.scripts.train.')
    try:
        env = make_env(config.env)
    except Exception as error:  # pylint: disable=broad-except
        raise ExportError(
            f'Cannot build the environment {_describe_env(config.env)}: '
            f'{_first_line(error)}') from error
    try:
        observation_space = env.observation_space
        action_space = env.action_space
    finally:
        env.close()
    if not isinstance(observation_space, gym.spaces.Box):
        raise ExportError(
            f'Cannot export a policy of the observation space '
            f'{observation_space}; expected a Box.')
    if not isinstance(action_space, (gym.spaces.Box, gym.spaces.Discrete)):
        raise ExportError(
            f'Cannot export a policy of the action space {action_space}; '
            'expected a Box or Discrete.')
    return observation_space, action_space


def _load_run_config(logdir):
    """The configuration of a run folder, or an ExportError."""
    if not os.path.isdir(logdir):
        raise ExportError(f'Run folder {logdir} is not a directory.')
    try:
        return config_io.load_config(logdir)
    except config_io.ConfigError as error:
        raise ExportError(
            f'{_first_line(error)} Expected a run folder written by '
            'agents.scripts.train.') from error


def _check_outdir(outdir, overwrite):
    """Refuse an outdir that is a file, or a non-empty folder."""
    if not os.path.lexists(outdir):
        return
    if not os.path.isdir(outdir):
        raise ExportError(f'--outdir {outdir} exists and is not a folder.')
    if os.listdir(outdir) and not overwrite:
        raise ExportError(
            f'--outdir {outdir} exists and is not empty; pass --overwrite to '
            'replace it.')


def _move_into_place(temporary, outdir):
    """Rename the finished export to `outdir`, replacing what was there."""
    old = None
    if os.path.lexists(outdir):
        old = temporary + '.old'
        os.rename(outdir, old)
    try:
        os.rename(temporary, outdir)
    except BaseException:
        if old:
            os.rename(old, outdir)
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)


def _check_onnx_extra():
    """Raise an ExportError unless tf2onnx and onnxruntime import."""
    for module in ('tf2onnx', 'onnxruntime'):
        try:
            __import__(module)
        except ImportError as error:
            raise ExportError(
                f"--format=onnx needs {module}, which is not installed "
                f"({_first_line(error)}); pip install -e '.[export]'."
            ) from error


def _save_onnx(module, folder):
    """Convert the serving signature to ONNX and check it with onnxruntime.

    Raises:
        ExportError: When tf2onnx cannot convert the model, or onnxruntime
            computes other actions than TensorFlow.
    """
    import onnxruntime  # pylint: disable=import-outside-toplevel
    import tf2onnx  # pylint: disable=import-outside-toplevel
    specs = module.serving_inputs()
    serving = module.serving_function()

    def rename_state(*inputs):
        # ONNX names values uniquely: the state that the model returns
        # becomes `next_state`, beside the input `state`.
        outputs = dict(serving(*inputs))
        if 'state' in outputs:
            outputs['next_state'] = outputs.pop('state')
        return outputs

    function = tf.function(rename_state, autograph=False)
    path = os.path.join(folder, ONNX_FILE)
    try:
        tf2onnx.convert.from_function(
            function, input_signature=specs, opset=_ONNX_OPSET,
            output_path=path)
    except Exception as error:  # pylint: disable=broad-except
        raise ExportError(
            f'tf2onnx cannot convert the policy: {_first_line(error)}'
        ) from error
    session = onnxruntime.InferenceSession(
        path, providers=['CPUExecutionProvider'])
    rng = np.random.default_rng(0)
    inputs = {}
    for spec in specs:
        shape = [4] + spec.shape.as_list()[1:]
        inputs[spec.name] = rng.normal(size=shape).astype(np.float32)
    expected = function(*inputs.values())
    names = [output.name for output in session.get_outputs()]
    computed = dict(zip(names, session.run(names, inputs)))
    for name, value in expected.items():
        value = value.numpy()
        same = computed[name].shape == value.shape and (
            # Samples of ONNX's random ops differ from TensorFlow's.
            module.metadata['stochastic'] and name == 'action' or
            np.allclose(computed[name], value, atol=1e-5))
        if not same:
            raise ExportError(
                f'onnxruntime computes other {name} values than TensorFlow '
                'for the converted policy.')


def _describe_env(env):
    if isinstance(env, str):
        return env
    return _describe_callable(env)


def _describe_callable(value):
    try:
        return config_io.callable_path(value)
    except config_io.ConfigError:
        return repr(value)


def _first_line(error):
    """The first line of an error that says more than where it happened."""
    lines = [line.strip() for line in str(error).splitlines()]
    lines = [line for line in lines if line and line != 'in user code:'
             and not line.startswith('File "')]
    return lines[0] if lines else type(error).__name__
