"""The policy of a training run as a TensorFlow 2 SavedModel or ONNX file.

`export_run` takes the policy network's weights and the observation
normalizer from a run folder's checkpoint and saves a `tf.Module`
(`policy_module.PolicyModule`) that maps a raw observation to the action of
the environment, through the run's own network function; its functions and
signatures are listed in docs/export.md.
"""

import json
import os
import shutil
import tempfile
import time

import gymnasium as gym
import numpy as np
import tensorflow as tf

from agents.training import checkpoints
from agents.training import config_io
from agents.training import errors
from agents.training import policy_module


METADATA_FILE = 'policy.json'
METADATA_FOLDER = 'assets.extra'
ONNX_FILE = 'model.onnx'
FORMATS = ('saved_model', 'onnx')

_ONNX_OPSET = 17
# The error's public name, where export and its tests import it.
ExportError = policy_module.ExportError


def export_run(
        logdir, outdir, checkpoint=None, stochastic=False,
        export_format='saved_model', overwrite=False):
    """Export the policy of a run folder; a failed one leaves `outdir` as is.

    Args:
      logdir: Run folder written by `agents.scripts.train`.
      outdir: Folder to write; missing or empty unless `overwrite`.
      checkpoint: Checkpoint name in the run folder or path; None: the
          newest.
      stochastic: Whether the model samples actions instead of taking the
          mode of the policy.
      export_format: 'saved_model', or 'onnx' (tf2onnx, the `export`
          extra, checked with onnxruntime).
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
            f'Cannot write --outdir {outdir}: '
            f'{errors.error_line(error)}') from error
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
      checkpoint: Name in the folder (`model.ckpt-4000`) or path; None: the
          newest (`checkpoints.list_checkpoints`).

    Raises:
      ExportError: When there is no such checkpoint.
    """
    if checkpoint is not None:
        path = os.path.join(logdir, os.path.expanduser(checkpoint))
        if not os.path.exists(path + '.index'):
            raise ExportError(
                f"No checkpoint '{checkpoint}' in {logdir}; expected the "
                f'name of a model.ckpt-<step>.index file in it.')
        return path
    found = checkpoints.list_checkpoints(logdir)
    if found:
        return found[0]
    raise ExportError(
        f'Run folder {logdir} has no checkpoint yet; train until the first '
        'one is written.')


def build_policy(config, checkpoint, stochastic=False):
    """The `PolicyModule` of a run configuration and checkpoint.

    Args:
      config: Run configuration (`config_io.load_config`).
      checkpoint: Path prefix of a checkpoint of that run.
      stochastic: Whether to sample actions rather than take the mode.

    Raises:
      ExportError: When the environment cannot be built, or the checkpoint
          lacks a variable of the network or holds it in another shape.
    """
    observation_space, action_space = _env_spaces(config)
    try:
        reader = tf.train.load_checkpoint(checkpoint)
    except (tf.errors.OpError, ValueError) as error:
        raise ExportError(
            f'Cannot read checkpoint {checkpoint}: '
            f'{errors.error_line(error)}') from error
    return policy_module.PolicyModule(
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


def make_env(env, render_mode=None):
    """The environment of a config's `env`, without the training wrappers.

    Args:
      env: Gymnasium id or constructor taking `render_mode`.
      render_mode: Gymnasium render mode, or None.
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
            'Cannot build the environment '
            f'{policy_module.describe_env(config.env)}: '
            f'{errors.error_line(error)}') from error
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
            f'{errors.error_line(error)} Expected a run folder written by '
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
                f"({errors.error_line(error)}); pip install -e '.[export]'."
            ) from error


def _save_onnx(module, folder):
    """Convert the serving signature to ONNX; check it with onnxruntime."""
    # The optional `export` extra; `export_run` checks for it first.
    # pylint: disable-next=import-outside-toplevel,import-error
    import onnxruntime
    # pylint: disable-next=import-outside-toplevel,import-error
    import tf2onnx
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
            f'tf2onnx cannot convert the policy: {errors.error_line(error)}'
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
