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
level. This module does not import TensorFlow itself unless asked to.
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


def quiet_tensorflow(level='2'):
    """Load TensorFlow without its start-up lines, unless the user asked.

    Does nothing when `TF_CPP_MIN_LOG_LEVEL` is set, or TensorFlow is
    loaded already. Otherwise sets `TF_CPP_MIN_LOG_LEVEL` to `level` (2
    keeps warnings out and errors in), then imports TensorFlow and lists
    its devices with the stderr descriptor redirected, and writes the lines
    that are not start-up noise back to stderr.

    Args:
        level: Value for `TF_CPP_MIN_LOG_LEVEL`.
    """
    if 'TF_CPP_MIN_LOG_LEVEL' in os.environ or 'tensorflow' in sys.modules:
        return
    os.environ['TF_CPP_MIN_LOG_LEVEL'] = str(level)
    with filter_stderr():
        tensorflow = importlib.import_module('tensorflow')
        # Creating the devices is when a machine without a GPU reports its
        # failed cuInit; later sessions reuse them.
        tensorflow.config.list_physical_devices()


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
