"""The enums, limits and defaults of our kinds' specs that the plan layer states too.

Plain Python, no pydantic: the models use them in their fields and the plan (`streams_k8s.app`)
in the records it makes, so `streams-k8s plan` of a bundle loads no model. One definition each.
"""

from __future__ import annotations

from enum import StrEnum
from types import MappingProxyType
from typing import Final

# The most channels one parallel region may have (its width, times the widths of the regions it
# is nested in). Every channel copies the region's operators and connections into the plan: at
# 1,000 channels a one-operator region adds about 16 MB to the operator's plan of the job, and
# fused into a few PEs its AADL nears the 1 MiB a ConfigMap may hold. Wider is refused when written.
MAX_WIDTH: Final = 1000

# A consistent region's settings when its annotation leaves them out (seconds, attempts).
DRAIN_TIMEOUT: Final = 180.0
RESET_TIMEOUT: Final = 180.0
MAX_CONSECUTIVE_RESET_ATTEMPTS: Final = 5

# A PE pod's resource requests when the Job's spec.processingElement.resources is left out.
DEFAULT_PE_REQUESTS: Final = MappingProxyType({"cpu": "100m", "memory": "128Mi"})


# No docstrings on the enums: a docstring becomes the CRD schema's description.
class MembershipMode(StrEnum):
    SHARED = "shared"
    EXCLUSIVE = "exclusive"


class Trigger(StrEnum):
    PERIODIC = "periodic"
    OPERATOR_DRIVEN = "operatorDriven"


class ExportType(StrEnum):
    BY_NAME = "ByName"
    BY_PROPERTIES = "ByProperties"


class FusionType(StrEnum):
    NO_CHANNEL_INFLUENCE = "noChannelInfluence"
    CHANNEL_ISOLATION = "channelIsolation"
    CHANNEL_EXLOCATION = "channelExlocation"


class FusionMode(StrEnum):
    AUTOMATIC = "automatic"
    LEGACY = "legacy"
    MANUAL = "manual"


# The fusion of a Job whose spec.fusion chooses no mode.
DEFAULT_FUSION_MODE: Final = FusionMode.AUTOMATIC


class ThreadingMode(StrEnum):
    AUTOMATIC = "automatic"
    DEDICATED = "dedicated"
    MANUAL = "manual"
    DYNAMIC = "dynamic"
