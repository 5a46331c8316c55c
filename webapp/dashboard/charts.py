"""Line charts over time as inline SVG, computed on the server: no script, no library.

:func:`line_chart` turns series of ``(time, value)`` points into the geometry that the
template ``dashboard/charts/line.html`` draws: one SVG path per series (a ``None`` value
breaks the line), round y ticks from zero, evenly spaced time labels, a legend, and optional
bands along the bottom (e.g. a consumer group's status over time). Everything here is pure:
no Django, no database, no clock; the time window is the caller's.

Coordinates are in the SVG's own units (``viewBox``), so the chart scales with the page.
Long series are thinned (:func:`thin`, the maximum of each slice, so peaks survive) to at
most ``MAX_POINTS`` per series.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

WIDTH = 640
HEIGHT = 200
MARGIN_LEFT = 64  # room for the y tick labels
MARGIN_RIGHT = 12
MARGIN_TOP = 10
MARGIN_BOTTOM = 34  # room for the x labels and the bands
BAND_HEIGHT = 6
Y_TICKS = 4
X_TICKS = 6
MAX_POINTS = 720
# Steps between time labels, in seconds: the smallest giving at most X_TICKS labels is used.
TIME_STEPS = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 14400, 21600, 43200, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400)
# Distinguishable on white, in this order; the first matches the dashboard's accent.
PALETTE = ("#2457c5", "#d9730d", "#137333", "#8e44ad", "#b42318", "#0f7b8a", "#7a5c00", "#5f6b7a")

Point = tuple[datetime, float | None]
Formatter = Callable[[float], str]


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point]


@dataclass(frozen=True)
class Band:
    """A span of time drawn as a coloured strip under the plot; ``css_class`` picks the colour."""

    start: datetime
    end: datetime
    css_class: str
    title: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str
    anchor: str = "middle"  # SVG text-anchor: labels at the plot's edges stay inside it


@dataclass(frozen=True)
class DrawnSeries:
    name: str
    color: str
    path: str  # SVG path data; empty when the series has no point in the window
    dots: list[tuple[float, float]]  # points with no neighbour to join, drawn as dots
    latest: str  # the last value, formatted, for the legend


@dataclass(frozen=True)
class DrawnBand:
    x: float
    width: float
    css_class: str
    title: str


@dataclass(frozen=True)
class LineChart:
    title: str
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    series: list[DrawnSeries]
    bands: list[DrawnBand] = field(default_factory=list)
    band_y: float = 0.0
    band_height: float = BAND_HEIGHT

    @property
    def empty(self) -> bool:
        return not any(drawn.path or drawn.dots for drawn in self.series)

    @property
    def y_label_x(self) -> float:
        return self.left - 6

    @property
    def x_label_y(self) -> float:
        return self.bottom + 15


def line_chart(
    title: str,
    series: Sequence[Series],
    start: datetime,
    end: datetime,
    value_format: Formatter,
    bands: Sequence[Band] = (),
    width: int = WIDTH,
    height: int = HEIGHT,
    binary: bool = False,
) -> LineChart:
    """The chart of ``series`` over ``[start, end)`` (``start`` before ``end``); points
    outside the window are left out. The y axis starts at zero; ``binary`` makes its steps
    round in powers of 1024 (for bytes)."""
    if start >= end:
        raise ValueError(f"the window must start before it ends: {start.isoformat()} >= {end.isoformat()}")
    left, right, top, bottom = MARGIN_LEFT, width - MARGIN_RIGHT, MARGIN_TOP, height - MARGIN_BOTTOM
    span = (end - start).total_seconds()
    inside = [[(when, value) for when, value in thin(one.points) if start <= when < end] for one in series]
    highest = max((value for points in inside for _, value in points if value is not None), default=0.0)
    step, top_value = nice_scale(highest, Y_TICKS, binary)

    def x_of(when: datetime) -> float:
        return left + (right - left) * (when - start).total_seconds() / span

    def y_of(value: float) -> float:
        return bottom - (bottom - top) * value / top_value

    drawn = []
    for index, (one, points) in enumerate(zip(series, inside, strict=True)):
        path, dots = _path([(x_of(when), None if value is None else y_of(value)) for when, value in points])
        latest = next((value_format(value) for _, value in reversed(points) if value is not None), "—")
        drawn.append(DrawnSeries(name=one.name, color=PALETTE[index % len(PALETTE)], path=path, dots=dots, latest=latest))
    y_ticks = [Tick(position=round(y_of(step * i), 1), label=value_format(step * i)) for i in range(round(top_value / step) + 1)]
    x_ticks = [Tick(position=round(x_of(when), 1), label=_time_label(when, end - start)) for when in time_ticks(start, end, X_TICKS)]
    x_ticks = [Tick(tick.position, tick.label, _anchor(tick.position, left, right)) for tick in x_ticks]
    band_y = bottom + 22
    drawn_bands = []
    for band in bands:
        band_start, band_end = max(band.start, start), min(band.end, end)
        if band_start < band_end:
            drawn_bands.append(
                DrawnBand(x=round(x_of(band_start), 1), width=round(x_of(band_end) - x_of(band_start), 1), css_class=band.css_class, title=band.title)
            )
    return LineChart(
        title=title,
        width=width,
        height=height,
        left=left,
        right=right,
        top=top,
        bottom=bottom,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        series=drawn,
        bands=drawn_bands,
        band_y=band_y,
    )


def status_bands(points: Sequence[tuple[datetime, str]], end: datetime, longest: timedelta) -> list[Band]:
    """Bands from ``(time, status)`` evaluations, oldest first: each status holds until the
    next evaluation, at most ``longest`` (a gap in evaluations stays blank), the last until
    ``end`` or ``longest``; consecutive equal statuses merge into one band."""
    bands: list[Band] = []
    for index, (when, status) in enumerate(points):
        following = points[index + 1][0] if index + 1 < len(points) else end
        until = min(following, when + longest)
        if until <= when:
            continue
        if bands and bands[-1].css_class == status and bands[-1].end == when:
            bands[-1] = Band(start=bands[-1].start, end=until, css_class=status, title=bands[-1].title)
        else:
            bands.append(Band(start=when, end=until, css_class=status, title=f"{status} from {when:%Y-%m-%d %H:%M} UTC"))
    return bands


def nice_scale(highest: float, ticks: int, binary: bool = False) -> tuple[float, float]:
    """(step, top): a round step (1, 2, 2.5 or 5 times a power of ten, in units of the
    largest power of 1024 below ``highest`` when ``binary``) and the smallest multiple of it
    at or above ``highest``; (1, ticks) when nothing is above zero."""
    if highest <= 0:
        return 1.0, float(ticks)
    if binary and highest >= 1024:
        unit = 1024 ** math.floor(math.log(highest, 1024))
        step, top = nice_scale(highest / unit, ticks)
        return step * unit, top * unit
    raw = highest / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(multiple * magnitude for multiple in (1, 2, 2.5, 5, 10) if multiple * magnitude >= raw)
    return step, step * math.ceil(highest / step - 1e-9)


def thin(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most ``limit`` points: consecutive slices replaced by their largest value, at the
    slice's first time (None only when the whole slice is None)."""
    if len(points) <= limit:
        return list(points)
    size = math.ceil(len(points) / limit)
    thinned: list[Point] = []
    for first in range(0, len(points), size):
        chunk = points[first : first + size]
        values = [value for _, value in chunk if value is not None]
        thinned.append((chunk[0][0], max(values) if values else None))
    return thinned


def format_bytes(value: float) -> str:
    """``1.5 MB``-style, with 1024-byte units (as Django's filesizeformat)."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_count(value: float) -> str:
    """``950``, ``12.5k``, ``3.2M``, ``1.1G``."""
    for threshold, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= threshold:
            return f"{value / threshold:.3g}{suffix}"
    return f"{value:.3g}" if value != int(value) else str(int(value))


def format_seconds(value: float) -> str:
    """``45 s``, ``12 min``, ``3.5 h``, ``2.0 d``."""
    if value < 60:
        return f"{value:.0f} s"
    if value < 3600:
        return f"{value / 60:.0f} min"
    if value < 86400:
        return f"{value / 3600:.1f} h"
    return f"{value / 86400:.1f} d"


def _path(points: list[tuple[float, float | None]]) -> tuple[str, list[tuple[float, float]]]:
    commands: list[str] = []
    dots: list[tuple[float, float]] = []
    run: list[tuple[float, float]] = []

    def close_run() -> None:
        if len(run) == 1:
            dots.append(run[0])
        elif run:
            commands.append("M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in run))
        run.clear()

    for x, y in points:
        if y is None:
            close_run()
        else:
            run.append((x, y))
    close_run()
    return " ".join(commands), [(round(x, 1), round(y, 1)) for x, y in dots]


def time_ticks(start: datetime, end: datetime, count: int) -> list[datetime]:
    """At most ``count`` round times in ``[start, end]``: multiples (since the Unix epoch,
    UTC) of the smallest of ``TIME_STEPS`` that gives no more than ``count``."""
    span = (end - start).total_seconds()
    step = next((candidate for candidate in TIME_STEPS if span / candidate < count), TIME_STEPS[-1])
    first = math.ceil(start.timestamp() / step) * step
    ticks = []
    moment = first
    while moment <= end.timestamp() and len(ticks) < count:
        ticks.append(datetime.fromtimestamp(moment, tz=start.tzinfo or UTC))
        moment += step
    return ticks


def _anchor(position: float, left: float, right: float) -> str:
    if position - left < 20:
        return "start"
    if right - position < 20:
        return "end"
    return "middle"


def _time_label(when: datetime, span: timedelta) -> str:
    if span <= timedelta(hours=36):
        return when.strftime("%H:%M")
    if span <= timedelta(days=4):
        return when.strftime("%a %H:%M")
    return when.strftime("%b %d")
