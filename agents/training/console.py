"""The console of the scripts: the framework's progress lines, quiet logs."""

import importlib.util
import logging
import os
import sys
import threading

import tensorflow.compat.v1 as tf

from agents.tools import plain_warnings
from agents.training import quiet_start


def set_up_logging(level=logging.INFO):
    """Print the framework's progress lines, not TensorFlow's own logs."""
    quiet_start.set_log_level('2')
    logger = logging.getLogger('agents')
    logger.setLevel(level)
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter(
            '%(asctime)s %(levelname)s %(message)s', '%H:%M:%S'))
        logger.addHandler(handler)
        logger.propagate = False
    tf.logging.set_verbosity(tf.logging.INFO)
    plain_warnings.install()
    excepthook = threading.excepthook
    if not getattr(excepthook, 'quiet_event_writers', False):

        def quiet_event_writers(args):
            # Without the errors of TensorFlow's event writer threads.
            if type(args.thread).__name__ != '_EventLoggerThread':
                excepthook(args)

        quiet_event_writers.quiet_event_writers = True
        threading.excepthook = quiet_event_writers
    tf_logger = logging.getLogger('tensorflow')
    if not any(isinstance(item, _TensorFlowOwnLines)
               for item in tf_logger.filters):
        tf_logger.addFilter(_TensorFlowOwnLines())


class _TensorFlowOwnLines(logging.Filter):
    """Leaves out TensorFlow's own logs below ERROR and event writer errors."""

    _PACKAGE = os.path.dirname(
        importlib.util.find_spec('tensorflow').origin) + os.sep

    def filter(self, record):
        if str(record.msg).startswith('EventFileWriter writer thread error'):
            return False
        return record.levelno >= logging.ERROR or not str(
            record.pathname).startswith(self._PACKAGE)


class _StderrHandler(logging.StreamHandler):
    """Writes to the `sys.stderr` of the moment (tests replace it)."""

    stream = property(
        lambda unused_self: sys.stderr, lambda unused_self, unused_value: None)
