import math

import pytest

from tuiloss.core.analysis.display import format_duration, format_percent, format_ratio, format_step, format_value


@pytest.mark.parametrize(
    "step, text",
    [
        (25000, "25.0K"),
        (1_200_000, "1.2M"),
        (850, "850"),
        (0, "0"),
        (7455, "7.5K"),
        (999_999, "1.0M"),
        (2.5, "2.5"),
        (0.05, "0.05"),
        (3.1e9, "3.1B"),
        (-500, "-500"),
    ],
)
def test_format_step(step, text):
    assert format_step(step) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (0.2, "0.200"),
        (1.4, "1.40"),
        (6.54, "6.54"),
        (230.7, "231"),
        (0.000194, "0.000194"),
        (99.96, "100"),
        (0.99999, "1.00"),
        (-0.5, "-0.500"),
        (0, "0"),
        (12345.0, "1.23e+04"),
        (math.nan, "NaN"),
        (math.inf, "Inf"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_ratio_percent_duration():
    assert format_ratio(7.2) == "7x"
    assert format_ratio(1.53) == "1.5x"
    assert format_percent(0.095) == "+9.5%"
    assert format_percent(-0.25) == "-25%"
    assert format_duration(700) == "12 min"
    assert format_duration(5) == "5.0 s"
