"""ANSWER(value), and exit() and quit().

ANSWER records the JSON form of value (containers, numpy and pandas
values and dates made plain; repr as the last resort) as the session's
answer and ends the cell by raising Answer, which the shells pass up and
main does not count as an error. exit() and quit() end the kernel process
(the client sees it die and may restart it).

ANSWER also records whether its argument was a literal typed in the cell
(ANSWER(42), ANSWER(["a", "b"])): no name, call or operator computed it.
It finds the call that ran in the cell's own source (linecache holds
every cell's code under its compiled file name) with Python's parser, at
the exact position of the running instruction where the interpreter gives
one (3.11 and later), else on its line; a call it cannot place, or a cell
it cannot read, is not literal.
"""

import ast
import collections
import linecache
import sys
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
        self.literal = False


recorded = _Recorded()  # the answer of the cell running now; main resets it

# cell_file says whether a compiled file name is a cell's; cells sets it
# (it is made after this module).
cell_file = lambda filename: False


def _literal(node):
    """Whether node is a literal: a constant, a signed number, or a list,
    tuple, set or dict of literals (an f-string with no field is one)."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = getattr(node.operand, "value", None)
        return isinstance(node.operand, ast.Constant) and isinstance(v, (int, float, complex)) and not isinstance(v, bool)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(_literal(v) for v in node.values)
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(v, ast.Constant) for v in node.values)
    return False


def _typed(frame):
    """Whether the ANSWER call running in frame, a cell's, passes a literal."""
    try:
        code = frame.f_code
        if not cell_file(code.co_filename):
            return False
        tree = ast.parse("".join(linecache.getlines(code.co_filename)))
    except Exception:
        return False
    calls = [n for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "ANSWER"]
    here = None
    if hasattr(code, "co_positions"):  # 3.11: the running instruction's span
        try:
            pos = list(code.co_positions())[frame.f_lasti // 2]
            here = [c for c in calls if (c.lineno, c.end_lineno, c.col_offset, c.end_col_offset) == pos]
        except Exception:
            here = None
    if not here:
        line = frame.f_lineno
        here = [c for c in calls if c.lineno <= line <= (c.end_lineno or c.lineno)]
    if not here:
        return False
    for c in here:
        args = list(c.args) + [k.value for k in c.keywords]
        if len(args) != 1 or isinstance(args[0], ast.Starred) or not _literal(args[0]):
            return False
    return True


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
    try:
        recorded.literal = _typed(sys._getframe(1))
    except Exception:
        recorded.literal = False
    raise Answer()


def _exit(*args):
    """exit() / quit(): end the kernel process."""
    capture.flush_streams()
    os._exit(0)


class Exiter:
    def __repr__(self):
        return "Use exit() or quit() to end this kernel."

    __call__ = staticmethod(_exit)
