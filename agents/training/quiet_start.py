"""Start TensorFlow in the scripts without the lines its C++ code prints
to the stderr descriptor before `TF_CPP_MIN_LOG_LEVEL` takes effect, and
without Keras."""

import contextlib
import importlib
import os
import re
import sys
import tempfile

# absl's info and warning lines ('I0000 00:00:1795439404.279804   20947
# port.cc:153] ...'), cpu_feature_guard's, and those of a machine without CUDA.
_NOISE = re.compile(
    r'^(?:[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] '
    r'|To enable the following instructions: '
    r'|WARNING: All log messages before absl::InitializeLog\(\) '
    r'|E\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\] .*'
    r'(?:cuInit|CUDA error|cuda drivers))')
_LEVEL = 'TF_CPP_MIN_LOG_LEVEL'
# Holds the value of `TF_CPP_MIN_LOG_LEVEL` where this module set it.
_OWN_LEVEL = 'BATCH_PPO_TF_CPP_MIN_LOG_LEVEL'
# The Keras module that TensorFlow's import loads eagerly where Keras is
# installed (for Keras' optimizers in SavedModels), a fifth of the import's
# time; the package uses no Keras, and `tf.keras` still imports it later.
_EAGER_KERAS = 'keras.src.optimizers'


def quiet_tensorflow(level='2'):
    """Load TensorFlow without Keras, with stderr filtered unless the user
    set the level."""
    if 'tensorflow' in sys.modules:
        return
    if os.environ.get(_LEVEL) not in (None, os.environ.get(_OWN_LEVEL)):
        # The user's level.
        with _without_keras():
            importlib.import_module('tensorflow')
        return
    set_log_level(level)
    with filter_stderr(), _without_keras():
        tensorflow = importlib.import_module('tensorflow')
        # When a machine without a GPU reports its failed cuInit.
        tensorflow.config.list_physical_devices()


@contextlib.contextmanager
def _without_keras():
    """Import TensorFlow without the Keras it loads eagerly: an import that
    fails, which TensorFlow's import passes over, while it runs."""
    blocked = _EAGER_KERAS not in sys.modules
    if blocked:
        sys.modules[_EAGER_KERAS] = None
    try:
        yield
    finally:
        if blocked and sys.modules.get(_EAGER_KERAS, '') is None:
            del sys.modules[_EAGER_KERAS]


def set_log_level(level='2'):
    """Set `TF_CPP_MIN_LOG_LEVEL`, marked as ours, unless it is set."""
    if _LEVEL not in os.environ:
        os.environ[_LEVEL] = os.environ[_OWN_LEVEL] = str(level)


def is_noise(line):
    """Whether a line of stderr is one of TensorFlow's start-up lines."""
    return bool(_NOISE.match(line))


@contextlib.contextmanager
def filter_stderr():
    """Filter out the `is_noise` lines written to file descriptor 2."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            text = captured.read().decode('utf-8', errors='replace')
            kept = [
                line for line in text.splitlines(keepends=True)
                if not is_noise(line)]
            if kept:
                sys.stderr.write(''.join(kept))
                sys.stderr.flush()
