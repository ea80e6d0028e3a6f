"""The console of the scripts: the framework's progress lines, quiet logs."""

import logging
import os
import threading

import tensorflow.compat.v1 as tf


def set_up_logging(level=logging.INFO):
    """Print the framework's progress lines and quiet TensorFlow's C++ logs.

    Args:
      level: Logging level of the 'agents' logger.
    """
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    logger = logging.getLogger('agents')
    logger.setLevel(level)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        logger.addHandler(handler)
        logger.propagate = False
    tf.logging.set_verbosity(tf.logging.ERROR)
    if not getattr(threading.excepthook, 'quiet_event_writers', False):
        threading.excepthook = _quiet_event_writers(threading.excepthook)
    tf_logger = logging.getLogger('tensorflow')
    if not any(isinstance(item, _EventWriterErrors)
               for item in tf_logger.filters):
        tf_logger.addFilter(_EventWriterErrors())


class _EventWriterErrors(logging.Filter):
    """Leaves out TensorFlow's log of a failed event writer thread.

    The writer raises the error again where the loop writes next, which
    reports it in one line.
    """

    def filter(self, record):
        return not str(record.msg).startswith(
            'EventFileWriter writer thread error')


def _quiet_event_writers(excepthook):
    """A `threading.excepthook` that leaves out TensorFlow's event writers.

    The thread of a summary writer that fails (on a full disk, say) prints
    its traceback as it ends, and the writer raises the error again in the
    thread that writes next, where the script reports it in one line.
    """

    def hook(args):
        if type(args.thread).__name__ != '_EventLoggerThread':
            excepthook(args)

    hook.quiet_event_writers = True
    return hook
