"""Environment wrappers, each one concept, on the gymnasium step contract.

Every wrapper is a `gymnasium.Wrapper`: `step(action)` returns `(observ,
reward, terminated, truncated, info)` and `reset(*, seed=None, options=None)`
returns `(observ, info)`. As in the 2017 framework, public attributes the
wrapper does not define are read from the wrapped environment, so that code
around a stack of wrappers (or an `ExternalProcess` holding one) reaches the
environment's own attributes.

The wrappers live in two modules by theme, `episode_wrappers` (episode flow)
and `space_wrappers` (spaces and values); import them from here. This module
must not import TensorFlow: worker processes import it.
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
