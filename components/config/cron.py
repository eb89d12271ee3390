"""Cron schedules as a Kubernetes CronJob accepts them (robfig/cron's standard parser), checked field by field.

A pattern match alone let `99 99 99 99 99` through, which the API server refuses at apply time.
"""
from __future__ import annotations

import re

DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_FIELDS = (("minute", 0, 59, ()), ("hour", 0, 23, ()), ("day of month", 1, 31, ()),
           ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
           ("day of week", 0, 7, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")))
_RANGE = re.compile(r"(?P<start>\*|\?|[0-9A-Za-z]+)(-(?P<end>[0-9A-Za-z]+))?(/(?P<step>[0-9]+))?")


def cron_problem(schedule: str) -> str | None:
    """Why `schedule` is not a valid CronJob schedule, or None."""
    if schedule.startswith("@"):
        return None if schedule in DESCRIPTORS else f"descriptors are {', '.join(DESCRIPTORS)}"
    if schedule.startswith(("TZ=", "CRON_TZ=")):
        return "a time zone goes in the CronJob's timeZone field, not the schedule"
    fields = schedule.split()
    if len(fields) != 5:
        return f"needs 5 fields (minute hour day-of-month month day-of-week); got {len(fields)}"
    for text, (what, low, high, names) in zip(fields, _FIELDS):
        for part in text.split(","):
            problem = _part_problem(part, low, high, names)
            if problem:
                return f"{what} field {text!r}: {problem}"
    return None


def _part_problem(part: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    match = _RANGE.fullmatch(part)
    if not match:
        return f"{part!r} is not N, N-M, */S or N-M/S"
    values = []
    for key in ("start", "end"):
        text = match.group(key)
        if text is None or text in ("*", "?"):
            continue
        if text.upper() in names:
            values.append(names.index(text.upper()) + low)
        elif text.isdigit() and text.isascii() and len(text) <= 2:
            values.append(int(text))
        else:
            return f"{text!r} is not a number{' or name' if names else ''}"
    if any(not low <= v <= high for v in values):
        return f"values must be {low}-{high}"
    if len(values) == 2 and values[0] > values[1]:
        return f"range {part!r} runs backwards"
    step = match.group("step")
    if step is not None and not 0 < int(step[:3]) <= high:
        return f"step must be 1-{high}"
    return None
