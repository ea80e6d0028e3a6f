"""Environment wrappers, each one concept, on the gymnasium step contract.

Public attributes a wrapper does not define are read from the wrapped
environment (as in 2017). The wrappers live in `episode_wrappers` and
`space_wrappers`; import them from here. This module must not import
TensorFlow: worker processes import it.
"""

from agents.tools.episode_wrappers import ActionRepeat
from agents.tools.episode_wrappers import AutoReset
from agents.tools.episode_wrappers import ForwardingWrapper
from agents.tools.episode_wrappers import LimitDuration
from agents.tools.episode_wrappers import RandomStart
from agents.tools.external_process import ExternalProcess
from agents.tools.external_process import ExternalProcessError
from agents.tools.space_wrappers import CacheSpaces
from agents.tools.space_wrappers import ClipAction
from agents.tools.space_wrappers import ConvertTo32Bit
from agents.tools.space_wrappers import FrameDelta
from agents.tools.space_wrappers import FrameHistory
from agents.tools.space_wrappers import RangeNormalize

__all__ = [
    'ActionRepeat', 'AutoReset', 'CacheSpaces', 'ClipAction',
    'ConvertTo32Bit', 'ExternalProcess', 'ExternalProcessError',
    'ForwardingWrapper', 'FrameDelta', 'FrameHistory', 'LimitDuration',
    'RandomStart', 'RangeNormalize']
