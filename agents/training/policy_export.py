"""The policy of a training run as a TensorFlow 2 SavedModel or ONNX file;
docs/export.md lists its functions and signatures."""

import importlib
import json
import os
import shutil
import time
import uuid

import numpy as np
import tensorflow as tf

from agents.training import errors
from agents.training import policy_module

METADATA_FILE = 'policy.json'
METADATA_FOLDER = 'assets.extra'
ONNX_FILE = 'model.onnx'
FORMATS = ('saved_model', 'onnx')

_ONNX_OPSET = 17
ExportError = policy_module.ExportError


def export_run(
        logdir, outdir, checkpoint=None, stochastic=False,
        export_format='saved_model', overwrite=False, member=None):
    """Export the policy of a run folder's `checkpoint` (a name in it or a
    path; None: the newest; of a population: of `member`, 'seed-S' or
    'VARIANT/seed-S', by default the best last evaluation's) to `outdir`
    (missing or empty unless `overwrite`), as 'saved_model' or 'onnx'
    (tf2onnx, the `export` extra, checked with onnxruntime), sampling
    actions where `stochastic`; returns the metadata written to
    `policy.json`, and `seconds`. A failed export leaves `outdir` as is and
    raises an ExportError of one line."""
    start = time.perf_counter()
    if export_format not in FORMATS:
        raise ExportError(
            f"--format={export_format} is not supported; expected one of "
            f"{', '.join(FORMATS)}.")
    onnx_modules = _onnx_modules() if export_format == 'onnx' else None
    outdir = os.path.abspath(os.path.expanduser(outdir))
    if os.path.lexists(outdir) and not os.path.isdir(outdir):
        raise ExportError(f'--outdir {outdir} exists and is not a folder.')
    if os.path.lexists(outdir) and os.listdir(outdir) and not overwrite:
        raise ExportError(
            f'--outdir {outdir} exists and is not empty; pass --overwrite to '
            'replace it.')
    config, checkpoint = policy_module.load_run(
        os.path.expanduser(logdir), checkpoint)
    module = policy_module.build_policy(config, checkpoint, stochastic, member)
    metadata = dict(module.metadata, checkpoint=os.path.abspath(checkpoint),
                    format=export_format)
    if module.member:
        metadata['member'] = module.member
    # Written beside `outdir`, then renamed into place.
    temporary = os.path.join(
        os.path.dirname(outdir),
        f'.{os.path.basename(outdir)}-{uuid.uuid4().hex[:8]}')
    try:
        os.makedirs(temporary)
    except OSError as error:
        raise ExportError(
            f'Cannot write --outdir {outdir}: '
            f'{errors.error_line(error)}') from error
    try:
        if onnx_modules:
            _save_onnx(module, temporary, *onnx_modules)
            folder = temporary
        else:
            tf.saved_model.save(
                module, temporary, signatures=module.signatures())
            folder = os.path.join(temporary, METADATA_FOLDER)
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


def _onnx_modules():
    """tf2onnx and onnxruntime, or an ExportError naming the one missing."""
    modules = []
    for module in ('tf2onnx', 'onnxruntime'):
        try:
            modules.append(importlib.import_module(module))
        except ImportError as error:
            raise ExportError(
                f"--format=onnx needs {module}, which is not installed "
                f"({errors.error_line(error)}); pip install -e '.[export]'."
            ) from error
    return modules


def _save_onnx(module, folder, tf2onnx, onnxruntime):
    """Convert the serving signature to ONNX; check it with onnxruntime."""
    specs = module.serving_inputs()
    serving = module.signatures()['serving_default']

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
    inputs = {
        spec.name: rng.normal(size=[4] + spec.shape.as_list()[1:]).astype(
            np.float32)
        for spec in specs}
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
