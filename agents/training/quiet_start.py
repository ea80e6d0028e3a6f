"""Start TensorFlow in the scripts without its start-up log lines.

Loading TensorFlow prints lines that concern no user of these scripts:
absl's `All log messages before absl::InitializeLog() is called are written
to STDERR`, `oneDNN custom operations are on`, `Could not find cuda
drivers`, `cpu_feature_guard`, and on machines without a GPU `failed call
to cuInit: ... UNKNOWN ERROR (303)` at the first session. Most are written
by C++ code before `TF_CPP_MIN_LOG_LEVEL` takes effect, straight to the
stderr file descriptor, so `quiet_tensorflow` loads TensorFlow and lists its
devices (the step that calls cuInit) while that descriptor goes to a
temporary file, then writes back what is not such a start-up line.

The scripts call it before they import TensorFlow, when run as programs;
`agents.scripts.train` and `agents.scripts.sweep` also when imported, since
their `train` and `sweep` are the Python API; and the benchmarks. A user
who sets `TF_CPP_MIN_LOG_LEVEL` keeps every line TensorFlow prints at that
level. The level this module sets is marked as its own, so that processes
started from here (the benchmark's spawned seeds, a sweep's Ray workers),
which inherit it, still hold the lines back. This module does not import
TensorFlow itself unless asked to.
"""

import contextlib
import importlib
import os
import re
import sys
import tempfile

# Start-up lines of TensorFlow and absl. Informational and warning lines in
# absl's format ('I0000 00:00:1795439404.279804   20947 port.cc:153] ...'),
# the continuation of cpu_feature_guard's, absl's note before its logging
# is initialized, and the errors of a machine without CUDA.
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
    """Load TensorFlow without its start-up lines, unless the user asked.

    Does nothing when the user set `TF_CPP_MIN_LOG_LEVEL`, or TensorFlow
    is loaded already. Otherwise sets the level (see `set_log_level`), then
    imports TensorFlow and lists its devices with the stderr descriptor
    redirected, and writes the lines that are not start-up noise back to
    stderr.

    Args:
        level: Value for `TF_CPP_MIN_LOG_LEVEL`.
    """
    if users_log_level() is not None or 'tensorflow' in sys.modules:
        return
    set_log_level(level)
    with filter_stderr():
        tensorflow = importlib.import_module('tensorflow')
        # Creating the devices is when a machine without a GPU reports its
        # failed cuInit; later sessions reuse them.
        tensorflow.config.list_physical_devices()


def set_log_level(level='2'):
    """Set `TF_CPP_MIN_LOG_LEVEL` as this module's own, unless it is set.

    Args:
        level: Value for `TF_CPP_MIN_LOG_LEVEL`; 2 keeps TensorFlow's
            warnings out and its errors in.
    """
    if _LEVEL not in os.environ:
        os.environ[_LEVEL] = os.environ[_OWN_LEVEL] = str(level)


def users_log_level():
    """`TF_CPP_MIN_LOG_LEVEL` where the user set it, else None."""
    level = os.environ.get(_LEVEL)
    if level is not None and level == os.environ.get(_OWN_LEVEL):
        return None
    return level


def is_noise(line):
    """Whether a line of stderr is one of TensorFlow's start-up lines."""
    return bool(_NOISE.match(line))


@contextlib.contextmanager
def filter_stderr():
    """Collect what is written to file descriptor 2, then drop the noise.

    Everything written meanwhile, by Python or by C++ code, goes to a
    temporary file; on exit, also after an exception, its lines that
    `is_noise` rejects are written to stderr.

    Yields:
        Nothing.
    """
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
