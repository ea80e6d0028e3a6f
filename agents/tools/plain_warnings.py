"""Python warnings without the colour codes of gymnasium's, which show as
`[33m` in log files. No TensorFlow: worker processes import this module."""

import re
import warnings

# ANSI select graphic rendition sequences: colours and bold.
_COLOUR = re.compile(r'\x1b\[[0-9;]*m')


def install():
    """Print this process's warnings without colour codes from now on."""
    formatwarning = warnings.formatwarning
    if getattr(formatwarning, 'plain', False):
        return

    def plain_formatwarning(*args, **kwargs):
        return _COLOUR.sub('', formatwarning(*args, **kwargs))

    plain_formatwarning.plain = True
    warnings.formatwarning = plain_formatwarning
