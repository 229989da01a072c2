"""An autoscaler's settings as the Job gives them (``spec.autoscaler``), and their checks.

Every bad setting is refused with one line saying what is wrong: a region's ``min`` above its
``max``, a bound over the width limit (`MAX_WIDTH`), a region the job does not have, a band that
does not hold the target utilisation (``low <= target <= high``, all in (0, 1]).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from streams_k8s.api.spec_values import MAX_WIDTH

Mode = Literal["Recommend", "Active"]


@dataclass(frozen=True, slots=True)
class Bounds:
    min: int = 1
    max: int = MAX_WIDTH


@dataclass(frozen=True, slots=True)
class AutoscalerSettings:
    mode: Mode = "Recommend"
    target_utilisation: float = 0.8
    low: float = 0.6
    high: float = 0.9
    stabilisation: float = 60.0  # seconds after a change with no decision
    scale_down_delay: float = 300.0  # seconds under `low` before a region shrinks
    delivery_tolerance: float = 0.1
    interval: float = 30.0  # seconds per window
    regions: Mapping[str, Bounds] = field(default_factory=dict)  # alias -> bounds

    def bounds(self, region: str) -> Bounds:
        return self.regions.get(region, Bounds())


def problems(settings: AutoscalerSettings, regions: Collection[str]) -> list[str]:
    """What is wrong with `settings` for a job with these parallel regions (aliases)."""
    found = []
    if not 0 < settings.low <= settings.target_utilisation <= settings.high <= 1:
        found.append(
            f"the band must hold the target: 0 < low ({settings.low}) <= targetUtilization "
            f"({settings.target_utilisation}) <= high ({settings.high}) <= 1"
        )
    for region, bounds in sorted(settings.regions.items()):
        if region not in regions:
            known = ", ".join(sorted(regions)) or "none"
            found.append(f"region {region!r} is not a parallel region of the job (it has: {known})")
        if bounds.min > bounds.max:
            found.append(f"region {region!r}: min {bounds.min} is over max {bounds.max}")
        if bounds.max > MAX_WIDTH or bounds.min < 1:
            found.append(
                f"region {region!r}: bounds must be within 1..{MAX_WIDTH}, not {bounds.min}..{bounds.max}"
            )
    for name, value in (
        ("stabilizationSeconds", settings.stabilisation),
        ("scaleDownDelaySeconds", settings.scale_down_delay),
    ):
        if value < 0:
            found.append(f"{name} must be >= 0, not {value}")
    if settings.interval <= 0:
        found.append(f"intervalSeconds must be > 0, not {settings.interval}")
    return found
