"""UNIX seconds from the naive UTC datetimes the database stores."""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from palaver.timeutil import to_timestamp


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)))
def test_to_timestamp_is_whole_utc_seconds(value: datetime) -> None:
    assert to_timestamp(value) == calendar.timegm(value.utctimetuple())
    assert to_timestamp(value) == int(value.replace(tzinfo=UTC).timestamp())


def test_an_aware_value_is_read_by_its_wall_time_as_utc() -> None:
    # As stored values are: the offset is not applied (no caller passes one with an offset).
    value = datetime(2026, 11, 27, 1, 2, 3, 999_999, tzinfo=timezone(timedelta(hours=2)))
    assert to_timestamp(value) == calendar.timegm((2026, 11, 27, 1, 2, 3, 0, 0, 0))
