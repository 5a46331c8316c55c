"""The inline SVG chart geometry: scales, gaps, thinning, status bands, labels."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from webapp.dashboard.charts import (
    PAD_TOP,
    PAD_X,
    PLOT_HEIGHT,
    WIDTH,
    Band,
    Series,
    format_bytes,
    format_count,
    format_seconds,
    line_chart,
    nice_scale,
    status_bands,
    thin,
)

START = datetime(2025, 3, 1, tzinfo=UTC)


def at(hours: float) -> datetime:
    return START + timedelta(hours=hours)


@pytest.mark.parametrize(
    "highest,step,top", [(0, 1, 4), (7, 2, 8), (50, 20, 60), (100, 25, 100), (101, 50, 150), (0.3, 0.1, 0.30000000000000004), (1234567, 500000, 1500000)]
)
def test_nice_scale_picks_round_steps_from_zero(highest: float, step: float, top: float) -> None:
    assert nice_scale(highest, 4) == pytest.approx((step, top))


def test_points_map_onto_the_window_and_the_y_axis_starts_at_zero() -> None:
    chart = line_chart("t", [Series("in", [(at(0), 0.0), (at(12), 50.0), (at(24), 100.0)])], at(0), at(24), format_count)

    # The point at the window's end is outside [start, end) and left out; the plot keeps PAD_X
    # free at both ends. 50 on a 0..60 axis (steps of 20) is five sixths of the way up.
    bottom = chart.y_ticks[0].position
    assert chart.series[0].path == f"M{PAD_X:.1f},{bottom:.1f} L{WIDTH / 2:.1f},{bottom - (bottom - PAD_TOP) * 5 / 6:.1f}"
    assert [tick.label for tick in chart.y_ticks] == ["0", "20", "40", "60"]
    assert chart.y_ticks[-1].position == PAD_TOP and bottom < PLOT_HEIGHT
    assert [(tick.label, tick.anchor) for tick in chart.x_ticks] == [
        ("00:00", "start"),
        ("06:00", "middle"),
        ("12:00", "middle"),
        ("18:00", "middle"),
        ("00:00", "end"),
    ]
    # Time labels are placed in percent of the plot's width (their text is not stretched).
    assert chart.x_ticks[0].position == round(100 * PAD_X / WIDTH, 2) and chart.x_ticks[2].position == 50.0
    assert chart.series[0].latest == "50" and not chart.empty


def test_a_lone_point_is_a_dot_away_from_the_edges() -> None:
    chart = line_chart("t", [Series("lag", [(at(24) - timedelta(seconds=1), 7.0)])], at(0), at(24), format_count)

    [(x, _)] = chart.series[0].dots
    assert x <= WIDTH - PAD_X and WIDTH - x >= PAD_X - 0.1


def test_each_point_in_time_has_a_tooltip_with_every_series_exact_value() -> None:
    chart = line_chart("t", [Series("in", [(at(1), 1536.0), (at(2), 2048.0)]), Series("out", [(at(2), 12.5)])], at(0), at(4), format_bytes, binary=True)

    first, second = chart.hover
    assert first.title == "2025-03-01 01:00:00 UTC\nin: 1.5 KB (1,536)\nout: —"
    assert second.title == "2025-03-01 02:00:00 UTC\nin: 2.0 KB (2,048)\nout: 12 B (12.5)"
    # The columns tile the plot: the first from its left end, the last to its right end.
    assert first.x == 0 and first.x + first.width == pytest.approx(second.x) and second.x + second.width == pytest.approx(WIDTH)


def test_the_template_draws_labels_outside_the_stretched_plot() -> None:
    from django.template.loader import render_to_string

    chart = line_chart("Bytes", [Series("in", [(at(1), 5.0), (at(2), 6.0)])], at(0), at(4), format_count)
    html = render_to_string("dashboard/charts/line.html", {"chart": chart})
    # The y labels' SVG has no viewBox: its units are pixels, so 12px text stays 12px.
    assert '<svg class="chart-axis chart-y" width="64" height="160" aria-hidden="true">' in html
    assert 'preserveAspectRatio="none"' in html and 'vector-effect="non-scaling-stroke"' in html
    assert '<text x="50.0%" y="13" text-anchor="middle">02:00</text>' in html
    assert "<title>2025-03-01 02:00:00 UTC\nin: 6 (6)</title>" in html
    empty = render_to_string("dashboard/charts/line.html", {"chart": line_chart("Lag", [], at(0), at(1), format_count, empty_message="No lag yet.")})
    assert "No lag yet." in empty and "<svg" not in empty


def test_a_missing_value_breaks_the_line_and_lone_points_become_dots() -> None:
    chart = line_chart("t", [Series("s", [(at(0), 1.0), (at(1), 2.0), (at(2), None), (at(3), 4.0), (at(4), None)])], at(0), at(6), format_count)

    drawn = chart.series[0]
    assert drawn.path.count("M") == 1 and drawn.path.count("L") == 1
    assert len(drawn.dots) == 1
    assert drawn.latest == "4"


def test_a_chart_without_points_in_the_window_is_empty() -> None:
    chart = line_chart("t", [Series("s", [(at(-5), 3.0)]), Series("u", [])], at(0), at(1), format_bytes)

    assert chart.empty and chart.series[1].latest == "—"
    with pytest.raises(ValueError, match="start before it ends"):
        line_chart("t", [], at(1), at(1), format_bytes)


def test_thin_keeps_the_peak_of_each_slice() -> None:
    points = [(at(i), float(i % 10)) for i in range(100)]

    thinned = thin(points, limit=10)

    assert len(thinned) == 10 and all(value == 9.0 for _, value in thinned)
    assert thinned[1][0] == at(10)
    assert thin([(at(0), None), (at(1), None)], limit=1) == [(at(0), None)]


def test_status_bands_merge_equal_statuses_and_leave_gaps_blank() -> None:
    points = [(at(0), "OK"), (at(1), "OK"), (at(2), "ERROR"), (at(10), "OK")]

    bands = status_bands(points, end=at(11), longest=timedelta(hours=2))

    assert [(band.start, band.end, band.css_class) for band in bands] == [(at(0), at(2), "OK"), (at(2), at(4), "ERROR"), (at(10), at(11), "OK")]
    chart = line_chart("t", [Series("s", [(at(0), 1.0)])], at(1), at(11), format_count, bands=bands)
    # The first band is cut at the window's start.
    assert chart.bands[0].x == round(100 * PAD_X / WIDTH, 2) and chart.bands[0].css_class == "OK"
    assert [band.css_class for band in chart.bands] == ["OK", "ERROR", "OK"]
    assert chart.bands[0].title.startswith("OK from 2025-03-01 00:00")


def test_bands_outside_the_window_are_not_drawn() -> None:
    chart = line_chart("t", [], at(0), at(1), format_count, bands=[Band(at(-3), at(-2), "OK", "")])

    assert chart.bands == []


def test_time_labels_fall_on_round_times() -> None:
    month = line_chart("t", [], START, START + timedelta(days=30), format_count)
    odd_hours = line_chart("t", [], START + timedelta(minutes=7), START + timedelta(hours=1, minutes=7), format_count)

    # Weeks since the epoch start on Thursdays.
    assert [tick.label for tick in month.x_ticks] == ["Mar 06", "Mar 13", "Mar 20", "Mar 27"]
    assert [tick.label for tick in odd_hours.x_ticks] == ["00:15", "00:30", "00:45", "01:00"]


def test_byte_axes_step_in_powers_of_1024() -> None:
    chart = line_chart("t", [Series("s", [(START, 5.0 * 1024**2)])], START, at(1), format_bytes, binary=True)

    assert nice_scale(5 * 1024**2, 4, binary=True) == (2 * 1024**2, 6 * 1024**2)
    assert [tick.label for tick in chart.y_ticks] == ["0 B", "2.0 MB", "4.0 MB", "6.0 MB"]


@pytest.mark.parametrize(
    "function,value,text",
    [
        (format_bytes, 512, "512 B"),
        (format_bytes, 1536, "1.5 KB"),
        (format_bytes, 5 * 1024**3, "5.0 GB"),
        (format_count, 950, "950"),
        (format_count, 12500, "12.5k"),
        (format_count, 2.5, "2.5"),
        (format_count, 3_200_000, "3.2M"),
        (format_seconds, 45, "45 s"),
        (format_seconds, 720, "12 min"),
        (format_seconds, 5400, "1.5 h"),
        (format_seconds, 172800, "2.0 d"),
    ],
)
def test_formatters(function, value: float, text: str) -> None:  # type: ignore[no-untyped-def]
    assert function(value) == text
