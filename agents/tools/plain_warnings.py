"""Python warnings without the colour codes of gymnasium's, which show as
`[33m` in log files. No TensorFlow: worker processes import this module.
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
