"""A PE's last readings (a bounded window) and the per-second rates they give.

A rate is the counter's increase over the window divided by the time it spans, an increase being
summed reading to reading so a counter that went back (the PE restarted) counts from zero, as
Prometheus's ``rate()`` does. One reading gives no rate: ``None`` (unknown, never 0), as does a
port that only the last reading has (it has no past to compare with).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from streams_k8s.app.flow_samples import InputPort, PeSample, PortKey

DEFAULT_READINGS = 12  # a minute of readings at the runtime's 5 s refresh


@dataclass(frozen=True, slots=True)
class PortRates:
    """An input port's rates (tuples/s) and its queue as last read."""

    processed: float | None
    dropped: float | None
    enqueue_waits: float | None
    queued: float
    queue_size: float


def _increase(values: Iterable[float]) -> float:
    total, last = 0.0, None
    for value in values:
        if last is not None:
            total += value - last if value >= last else value
        last = value
    return total


class PeWindow:
    """At most ``readings`` (time, sample) pairs of one PE, oldest first."""

    def __init__(self, readings: int = DEFAULT_READINGS) -> None:
        if readings < 2:
            raise ValueError(f"a window needs at least 2 readings to give a rate, not {readings}")
        self._readings: deque[tuple[float, PeSample]] = deque(maxlen=readings)

    def add(self, at: float, sample: PeSample) -> None:
        """Keep a reading taken at ``at`` (seconds, monotonic); one not after the last is ignored."""
        if self._readings and at <= self._readings[-1][0]:
            return
        self._readings.append((at, sample))

    def __len__(self) -> int:
        return len(self._readings)

    @property
    def newest(self) -> tuple[float, PeSample] | None:
        """The last reading and when it was taken."""
        return self._readings[-1] if self._readings else None

    @property
    def last(self) -> PeSample | None:
        return self._readings[-1][1] if self._readings else None

    @property
    def span(self) -> float:
        """Seconds between the oldest reading and the newest."""
        return self._readings[-1][0] - self._readings[0][0] if len(self._readings) > 1 else 0.0

    def _rate(self, value: Callable[[PeSample], float | None]) -> float | None:
        span = self.span
        if span <= 0:
            return None
        values = [v for _, s in self._readings if (v := value(s)) is not None]
        if len(values) < 2:
            return None
        return _increase(values) / span

    def pe_rates(self) -> tuple[float | None, float | None]:
        """Tuples/s the PE took in and sent out over its own ports (None: a PE without any)."""
        inputs = self._rate(lambda s: sum(s.pe_inputs.values()) if s.pe_inputs else None)
        outputs = self._rate(lambda s: sum(s.pe_outputs.values()) if s.pe_outputs else None)
        return inputs, outputs

    def output_rate(self, key: PortKey) -> float | None:
        """Tuples/s an output port submitted over the window."""
        return self._rate(lambda s: s.outputs.get(key))

    def input_rates(self, key: PortKey) -> PortRates | None:
        """An input port's rates over the window (None: the last reading lacks the port)."""
        last = self.last
        port = last.inputs.get(key) if last is not None else None
        if port is None:
            return None

        def counter(attribute: str) -> float | None:
            def read(sample: PeSample) -> float | None:
                found: InputPort | None = sample.inputs.get(key)
                return None if found is None else float(getattr(found, attribute))

            return self._rate(read)

        return PortRates(
            processed=counter("processed"),
            dropped=counter("dropped"),
            enqueue_waits=counter("enqueue_waits"),
            queued=port.queued,
            queue_size=port.queue_size,
        )
