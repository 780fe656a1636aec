"""ANSWER(value), and exit() and quit().

ANSWER records the JSON form of value (containers, numpy and pandas
values and dates made plain; repr as the last resort) as the session's
answer and ends the cell by raising Answer, which the shells pass up and
main does not count as an error. exit() and quit() end the kernel process
(the client sees it die and may restart it).
"""

import collections
import datetime
import decimal
import json
import math
import os

from ctxcode_driver import capture


class Answer(BaseException):
    """Raised by ANSWER to end the cell."""


class _Recorded:
    def __init__(self):
        self.value = None


recorded = _Recorded()  # the answer of the cell running now; main resets it


def _plain(o, depth=0):
    """A JSON-able copy of o: containers, numpy/pandas values, dates; repr last."""
    if depth > 50:
        return repr(o)
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, int):
        return int(o)
    if isinstance(o, float):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, dict):
        return {_key(k): _plain(v, depth + 1) for k, v in o.items()}
    if isinstance(o, (list, tuple, collections.deque)):
        return [_plain(v, depth + 1) for v in o]
    if isinstance(o, (set, frozenset)):
        items = list(o)
        try:
            items.sort()
        except Exception:
            pass
        return [_plain(v, depth + 1) for v in items]
    if isinstance(o, (datetime.datetime, datetime.date, datetime.time)):
        return o.isoformat()
    if isinstance(o, datetime.timedelta):
        return o.total_seconds()
    if isinstance(o, decimal.Decimal):
        return _plain(float(o))
    if isinstance(o, (bytes, bytearray)):
        return bytes(o).decode("utf-8", "replace")
    mod = type(o).__module__ or ""
    if mod.startswith("pandas"):
        name = type(o).__name__
        try:
            if name == "DataFrame":
                return _plain(o.to_dict(orient="records"), depth + 1)
            if name == "Series":
                return _plain(o.to_dict(), depth + 1)
            if name.endswith("Index") or name.endswith("Array"):
                return _plain(list(o), depth + 1)
            if name == "Timestamp":
                return o.isoformat()
            if name in ("NaTType", "NAType"):
                return None
        except Exception:
            pass
    if mod.startswith("numpy"):
        try:
            if hasattr(o, "tolist"):
                return _plain(o.tolist(), depth + 1)
        except Exception:
            pass
    if hasattr(o, "item") and callable(o.item):
        try:
            return _plain(o.item(), depth + 1)
        except Exception:
            pass
    return repr(o)


def _key(k):
    k = _plain(k, 49)
    if k is None or isinstance(k, (str, int, float, bool)):
        return k
    return str(k)


def ANSWER(value):
    """Record value as this session's answer and end the cell."""
    try:
        recorded.value = json.loads(json.dumps(_plain(value), allow_nan=False, ensure_ascii=False))
    except Exception:
        recorded.value = repr(value)
    raise Answer()


def _exit(*args):
    """exit() / quit(): end the kernel process."""
    capture.flush_streams()
    os._exit(0)


class Exiter:
    def __repr__(self):
        return "Use exit() or quit() to end this kernel."

    __call__ = staticmethod(_exit)
