"""Environment wrappers on the gymnasium step contract, defined in
`episode_wrappers` and `space_wrappers`; import them from here. No
TensorFlow: worker processes import it."""

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
