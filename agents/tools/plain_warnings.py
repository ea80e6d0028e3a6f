"""Python warnings without terminal colour codes.

Gymnasium colours the text of its warnings (`gymnasium.logger.warn` wraps
it in ANSI escape sequences), which shows as raw codes such as `[33m` in
log files, CI logs and terminals that do not read them, among the plain
lines of the framework. `install` strips them from every warning this
process prints.

This module must not import TensorFlow: worker processes import it.
"""

import re
import warnings

# ANSI select graphic rendition sequences: colours and bold.
_COLOUR = re.compile(r'\x1b\[[0-9;]*m')


def install():
    """Print this process's warnings without colour codes from now on."""
    if getattr(warnings.formatwarning, 'plain', False):
        return
    warnings.formatwarning = _plain(warnings.formatwarning)


def _plain(formatwarning):
    """A `warnings.formatwarning` that strips the colour codes of another."""

    def plain_formatwarning(*args, **kwargs):
        return _COLOUR.sub('', formatwarning(*args, **kwargs))

    plain_formatwarning.plain = True
    return plain_formatwarning
