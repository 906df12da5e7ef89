"""Fast log axes: tick labels as plain text (10⁻³), since matplotlib's default labels go through
mathtext, whose parsing alone costs tens of milliseconds per picture; and no minor ticks."""

from __future__ import annotations

import math
from typing import Any

from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float, _position: Any = None) -> str:
    """'10⁻³' for 0.001; exact powers of ten only (other ticks stay unlabelled)."""
    if value <= 0:
        return ""
    exponent = round(math.log10(value))
    if not math.isclose(value, 10.0**exponent, rel_tol=1e-6):
        return ""
    return "1" if exponent == 0 else "10" + str(exponent).translate(SUPERSCRIPTS)


def plain_log_labels(*axes: Any) -> None:
    """Label powers of ten on each log ``axis`` (ax.xaxis, ax.yaxis) in plain text, and drop
    the minor ticks (dozens of tick artists per axis, a third of the drawing time)."""
    for axis in axes:
        axis.set_major_formatter(FuncFormatter(power_of_ten))
        axis.set_minor_locator(NullLocator())


def fixed_ticks(axis: Any, ticks: Any, labels: list[str]) -> None:
    """Ticks at ``ticks`` on ``axis``, labelled with the plain-text ``labels``, no minor ticks."""
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_ticklabels(labels)
    axis.set_minor_locator(NullLocator())
