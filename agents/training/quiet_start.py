"""Start TensorFlow in the scripts without the lines its C++ code prints
to the stderr descriptor before `TF_CPP_MIN_LOG_LEVEL` takes effect."""

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


def quiet_tensorflow(level='2'):
    """Load TensorFlow with stderr filtered, unless the user set the level."""
    users = os.environ.get(_LEVEL) not in (None, os.environ.get(_OWN_LEVEL))
    if users or 'tensorflow' in sys.modules:
        return
    set_log_level(level)
    with filter_stderr():
        tensorflow = importlib.import_module('tensorflow')
        # When a machine without a GPU reports its failed cuInit.
        tensorflow.config.list_physical_devices()


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
