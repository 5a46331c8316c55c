"""Line charts over time as inline SVG, computed on the server: no script, no library. Every
chart of the dashboard (usage, lag) is drawn by this module and ``dashboard/charts/line.html``
in one style.

:func:`line_chart` turns series of ``(time, value)`` points into the geometry that the
template draws: one SVG path per series (a ``None`` value breaks the line), round y ticks
from zero (or, for a ``signed`` chart such as a rate, from below zero, with a zero line), evenly spaced time labels, a legend, optional bands along the bottom (e.g. a
consumer group's status over time), and one hover column per point in time whose tooltip
gives every series' exact value then. Everything here is pure: no Django, no database, no
clock; the time window is the caller's.

Labels keep one size whatever the chart's width: the plot is an SVG stretched to the page's
width (``preserveAspectRatio="none"``, lines drawn with non-scaling strokes) at a fixed
height of ``PLOT_HEIGHT`` pixels, while the y labels sit in a fixed-size SVG beside it (its
units are pixels, the same as the plot's vertically) and the time labels in an unscaled SVG
below it, placed in percent of the width. The plot keeps ``PAD_X`` units free at both ends,
so a point at the window's edge (or a lone one) is not glued to it.

Long series are thinned (:func:`thin`, the maximum of each slice, so peaks survive) to at
most ``MAX_POINTS`` per series.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

WIDTH = 640  # the plot's viewBox width (stretched to the page)
PLOT_HEIGHT = 160  # the plot's height, in pixels and in its viewBox units
AXIS_WIDTH = 64  # pixels of the y labels' column
PAD_X = 14  # viewBox units kept free at the plot's left and right ends
PAD_TOP = 8  # pixels above the highest tick
PAD_BOTTOM = 2  # pixels below zero (the line at zero stays visible)
BAND_HEIGHT = 8
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
    """A label: y ticks at ``position`` pixels from the plot's top, x ticks at ``position``
    percent of its width."""

    position: float
    label: str
    anchor: str = "middle"  # SVG text-anchor: labels at the plot's edges stay inside it


@dataclass(frozen=True)
class HoverColumn:
    """The slice of the plot (viewBox x from ``x``, ``width`` wide) whose tooltip is ``title``."""

    x: float
    width: float
    title: str


@dataclass(frozen=True)
class DrawnSeries:
    name: str
    color: str
    path: str  # SVG path data; empty when the series has no point in the window
    dots: list[tuple[float, float]]  # points with no neighbour to join, drawn as dots
    latest: str  # the last value, formatted, for the legend


@dataclass(frozen=True)
class DrawnBand:
    """A band, ``x`` and ``width`` in percent of the plot's width."""

    x: float
    width: float
    css_class: str
    title: str


@dataclass(frozen=True)
class LineChart:
    title: str
    width: int
    plot_height: int
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    series: list[DrawnSeries]
    bands: list[DrawnBand] = field(default_factory=list)
    hover: list[HoverColumn] = field(default_factory=list)
    empty_message: str = "No data in this window."
    zero_y: float | None = None  # pixels from the plot's top of the zero line (signed charts only)
    axis_width: int = AXIS_WIDTH
    band_height: int = BAND_HEIGHT

    @property
    def empty(self) -> bool:
        return not any(drawn.path or drawn.dots for drawn in self.series)

    @property
    def y_label_x(self) -> int:
        return self.axis_width - 6


def line_chart(
    title: str,
    series: Sequence[Series],
    start: datetime,
    end: datetime,
    value_format: Formatter,
    bands: Sequence[Band] = (),
    width: int = WIDTH,
    plot_height: int = PLOT_HEIGHT,
    binary: bool = False,
    empty_message: str = "No data in this window.",
    signed: bool = False,
) -> LineChart:
    """The chart of ``series`` over ``[start, end)`` (``start`` before ``end``); points
    outside the window are left out. The y axis starts at zero, or for a ``signed`` chart at
    the round step at or below its lowest value, with a zero line; ``binary`` makes its steps
    round in powers of 1024 (for bytes). ``empty_message`` is shown when no point is inside."""
    if start >= end:
        raise ValueError(f"the window must start before it ends: {start.isoformat()} >= {end.isoformat()}")
    left, right, top, bottom = PAD_X, width - PAD_X, PAD_TOP, plot_height - PAD_BOTTOM
    span = (end - start).total_seconds()
    inside = [[(when, value) for when, value in thin(one.points) if start <= when < end] for one in series]
    values = [value for points in inside for _, value in points if value is not None]
    highest = max(values, default=0.0)
    if signed:
        step, floor_value, top_value = signed_scale(min(values, default=0.0), highest, Y_TICKS)
    else:
        floor_value = 0.0
        step, top_value = nice_scale(highest, Y_TICKS, binary)

    def x_of(when: datetime) -> float:
        return left + (right - left) * (when - start).total_seconds() / span

    def y_of(value: float) -> float:
        return bottom - (bottom - top) * (value - floor_value) / (top_value - floor_value)

    def percent(x: float) -> float:
        return round(100 * x / width, 2)

    drawn = []
    for index, (one, points) in enumerate(zip(series, inside, strict=True)):
        path, dots = _path([(x_of(when), None if value is None else y_of(value)) for when, value in points])
        latest = next((value_format(value) for _, value in reversed(points) if value is not None), "—")
        drawn.append(DrawnSeries(name=one.name, color=PALETTE[index % len(PALETTE)], path=path, dots=dots, latest=latest))
    y_ticks = [
        Tick(position=round(y_of(floor_value + step * i), 1), label=value_format(floor_value + step * i))
        for i in range(round((top_value - floor_value) / step) + 1)
    ]
    x_ticks = [Tick(position=percent(x_of(when)), label=_time_label(when, end - start)) for when in time_ticks(start, end, X_TICKS)]
    x_ticks = [Tick(tick.position, tick.label, _anchor(tick.position)) for tick in x_ticks]
    drawn_bands = []
    for band in bands:
        band_start, band_end = max(band.start, start), min(band.end, end)
        if band_start < band_end:
            drawn_bands.append(
                DrawnBand(
                    x=percent(x_of(band_start)), width=round(percent(x_of(band_end)) - percent(x_of(band_start)), 2), css_class=band.css_class, title=band.title
                )
            )
    return LineChart(
        title=title,
        width=width,
        plot_height=plot_height,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        series=drawn,
        bands=drawn_bands,
        hover=hover_columns([one.name for one in series], inside, x_of, value_format, 0, width),
        empty_message=empty_message,
        zero_y=round(y_of(0.0), 1) if signed else None,
    )


def hover_columns(
    names: Sequence[str], points: Sequence[Sequence[Point]], x_of: Callable[[datetime], float], value_format: Formatter, left: float, right: float
) -> list[HoverColumn]:
    """One column per point in time of any series, reaching halfway to its neighbours (the
    first from ``left``, the last to ``right``); its tooltip lists each series' exact value
    then ("—" for none)."""
    times = sorted({when for series_points in points for when, _ in series_points})
    values = [dict(series_points) for series_points in points]
    columns = []
    for index, when in enumerate(times):
        x = x_of(when)
        start = left if index == 0 else (x_of(times[index - 1]) + x) / 2
        end = right if index == len(times) - 1 else (x + x_of(times[index + 1])) / 2
        lines = [f"{when:%Y-%m-%d %H:%M:%S} UTC"]
        for name, by_time in zip(names, values, strict=True):
            value = by_time.get(when)
            lines.append(f"{name}: {'—' if value is None else f'{value_format(value)} ({exact(value)})'}")
        columns.append(HoverColumn(x=round(start, 1), width=round(max(end - start, 0.5), 1), title="\n".join(lines)))
    return columns


def exact(value: float) -> str:
    """The value itself, with thousands separators: ``1,536`` or ``2.5``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.6g}" if abs(value) < 1000 else f"{value:,.2f}"


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


def signed_scale(lowest: float, highest: float, ticks: int) -> tuple[float, float, float]:
    """(step, floor, top) of an axis through zero that holds ``lowest`` and ``highest``: a
    round step (:func:`nice_scale` of the span), and the multiples of it at or below the lowest
    value (zero at most) and at or above the highest (zero at least); (1, -1, 1) when every
    value is zero."""
    lowest, highest = min(lowest, 0.0), max(highest, 0.0)
    if lowest == highest:
        return 1.0, -1.0, 1.0
    step, _ = nice_scale(highest - lowest, ticks)
    return step, -step * math.ceil(-lowest / step - 1e-9), step * math.ceil(highest / step - 1e-9)


def thin(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most ``limit`` points: consecutive slices replaced by their value farthest from zero
    (the largest, when none is negative), at the slice's first time (None only when the whole
    slice is None), so that peaks and troughs survive."""
    if len(points) <= limit:
        return list(points)
    size = math.ceil(len(points) / limit)
    thinned: list[Point] = []
    for first in range(0, len(points), size):
        chunk = points[first : first + size]
        values = [value for _, value in chunk if value is not None]
        thinned.append((chunk[0][0], max(values, key=abs) if values else None))
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


def _anchor(percent: float) -> str:
    """Labels near the plot's ends grow inwards, so they are not cut (``percent`` of its width)."""
    if percent < 6:
        return "start"
    if percent > 94:
        return "end"
    return "middle"


def _time_label(when: datetime, span: timedelta) -> str:
    if span <= timedelta(hours=36):
        return when.strftime("%H:%M")
    if span <= timedelta(days=4):
        return when.strftime("%a %H:%M")
    return when.strftime("%b %d")
