# ctxcode Python kernel driver.
#
# Started as `python3 -u -c <this source>`; speaks the JSON-lines kernel protocol
# (see package kernel) on private duplicates of fds 0 and 1 taken at start-up.
# Then fd 0 reads /dev/null, and fds 1 and 2 point at per-cell capture files, so
# that print(), os.write(1, ...), C extensions and child processes are all
# captured and can never corrupt the protocol.
#
# Uses IPython's InteractiveShell when importable (and not disabled with
# CTXCODE_NO_IPYTHON=1), otherwise a standard-library equivalent. Both paths
# share the value formatting rules, the compact tracebacks, ANSWER, the soft
# timeout and the output caps, so they give the same text for the same cell.
# IPython loads in the background: the driver answers as soon as Python is up
# and runs first the cells IPython would run the same way (see "IPython in
# the background" below).
#
# Ops: exec (a cell), ping, and shell (a /bin/sh command for condition A's bash
# tool, outside the interpreter's namespace; see "the shell op" below).

import ast
import builtins
import collections
import datetime
import decimal
import io
import json
import linecache
import math
import os
import re
import select
import signal
import sys
import tempfile
import threading
import time
import tokenize
import traceback
import types

PROTO_IN_FD = os.dup(0)
PROTO_OUT_FD = os.dup(1)
MAIN_PID = os.getpid()
LOG = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")

try:
    import faulthandler

    faulthandler.enable(file=LOG)
except Exception:
    pass

MAX_WIDTH = 79
MAX_SEQ = 1000
STDIN_MESSAGE = "stdin is not available in this session"


class CellTimeout(BaseException):
    """Raised inside a cell by the soft timeout."""


class _Answer(BaseException):
    """Raised by ANSWER to end the cell."""


# ---------------------------------------------------------------- capture


def _capture_file():
    f = tempfile.TemporaryFile()
    fd = os.dup(f.fileno())
    f.close()
    os.set_inheritable(fd, False)
    flags = __import__("fcntl").fcntl(fd, __import__("fcntl").F_GETFL)
    __import__("fcntl").fcntl(fd, __import__("fcntl").F_SETFL, flags | os.O_APPEND)
    return fd


_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)


class _NoStdin(io.TextIOBase):
    def readable(self):
        return True

    def read(self, *args):
        raise RuntimeError(STDIN_MESSAGE)

    readline = read

    def readlines(self, *args):
        raise RuntimeError(STDIN_MESSAGE)

    def fileno(self):
        raise io.UnsupportedOperation(STDIN_MESSAGE)

    def isatty(self):
        return False


def _no_input(prompt=""):
    raise RuntimeError(STDIN_MESSAGE)


sys.stdin = sys.__stdin__ = _NoStdin()
builtins.input = _no_input


def _text_stream(fd):
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=True,
    )


_streams = {}


def _point_fds():
    """Re-point fds 1 and 2 (and sys.stdout/err) at the capture files."""
    os.dup2(OUT.fd, 1)
    os.dup2(ERR.fd, 2)
    for name, fd in (("stdout", 1), ("stderr", 2)):
        s = _streams.get(fd)
        if s is None or s.closed:
            s = _streams[fd] = _text_stream(fd)
        setattr(sys, name, s)
        setattr(sys, "__%s__" % name, s)


def _point_null():
    """Point fds 1 and 2 at /dev/null (run_exec points them back at the capture files)."""
    _flush_streams()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _flush_streams():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


def _cap_text(data, cap):
    """Keep the head and the tail of data (bytes or str) within cap bytes."""
    if isinstance(data, str):
        b = data.encode("utf-8", "replace")
    else:
        b = data
    if len(b) <= cap:
        return b.decode("utf-8", "replace"), 0
    half = max(cap // 2, 1)
    head = b[:half]
    tail = b[len(b) - half :]
    return _join_capped(head, tail, len(b), b[len(b) - half - 1 : len(b) - half] == b"\n")


def _join_capped(head, tail, size, tail_starts_line):
    """Trim a head and a tail kept from size bytes and join them around the
    dropped-bytes line: the one rule of the Go side (kernel.TrimCut and
    kernel.JoinCut in cut.go). The head ends after its last newline when that
    lies in its second half, else on a whole UTF-8 character; the tail starts
    after its first newline when that lies in its first half, unless it
    already starts a line, else on a whole UTF-8 character."""
    nl = head.rfind(b"\n")
    if nl >= 0 and nl >= len(head) // 2:
        head = head[: nl + 1]
    else:
        head = _trim_rune_end(head)
    if not tail_starts_line:
        nl = tail.find(b"\n")
        if 0 <= nl < len(tail) // 2:
            tail = tail[nl + 1 :]
        else:
            tail = _trim_rune_start(tail)
    dropped = size - len(head) - len(tail)
    if head and not head.endswith(b"\n"):
        head += b"\n"
    text = (
        head.decode("utf-8", "replace")
        + "... [%d bytes dropped] ...\n" % dropped
        + tail.decode("utf-8", "replace")
    )
    return text, dropped


def _trim_rune_end(b):
    """Drop an incomplete UTF-8 sequence at the end of b."""
    for i in range(len(b) - 1, max(len(b) - 4, 0) - 1, -1):
        c = b[i]
        if c & 0xC0 == 0x80:
            continue  # a continuation byte: the sequence starts further back
        need = 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else 4 if 0xF0 <= c <= 0xF4 else 1
        return b[:i] if len(b) - i < need else b
    return b


def _trim_rune_start(b):
    """Drop continuation bytes at the start of b."""
    for i in range(min(len(b), 4)):
        if b[i] & 0xC0 != 0x80:
            return b[i:]
    return b


def _hole_puncher():
    """fallocate(PUNCH_HOLE) through libc, or None where it is not available."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fallocate = libc.fallocate
        fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
    except Exception:
        return None
    mode = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE

    def punch(fd, offset, length):
        return fallocate(fd, mode, offset, length) == 0

    return punch


_punch = [None, False]  # the puncher, and whether it was looked up


def _get_puncher():
    """Load the puncher (ctypes) on first need, not at start-up."""
    if not _punch[1]:
        _punch[0], _punch[1] = _hole_puncher(), True
    return _punch[0]


class _Capture:
    """A capture file behind fd 1 or 2. While a cell runs, a watchdog frees
    the middle of the file once it passes a bound (a hole: offsets and the
    head and tail stay as they are), so a print loop cannot fill the disk."""

    def __init__(self):
        self.fd = _capture_file()
        self.punched = 0  # the hole ends here

    def trim(self, cap, bound):
        keep = max(cap // 2, 1)
        size = os.fstat(self.fd).st_size
        # The byte before the tail stays too: it says whether the tail starts a line.
        start, end = max(self.punched, keep), size - keep - 1
        if end - start < bound:
            return
        punch = _get_puncher()
        if punch is None:
            return
        if punch(self.fd, start, end - start):
            self.punched = end
        else:
            _punch[0] = None  # this file system cannot: keep everything

    def drain(self, cap):
        """What the file holds (head and tail within cap), then empty it."""
        fd = self.fd
        size = os.fstat(fd).st_size
        if size <= cap:
            data = os.pread(fd, size, 0) if size else b""
            text, dropped = data.decode("utf-8", "replace"), 0
        else:
            half = max(cap // 2, 1)
            head = os.pread(fd, half, 0)
            tail = os.pread(fd, half, size - half)
            before = os.pread(fd, 1, size - half - 1)
            text, dropped = _join_capped(head, tail, size, before == b"\n")
        os.ftruncate(fd, 0)
        self.punched = 0
        return text, dropped


OUT = _Capture()
ERR = _Capture()
_cell_running = threading.Event()
_cap_lock = threading.Lock()
_cap_now = [1 << 20]


def _watchdog():
    while True:
        _cell_running.wait()
        time.sleep(0.05)
        with _cap_lock:
            if _cell_running.is_set():
                cap = _cap_now[0]
                for c in (OUT, ERR):
                    c.trim(cap, max(4 * cap, 8 << 20))


threading.Thread(target=_watchdog, name="ctxcode-capture", daemon=True).start()


# ---------------------------------------------------------------- pretty
# A layout printer that gives the same text as IPython's default plain-text
# formatter (IPython.lib.pretty, max_width 79, at most 1000 items a container):
# groups break outermost first when the current line would pass the width.


class _Text:
    __slots__ = ("parts", "width")

    def __init__(self):
        self.parts = []
        self.width = 0

    def emit(self, out, col):
        out.extend(self.parts)
        return col + self.width


class _Breakable:
    __slots__ = ("sep", "width", "indent", "group", "pp")

    def __init__(self, sep, pp):
        self.sep = sep
        self.width = len(sep)
        self.pp = pp
        self.indent = pp.indent
        self.group = pp.groups[-1]
        self.group.breakables.append(self)

    def emit(self, out, col):
        self.group.breakables.popleft()
        if self.group.want_break:
            out.append("\n" + " " * self.indent)
            return self.indent
        if not self.group.breakables:
            self.pp.queue_remove(self.group)
        out.append(self.sep)
        return col + self.width


class _Group:
    __slots__ = ("depth", "breakables", "want_break")

    def __init__(self, depth):
        self.depth = depth
        self.breakables = collections.deque()
        self.want_break = False


class Pretty:
    def __init__(self, width=MAX_WIDTH):
        self.width = width
        self.out = []
        self.col = 0
        self.buffer = collections.deque()
        self.buffer_width = 0
        self.indent = 0
        root = _Group(0)
        self.groups = [root]
        self.queue = []  # lists of groups, indexed by depth
        self.stack = []

    # -- layout primitives

    def queue_add(self, g):
        while len(self.queue) <= g.depth:
            self.queue.append([])
        self.queue[g.depth].append(g)

    def queue_remove(self, g):
        try:
            self.queue[g.depth].remove(g)
        except (IndexError, ValueError):
            pass

    def queue_pop(self):
        for level in self.queue:
            n = len(level)
            for i in range(n - 1, -1, -1):
                g = level[i]
                if g.breakables:
                    # IPython's queue removes the group at the same distance
                    # from the start as g is from the end (not always g): its
                    # line breaks follow from that, so the driver's do too.
                    del level[n - 1 - i]
                    g.want_break = True
                    return g
            for g in level:
                g.want_break = True
            del level[:]
        return None

    def _break_outer(self):
        while self.width < self.col + self.buffer_width:
            g = self.queue_pop()
            if g is None:
                return
            while g.breakables:
                x = self.buffer.popleft()
                self.col = x.emit(self.out, self.col)
                self.buffer_width -= x.width
            while self.buffer and isinstance(self.buffer[0], _Text):
                x = self.buffer.popleft()
                self.col = x.emit(self.out, self.col)
                self.buffer_width -= x.width

    def text(self, s):
        w = len(s)
        if self.buffer:
            last = self.buffer[-1]
            if not isinstance(last, _Text):
                last = _Text()
                self.buffer.append(last)
            last.parts.append(s)
            last.width += w
            self.buffer_width += w
            self._break_outer()
        else:
            self.out.append(s)
            self.col += w

    def breakable(self, sep=" "):
        g = self.groups[-1]
        if g.want_break:
            self.flush()
            self.out.append("\n" + " " * self.indent)
            self.col = self.indent
            self.buffer_width = 0
        else:
            self.buffer.append(_Breakable(sep, self))
            self.buffer_width += len(sep)
            self._break_outer()

    def hard_break(self):
        self.flush()
        self.out.append("\n" + " " * self.indent)
        self.col = self.indent
        self.buffer_width = 0

    def begin(self, indent=0, open=""):
        if open:
            self.text(open)
        g = _Group(self.groups[-1].depth + 1)
        self.groups.append(g)
        self.queue_add(g)
        self.indent += indent

    def end(self, dedent=0, close=""):
        self.indent -= dedent
        g = self.groups.pop()
        if not g.breakables:
            self.queue_remove(g)
        if close:
            self.text(close)

    def flush(self):
        for x in self.buffer:
            self.col = x.emit(self.out, self.col)
        self.buffer.clear()
        self.buffer_width = 0

    def getvalue(self):
        self.flush()
        return "".join(self.out)

    # -- objects

    def items(self, seq):
        for i, x in enumerate(seq):
            if i >= MAX_SEQ:
                self.text(",")
                self.breakable()
                self.text("...")
                return
            yield i, x

    def pretty(self, obj):
        oid = id(obj)
        cycle = oid in self.stack
        self.stack.append(oid)
        self.begin()
        try:
            if obj is None or obj is True or obj is False or obj is NotImplemented or obj is Ellipsis:
                self.text(repr(obj))
                return
            cls = getattr(obj, "__class__", None) or type(obj)
            for c in _mro(cls):
                printer = _PRINTERS.get(c)
                if printer is None:
                    printer = _deferred_printer(c)
                if printer is not None:
                    printer(obj, self, cycle)
                    return
                if "_repr_pretty_" in c.__dict__ and callable(c.__dict__["_repr_pretty_"]):
                    break  # an IPython-only protocol; fall back to repr
                if c is not object and callable(c.__dict__.get("__repr__")):
                    _repr_lines(obj, self, cycle)
                    return
            _default_printer(obj, self, cycle)
        finally:
            self.end()
            self.stack.pop()


def _mro(cls):
    try:
        return cls.__mro__
    except AttributeError:
        return (cls, object)


def _repr_lines(obj, p, cycle):
    lines = repr(obj).splitlines()
    p.begin()
    for i, line in enumerate(lines):
        if i:
            p.hard_break()
        p.text(line)
    p.end()


def _default_printer(obj, p, cycle):
    cls = type(obj)
    if getattr(cls, "__repr__", None) is not object.__repr__:
        _repr_lines(obj, p, cycle)
        return
    p.begin(1, "<")
    p.pretty(cls)
    p.text(" at 0x%x" % id(obj))
    if cycle:
        p.text(" ...")
    p.end(1, ">")


def _seq_printer(start, end):
    def printer(obj, p, cycle):
        if cycle:
            p.text(start + "..." + end)
            return
        step = len(start)
        p.begin(step, start)
        for i, x in p.items(obj):
            if i:
                p.text(",")
                p.breakable()
            p.pretty(x)
        if len(obj) == 1 and isinstance(obj, tuple):
            p.text(",")
        p.end(step, end)

    return printer


def _set_printer(start, end):
    def printer(obj, p, cycle):
        if cycle:
            p.text(start + "..." + end)
            return
        if not obj:
            p.text(type(obj).__name__ + "()")
            return
        step = len(start)
        p.begin(step, start)
        items = obj
        if not (type(obj) is set or type(obj) is frozenset) or len(obj) <= MAX_SEQ:
            try:
                items = sorted(obj)
            except Exception:
                try:
                    items = sorted(obj, key=str)  # mixed types, as IPython
                except Exception:
                    pass
        for i, x in p.items(items):
            if i:
                p.text(",")
                p.breakable()
            p.pretty(x)
        p.end(step, end)

    return printer


def _dict_printer(obj, p, cycle):
    if cycle:
        p.text("{...}")
        return
    p.begin(1, "{")
    for i, k in p.items(obj.keys()):
        if i:
            p.text(",")
            p.breakable()
        p.pretty(k)
        p.text(": ")
        p.pretty(obj[k])
    p.end(1, "}")


def _qualified(obj):
    mod = getattr(obj, "__module__", None)
    try:
        name = obj.__qualname__
        if not isinstance(name, str):
            raise TypeError
    except Exception:
        name = getattr(obj, "__name__", "<unknown type>")
    if mod in (None, "__builtin__", "builtins", "exceptions"):
        return name
    return mod + "." + name


def _type_printer(obj, p, cycle):
    if [m for m in _mro(type(obj)) if "__repr__" in vars(m)][:1] != [type]:
        _repr_lines(obj, p, cycle)
        return
    p.text(_qualified(obj))


def _function_printer(obj, p, cycle):
    name = getattr(obj, "__qualname__", None) or obj.__name__
    mod = obj.__module__
    if mod and mod not in ("__builtin__", "builtins", "exceptions"):
        name = mod + "." + name
    try:
        import inspect

        name += str(inspect.signature(obj))
    except (ValueError, TypeError):
        pass
    p.text("<function %s>" % name)


def _exception_printer(obj, p, cycle):
    name = type(obj).__name__
    mod = type(obj).__module__
    if mod not in ("__builtin__", "builtins", "exceptions"):
        name = mod + "." + name
    step = len(name) + 1
    p.begin(step, name + "(")
    for i, arg in enumerate(getattr(obj, "args", ())):
        if i:
            p.text(",")
            p.breakable()
        p.pretty(arg)
    p.end(step, ")")


def _repr_printer(obj, p, cycle):
    _repr_lines(obj, p, cycle)


_PRINTERS = {
    int: _repr_printer,
    float: _repr_printer,
    str: _repr_printer,
    bytes: _repr_printer,
    complex: _repr_printer,
    range: _repr_printer,
    slice: _repr_printer,
    datetime.datetime: _repr_printer,
    datetime.timedelta: _repr_printer,
    tuple: _seq_printer("(", ")"),
    list: _seq_printer("[", "]"),
    dict: _dict_printer,
    set: _set_printer("{", "}"),
    frozenset: _set_printer("frozenset({", "})"),
    type: _type_printer,
    types.FunctionType: _function_printer,
    types.BuiltinFunctionType: _function_printer,
    BaseException: _exception_printer,
}


def _ordered_dict_printer(obj, p, cycle):
    name = type(obj).__name__
    p.begin(len(name) + 1, name + "(")
    if cycle:
        p.text("...")
    elif len(obj):
        p.pretty(list(obj.items()))
    p.end(len(name) + 1, ")")


def _default_dict_printer(obj, p, cycle):
    name = type(obj).__name__
    p.begin(len(name) + 1, name + "(")
    if cycle:
        p.text("...")
    else:
        p.pretty(obj.default_factory)
        p.text(",")
        p.breakable()
        p.pretty(dict(obj))
    p.end(len(name) + 1, ")")


def _deque_printer(obj, p, cycle):
    name = type(obj).__name__
    p.begin(len(name) + 1, name + "(")
    if cycle:
        p.text("...")
    else:
        p.pretty(list(obj))
    p.end(len(name) + 1, ")")


def _counter_printer(obj, p, cycle):
    name = type(obj).__name__
    p.begin(len(name) + 1, name + "(")
    if cycle:
        p.text("...")
    elif len(obj):
        p.pretty(dict(obj.most_common()))
    p.end(len(name) + 1, ")")


_DEFERRED = {
    ("collections", "OrderedDict"): _ordered_dict_printer,
    ("collections", "defaultdict"): _default_dict_printer,
    ("collections", "deque"): _deque_printer,
    ("collections", "Counter"): _counter_printer,
}


def _deferred_printer(cls):
    return _DEFERRED.get((getattr(cls, "__module__", None), getattr(cls, "__name__", None)))


def pretty(obj):
    p = Pretty()
    p.pretty(obj)
    return p.getvalue()


# ---------------------------------------------------------------- ANSWER


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


STATE = {"answer": None, "early": False}
TRACE_EARLY = os.environ.get("CTXCODE_TRACE_EARLY") == "1"


def ANSWER(value):
    """Record value as this session's answer and end the cell."""
    try:
        STATE["answer"] = json.loads(json.dumps(_plain(value), allow_nan=False, ensure_ascii=False))
    except Exception:
        STATE["answer"] = repr(value)
    raise _Answer()


def _exit(*args):
    """exit() / quit(): end the kernel process."""
    _flush_streams()
    os._exit(0)


class _Exiter:
    def __repr__(self):
        return "Use exit() or quit() to end this kernel."

    __call__ = staticmethod(_exit)


# ---------------------------------------------------------------- errors


_IPY_CELL = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")


def _cell_name(filename):
    n = CELL_FILES.get(filename)
    if n is None:
        m = _IPY_CELL.match(filename or "")
        if m:
            n = int(m.group(1))
    return n


CELL_FILES = {}  # compiled filename -> execution count


def compact_traceback(etype, value, tb):
    """The failing line(s) of the session's cells and the exception line."""
    lines = []
    if isinstance(value, SyntaxError) and _cell_name(value.filename or "") is not None:
        lines.append("Cell In[%d], line %s" % (_cell_name(value.filename), value.lineno))
        if value.text:
            text = value.text.rstrip("\n")
            stripped = text.lstrip()
            lines.append("    " + stripped)
            if value.offset:
                caret = max(value.offset - (len(text) - len(stripped)), 1)
                lines.append("    " + " " * (caret - 1) + "^")
    else:
        frames = []
        for fs in traceback.extract_tb(tb):
            n = _cell_name(fs.filename)
            if n is not None:
                frames.append((n, fs))
        for n, fs in frames[-3:]:
            lines.append("Cell In[%d], line %s" % (n, fs.lineno))
            src = fs.line or linecache.getline(fs.filename, fs.lineno).strip()
            if src:
                lines.append("    " + src)
    msg = "".join(traceback.format_exception_only(etype, value)).strip().splitlines()
    if isinstance(value, SyntaxError) and msg:
        msg = msg[-1:]
    lines.extend(msg)
    return "\n".join(lines)


def error_info(etype, value, tb):
    name = etype.__name__
    try:
        text = str(value)
    except Exception:
        text = "<unprintable %s>" % name
    if isinstance(value, SyntaxError):
        text = value.msg or text
    return {"name": name, "value": text, "traceback": compact_traceback(etype, value, tb)}


# ---------------------------------------------------------------- shells


def display(*objs, **kwargs):
    """IPython's display() for a terminal: the plain text of each object."""
    for obj in objs:
        print(pretty(obj))


def _leading_indent(code):
    """Remove the first line's indentation from every line that has it (IPython does)."""
    lines = code.splitlines(True)
    if not lines:
        return code
    first = lines[0]
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix or not first.strip():
        return code
    return "".join(l[len(prefix):] if l.startswith(prefix) else l for l in lines)


_loop = []


def _run_async(value):
    if not _loop:
        import asyncio  # only cells with a top-level await need it (40 ms to import)

        _loop.append(asyncio.new_event_loop())
    return _loop[0].run_until_complete(value)


_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
_CO_COROUTINE = 0x80


def _run_code(code_obj, ns):
    result = eval(code_obj, ns)  # eval runs exec-mode code too, and returns the coroutine of a top-level await
    if code_obj.co_flags & _CO_COROUTINE:
        result = _run_async(result)
    return result


def _quiet(code):
    """True when the cell's last token is ';' (IPython hides the value)."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except Exception:
        return False
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.DEDENT, tokenize.INDENT)
    for tok in reversed(toks):
        if tok.type in skip:
            continue
        return tok.type == tokenize.OP and tok.string == ";"
    return False


class StdlibShell:
    """Runs cells with ast/exec; displays the final expression like IPython."""

    flavour = "stdlib"

    def __init__(self):
        self.count = 1
        # a fresh __main__: the driver's own globals stay out of the user's way
        mod = types.ModuleType("__main__")
        sys.modules["__main__"] = mod
        self.ns = self.user_ns = mod.__dict__
        self.ns["__builtins__"] = builtins
        self._history_names()

    def _history_names(self):
        self.ns.update({"In": [""], "Out": {}, "display": display})
        self.ns.update({"_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": ""})

    def _display(self, value, n):
        ns = self.ns
        if value is None:
            return ""
        if value is not ns.get("Out"):  # IPython shows Out but never stores it
            ns["___"], ns["__"], ns["_"] = ns.get("__"), ns.get("_"), value
            ns["Out"][n] = value
            ns["_%d" % n] = value
        return pretty(value)

    def _remember(self, n, raw):
        ns = self.ns
        ns["In"].append(raw)
        prev = ns["In"][-2] if len(ns["In"]) > 1 else ""
        ns["_iii"], ns["_ii"], ns["_i"] = ns.get("_ii"), ns.get("_i"), prev
        ns["_i%d" % n] = raw

    @classmethod
    def adopt(cls, early):
        """This shell over the namespace and history of an _Early shell."""
        self = cls.__new__(cls)
        self.ns = self.user_ns = early.user_ns
        self.ns.pop("__builtin__", None)
        self._history_names()
        for c in early.cells:
            self._remember(c.n, c.raw)
            if c.shown:
                self._display(c.value, c.n)
        self.count = early.count
        return self

    def next_count(self):
        return self.count

    def run(self, raw):
        """Returns (count, value_text, exc_info or None)."""
        n = self.count
        if not raw.strip():
            return n, "", None  # IPython does not count an empty cell
        self.count += 1
        ns = self.ns
        self._remember(n, raw)
        code = _leading_indent(raw)
        filename = "<cell-%d>" % n
        CELL_FILES[filename] = n
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | _AWAIT)
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, filename, "exec", _AWAIT)
            tail = compile(last, filename, "eval", _AWAIT) if last is not None else None
        except (SyntaxError, ValueError, OverflowError):
            return n, "", sys.exc_info()
        try:
            _run_code(body, ns)
            text = ""
            if tail is not None:
                value = _run_code(tail, ns)
                if not _quiet(code):
                    text = self._display(value, n)
            return n, text, None
        except BaseException:
            etype, evalue, tb = sys.exc_info()
            return n, "", (etype, evalue, tb.tb_next if tb is not None else tb)


# IPython's package imports its terminal (prompt_toolkit) and, through the
# completer, jedi: about half of its import time, for code the driver never
# runs (no terminal, no tab completion). Stand-ins keep them out while the
# shell is made and are taken away after, so that a cell importing either
# gets the real module; IPython.embed() imports the real one when called.


def _stand_ins():
    embed_mod = types.ModuleType("IPython.terminal.embed")

    def embed(*args, **kwargs):
        if sys.modules.get("IPython.terminal.embed") is embed_mod:
            del sys.modules["IPython.terminal.embed"]
        from IPython.terminal.embed import embed as real

        return real(*args, **kwargs)

    embed_mod.embed = embed
    added = {}
    for name, mod in (("IPython.terminal.embed", embed_mod), ("jedi", None)):
        if name not in sys.modules:
            sys.modules[name] = added[name] = mod
    return added


def _drop_stand_ins(added):
    for name, mod in added.items():
        if name in sys.modules and sys.modules[name] is mod:
            del sys.modules[name]


def _ipython_shell():
    added = _stand_ins()
    try:
        return _make_ipython_shell()
    finally:
        _drop_stand_ins(added)


def _make_ipython_shell(user_module=None):
    from IPython.core.displayhook import DisplayHook
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    class Hook(DisplayHook):
        text = ""

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            Hook.text = format_dict.get("text/plain", "")

        def finish_displayhook(self):
            pass

        def log_output(self, format_dict):
            pass

    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.HistoryManager.hist_file = ":memory:"
    cfg.InteractiveShell.colors = "NoColor"
    cfg.InteractiveShell.xmode = "Plain"
    cfg.InteractiveShell.autocall = 0
    cfg.InteractiveShell.separate_in = ""
    ip = InteractiveShell.instance(config=cfg, displayhook_class=Hook, user_module=user_module)
    errors = []

    def showtraceback(exc_tuple=None, filename=None, tb_offset=None, exception_only=False, running_compiled_code=False):
        etype, value, tb = exc_tuple or sys.exc_info()
        errors.append((etype, value, tb))

    def showsyntaxerror(filename=None, running_compiled_code=False):
        errors.append(sys.exc_info())

    ip.display_formatter.active_types = ["text/plain"]
    ip.system = ip.system_raw  # !cmd as a plain subprocess, captured like any child
    ip.showtraceback = showtraceback
    ip.showsyntaxerror = showsyntaxerror
    ip.showindentationerror = showsyntaxerror

    class Shell:
        flavour = "ipython"
        user_ns = ip.user_ns
        shell = ip
        hook = Hook

        def next_count(self):
            return ip.execution_count

        def run(self, code):
            n = ip.execution_count
            Hook.text = ""
            del errors[:]
            res = ip.run_cell(code, store_history=True)
            if ip.exit_now:
                _exit()
            exc = None
            if errors:
                exc = errors[0]
            elif res.error_before_exec is not None:
                e = res.error_before_exec
                exc = (type(e), e, e.__traceback__)
            elif res.error_in_exec is not None:
                e = res.error_in_exec
                exc = (type(e), e, e.__traceback__)
            return n, Hook.text if exc is None else "", exc

    return Shell(), "ipython " + __import__("IPython").__version__


# ---------------------------------------------------------------- IPython in the background
# IPython takes about 200 ms of CPU to import and set up; the interpreter
# itself starts in about 20. So that a kernel answers as soon as Python is up,
# the driver imports IPython on a thread of its own (the loader) while the
# protocol is served, and runs a cell before IPython is there only when
# IPython would have given that cell the same output and left the session in
# the same state (_early_code says which cells; the others wait for IPython).
# When IPython is ready, it takes over the very namespace those cells ran in,
# and their history is replayed into it (_Lazy.switch): In, Out, _i*, _N, _,
# the order of the namespace's names, the compiled cells' file names.
#
# One thread at a time runs Python code of the session: the loader holds
# _Lazy.lock while it imports and lets a cell have it only at an import
# boundary where none of the modules it is in the middle of importing is part
# of the standard library (_Loader.find_spec). An early cell imports only
# standard modules, so it never waits for a module the parked loader holds,
# and never sees one half-made. The loader sets nothing up: the shell is made
# on the main thread, between cells.
#
# One difference is known and left: an early cell runs about five frames
# less deep than under IPython's run_cell, so the recursion limit is met that
# many calls later. Every other one found is in kerneltest.EarlyParity.
#
# CTXCODE_IPYTHON_START: background (the default), eager (import IPython
# before the first answer, as before), hold (no loader: IPython is imported
# when a cell needs it; for the tests that compare the two ways).

_IPY_DOC = "Automatically created module for IPython interactive environment"
_IPY_MODULES = ("IPython.core.interactiveshell", "IPython.core.completer", "IPython.core.magics", "IPython.core.displayhook", "traitlets.config")


def _import_ipython():
    import importlib

    for name in _IPY_MODULES:
        importlib.import_module(name)


def _ipython_version():
    """IPython's version, read from its release file without importing it; None if it is not installed."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("IPython")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, "core", "release.py")
        try:
            with open(path, encoding="utf-8") as f:
                src = f.read()
            ns = {}
            exec(compile(src, path, "exec"), ns)
            return str(ns["__version__"])
        except Exception:
            continue
    return None


def _ipy_code_name(code, n):
    """The file name IPython compiles cell n under (IPython.core.compilerop.code_name)."""
    import hashlib

    return "<ipython-input-%d-%s>" % (n, hashlib.sha1(code.encode("utf-8")).hexdigest()[:12])


def _ipy_transform(raw):
    """What IPython runs and stores in In for a cell of plain Python: a final
    newline added, leading empty lines dropped, the first line's indentation
    taken from every line that has it (inputtransformer2's cleanup)."""
    if not raw.endswith("\n"):
        raw += "\n"
    lines = raw.splitlines(True)
    for i, line in enumerate(lines):
        if line and not line.isspace():
            lines = lines[i:]
            break
    if lines:
        m = re.match(r"^[ \t]+", lines[0])
        if m:
            space = m.group(0)
            lines = [l[len(space):] if l.startswith(space) else l for l in lines]
    return "".join(lines)


# Names an early cell may not use: what IPython's namespace and builtins hold
# and the early one does not, and ways to look at the namespace as a whole.
_EARLY_NAMES = frozenset(
    "In Out _ih _oh _dh get_ipython exit quit display globals locals vars dir eval exec compile "
    "__import__ breakpoint help input copyright credits license SystemExit KeyboardInterrupt "
    "__IPYTHON__ __builtin__ __builtins__ __doc__ __name__ __spec__ __loader__ __package__ "
    "__file__ __cached__ __annotations__ __warningregistry__ _stdout _stderr".split()
)
_EARLY_HISTORY = re.compile(r"^(_+|_\d+|_i+|_i\d+|_i00)$")


def _reserved(name):
    """A name IPython's namespace or builtins give a meaning the early one lacks."""
    return name in _EARLY_NAMES or _EARLY_HISTORY.match(name) is not None


# Nodes that bind their name (.name, or .rest for a mapping pattern).
_EARLY_BINDERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping)
# Attributes that reach the process's state IPython reads as it starts, or frames.
_EARLY_ATTRS = frozenset(
    "chdir fchdir environ environb putenv unsetenv __globals__ __builtins__ f_globals f_locals f_back "
    "gi_frame cr_frame ag_frame tb_frame _getframe modules sys builtins __dict__ __self__ __traceback__ "
    "__subclasses__ __closure__ __import__ __loader__ __spec__ __getattribute__ methodcaller attrgetter".split()
)
_EARLY_GETATTR = frozenset("getattr setattr delattr hasattr".split())
# Standard modules whose state IPython sets or reads, or that run code on
# other threads or at exit.
_EARLY_DENIED = frozenset(
    "__future__ __main__ builtins sys importlib gc inspect warnings site atexit signal threading "
    "_thread concurrent multiprocessing asyncio faulthandler tracemalloc ctypes pdb bdb doctest "
    "unittest pydoc code codeop runpy readline rlcompleter tkinter turtle turtledemo idlelib gettext "
    "locale logging trace traceback cProfile profile pty tty termios sched pickle pkgutil timeit "
    "shelve zipimport".split()
)
_STDLIB_DIR = os.path.dirname(os.path.realpath(os.__file__))
_EARLY_PROMPT = re.compile(r"^\s*(>>>|\.\.\.)( |$)|^(In \[\d+\]: |\s*\.\.\.+: )")
_EARLY_HEAD = re.compile(r"^\s*([A-Za-z_]\w*)")


def _early_code(raw, ns):
    """(transformed code, its ast) when IPython would run raw as the plain
    Python it is, with the same result, before its history or namespace
    could show; None when the cell must wait for IPython."""
    import keyword

    code = _ipy_transform(raw)
    if any(_EARLY_PROMPT.match(line) for line in code.splitlines()):
        return None
    import warnings

    shown = []
    showwarning = warnings.showwarning
    # Recorded, not shown: a cell whose compiling warns is IPython's, which
    # warns as it compiles statement by statement, under its own file names.
    # (Replacing showwarning leaves the filters, and so their version, alone.)
    warnings.showwarning = lambda *args, **kwargs: shown.append(args)
    try:
        tree = compile(code, "<early>", "exec", ast.PyCF_ONLY_AST | _AWAIT)
        if compile(tree, "<early>", "exec", _AWAIT).co_flags & _CO_COROUTINE:
            return None  # a top-level await runs in IPython's loop runner
    except Exception:
        return None  # IPython runs what compiles statement by statement
    finally:
        warnings.showwarning = showwarning
    if shown:
        return None
    lines = code.splitlines()
    if len(lines) == 1:
        # A single line is also offered to IPython's magics and aliases:
        # plain Python only when its first name is defined or a keyword.
        m = _EARLY_HEAD.match(lines[0])
        if m:
            head = m.group(1)
            if not (head in ns or head in builtins.__dict__ or keyword.iskeyword(head)):
                return None
    for stmt in tree.body[:-1]:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return None  # IPython compiles it alone, as a docstring that sets __doc__
    called = set()  # open and getattr as called here (ast.walk meets a call before its function's name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if _reserved(node.id):
                return None
            if (node.id == "open" or node.id in _EARLY_GETATTR) and id(node) not in called:
                return None  # passed on, or called with what cannot be seen
            if isinstance(node.ctx, ast.Del):
                return None  # a name deleted and bound again moves in the namespace's order, which the replay cannot see
            if node.id == "ANSWER" and not isinstance(node.ctx, ast.Load):
                return None
        elif isinstance(node, ast.AnnAssign):
            return None  # annotations make __annotations__ where IPython's statement-by-statement run would
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "open":
                first = node.args[0] if node.args else None
                if isinstance(first, ast.JoinedStr) or (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                    called.add(id(node.func))  # a path: IPython's open() refuses only fds 0, 1 and 2
            elif node.func.id in _EARLY_GETATTR:
                attr = node.args[1] if len(node.args) > 1 else None
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and attr.value not in _EARLY_ATTRS:
                    called.add(id(node.func))
        elif isinstance(node, ast.Attribute):
            if node.attr in _EARLY_ATTRS:
                return None
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            if any(_reserved(name) for name in node.names):
                return None
        elif isinstance(node, ast.Import):
            if not all(_early_module(a.name) for a in node.names):
                return None
        elif isinstance(node, ast.ImportFrom):
            if node.level or not _early_module(node.module or "") or any(a.name == "*" or a.name in _EARLY_ATTRS for a in node.names):
                return None
        elif isinstance(node, ast.alias):
            if _reserved(node.asname or node.name.partition(".")[0]):
                return None
        elif isinstance(node, _EARLY_BINDERS):
            bound = node.rest if isinstance(node, ast.MatchMapping) else node.name
            if bound and _reserved(bound):
                return None
    return code, tree


def _early_module(name):
    """True for a standard module an early cell may import: one that is
    really the standard library's, not a file of the same name in the
    session's folder or a package installed over it."""
    top = name.partition(".")[0]
    if top not in sys.stdlib_module_names or top in _EARLY_DENIED or top.startswith("_"):
        return False  # (a module named _x is the C half of one, or private)
    mod = sys.modules.get(top)
    spec = getattr(mod, "__spec__", None) if mod is not None else None
    if spec is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec(top)
        except Exception:
            return False
    if spec is None:
        return False
    if spec.origin in ("built-in", "frozen"):
        return True
    if not spec.origin:
        return False
    rel = os.path.relpath(os.path.realpath(spec.origin), _STDLIB_DIR)
    return not rel.startswith(os.pardir) and rel.split(os.sep)[0] not in ("site-packages", "dist-packages")


_SIMPLE_ATOMS = (int, float, str, bool, bytes, type(None))


def _simple(value, budget=None):
    """True when the driver's pretty printer gives IPython's text for value:
    plain numbers, strings and bytes, and lists, tuples, sets and dicts of
    them (no subclasses, no cycles, short enough not to be cut)."""
    budget = budget if budget is not None else [10000]
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        budget[0] -= 1
        if budget[0] < 0 or depth > 20:
            return False
        t = type(v)
        if t in _SIMPLE_ATOMS:
            if t is int and not -(10**100) < v < 10**100:
                return False
            continue
        if t in (list, tuple, set, frozenset):
            if len(v) >= MAX_SEQ:
                return False
            stack.extend((x, depth + 1) for x in v)
        elif t is dict:
            if len(v) >= MAX_SEQ:
                return False
            stack.extend((x, depth + 1) for kv in v.items() for x in kv)
        else:
            return False
    return True


class _EarlyCell:
    __slots__ = ("n", "raw", "code", "keys", "shown", "value", "failed")

    def __init__(self, n, raw, code):
        self.n, self.raw, self.code = n, raw, code
        self.keys, self.shown, self.value, self.failed = None, False, None, False


_LATE = object()  # the value needs IPython's formatter


class _Early:
    """Runs the cells _early_code allows, as IPython would, and keeps their history for the switch."""

    def __init__(self):
        mod = types.ModuleType("__main__", _IPY_DOC)
        # as IPython's prepare_user_module leaves it
        mod.__dict__["__builtin__"] = builtins
        mod.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = mod
        self.module = mod
        self.user_ns = mod.__dict__
        self.count = 1
        self.cells = []
        self.base = list(self.user_ns)

    def run(self, raw, code, tree):
        """Returns (count, value_text or _LATE, exc_info or None)."""
        n = self.count
        self.count += 1
        cell = _EarlyCell(n, raw, code)
        self.cells.append(cell)
        ns = self.user_ns
        try:
            return self._run(cell, tree)
        finally:
            cell.keys = list(ns)

    def _run(self, cell, tree):
        n, code, ns = cell.n, cell.code, self.user_ns
        ns.pop("__warningregistry__", None)  # as IPython's pre_execute does
        name = _ipy_code_name(code, n)
        linecache.cache[name] = (len(code), None, [l + "\n" for l in code.splitlines()], name)
        try:
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, name, "exec")
            tail = compile(last, name, "eval") if last is not None else None
        except (SyntaxError, ValueError, OverflowError):
            cell.failed = True
            return n, "", sys.exc_info()
        try:
            try:
                _let_alarm()
                exec(body, ns)
                value = eval(tail, ns) if tail is not None else None
            finally:
                _alarm["held"] = True
            text = ""
            if tail is not None:
                if value is not None and not _quiet(code):
                    cell.shown, cell.value = True, value
                    text = pretty(value) if _simple(value) else _LATE
            return n, text, None
        except BaseException:
            cell.failed = True
            etype, evalue, tb = sys.exc_info()
            return n, "", (etype, evalue, tb.tb_next if tb is not None else tb)


_EXEC_MODULE = """
def exec_module(loader, module):
    if lazy.want.is_set() and threading.get_ident() == me and safe(module.__name__):
        lazy.lock.release()
        lazy.resume.wait()
        lazy.lock.acquire()
    return original(loader, module)
"""


class _Loader(threading.Thread):
    """Imports IPython's modules, yielding the interpreter to cells at safe import boundaries.

    The boundary is the start of a module's body (the source loaders'
    exec_module, wrapped while the loader runs): there the loader holds no
    lock but the module locks of the imports it is in the middle of (the
    global import lock is held around finders, so a finder cannot wait)."""

    def __init__(self, lazy):
        super().__init__(name="ctxcode-ipython-loader", daemon=True)
        self.lazy = lazy
        self.error = None
        self.done = threading.Event()

    def run(self):
        from importlib import _bootstrap_external

        lazy = self.lazy
        basics = _bootstrap_external._LoaderBasics
        original = basics.__dict__["exec_module"]
        me = threading.get_ident()

        # Every thread's imports pass through the wrapper. Its code is named
        # like importlib's bootstrap, which warnings skip when they count
        # stack levels, so a module that warns as it is imported names the
        # importing cell as it would without the wrapper.
        scope = {"lazy": lazy, "me": me, "original": original, "threading": threading, "safe": _Loader._safe}
        exec(compile(_EXEC_MODULE, "<ctxcode importlib._bootstrap_external wrapper>", "exec"), scope)
        exec_module = scope["exec_module"]
        lazy.lock.acquire()
        basics.exec_module = exec_module
        try:
            _import_ipython()
        except BaseException as e:
            self.error = e
        finally:
            basics.exec_module = original
            lazy.lock.release()
            self.done.set()
            os.write(lazy.wake_w, b".")

    @staticmethod
    def _safe(name):
        """True when neither name nor any module this thread is importing is a standard one."""
        if name.partition(".")[0] in sys.stdlib_module_names:
            return False
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == "<module>":
                if (f.f_globals.get("__name__") or "").partition(".")[0] in sys.stdlib_module_names:
                    return False
            f = f.f_back
        return True


class _Lazy:
    """The session's shell while IPython loads: early cells first, then IPython's own."""

    flavour = "ipython"

    def __init__(self, background):
        self.early = _Early()
        self.user_ns = self.early.user_ns
        self.real = None
        self.stand_ins = _stand_ins()
        self.lock = threading.Lock()
        self.want = threading.Event()
        self.resume = threading.Event()
        self.wake_r, self.wake_w = os.pipe()
        self.loader = None
        if background:
            self.loader = _Loader(self)
            self.loader.start()

    def settled(self):
        return self.real is not None

    def ready(self):
        """True when the loader is done and the switch can be made."""
        return self.real is None and self.loader is not None and self.loader.done.is_set()

    def next_count(self):
        return self.real.next_count() if self.real is not None else self.early.count

    def run(self, raw):
        if self.real is None:
            if not raw.strip():
                STATE["early"] = True
                return self.early.count, "", None  # IPython does not count an empty cell
            early = _early_code(raw, self.user_ns)
            if early is not None and not self.ready():
                # The cell's soft timeout must not cut the hand-over of the
                # interpreter between the loader and the cell, nor the early
                # shell's bookkeeping: it is held back over all of it but the
                # cell's own code (_Early._run lets it through there). The
                # wait for the loader to reach a boundary is not the cell's
                # time: the timer stops for it.
                _alarm["held"] = True
                try:
                    with _timer_paused():
                        self.want.set()
                        self.resume.clear()
                        self.lock.acquire()
                    try:
                        n, text, exc = self.early.run(raw, *early)
                    finally:
                        self.lock.release()
                        self.want.clear()
                        self.resume.set()
                finally:
                    _alarm["held"] = _alarm["pending"] = False
                if text is _LATE:
                    # (a child forked by the cell has no loader: its output is dropped anyway)
                    text = self._late_value() if os.getpid() == MAIN_PID else ""
                STATE["early"] = True
                return n, text, exc
            with _timer_paused():
                self.switch()
        return self.real.run(raw)

    def _late_value(self):
        """IPython's text for the last early cell's value: the switch is made now."""
        with _timer_paused():
            cell = self.early.cells[-1]
            self.switch(upto=cell)
            if isinstance(self.real, StdlibShell):
                return pretty(cell.value)  # IPython did not load; adopt stored the value
            ip, hook = self.real.shell, self.real.hook
            ip.execution_count = cell.n
            hook.text = ""
            with ip.builtin_trap, ip.display_trap:
                ip.displayhook(cell.value)
            ip.execution_count = cell.n + 1
            return hook.text

    def switch(self, upto=None):
        """Make IPython's shell over the early namespace and replay the early cells' history."""
        if self.real is not None:
            return
        if self.loader is not None:
            self.loader.done.wait()
            error = self.loader.error
        else:
            error = None
            try:
                _import_ipython()
            except BaseException as e:
                error = e
        ns = self.user_ns
        saved = dict(ns)
        _flush_streams()
        out1, out2 = os.dup(1), os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        try:
            if error is None:
                try:
                    ns.clear()
                    ns.update((k, saved[k]) for k in self.early.base)
                    self.real = _make_ipython_shell(user_module=self.early.module)[0]
                except BaseException as e:
                    error = e
                    self.real = None
                    ns.clear()
                    ns.update(saved)
            if error is not None:
                LOG.write("ctxcode: IPython did not load (%s: %s); the session goes on on the stdlib path\n" % (type(error).__name__, error))
                self.real = StdlibShell.adopt(self.early)
                _driver_names(ns, saved)
            else:
                _driver_names(ns, saved)
                self._replay(saved, upto)
            _drop_stand_ins(self.stand_ins)
        finally:
            _flush_streams()
            os.dup2(out1, 1)
            os.dup2(out2, 2)
            os.close(out1)
            os.close(out2)
            self.early.cells = []

    def _replay(self, saved, upto):
        """The early cells' history, as IPython would have written it: the
        namespace holds IPython's names now, then the driver's (see switch)."""
        ip = self.real.shell
        ns = self.user_ns
        prev = set(self.early.base) | set(_DRIVER_NAMES)
        for cell in self.early.cells:
            ns.pop("__warningregistry__", None)  # IPython's pre_execute
            prev.discard("__warningregistry__")
            ip.history_manager.store_inputs(cell.n, cell.code, cell.raw)
            ip.compile.cache(cell.code, cell.n, raw_code=cell.raw)
            now = set(cell.keys) if cell.keys is not None else prev
            for key in prev - now:
                ns.pop(key, None)
            for key in cell.keys or ():
                if key not in prev:
                    ns[key] = saved.get(key)
            prev = now
            if cell.shown and cell is not upto:
                ip.execution_count = cell.n
                ip.displayhook.update_user_ns(cell.value)
            ip.last_execution_succeeded = not cell.failed
        for key, value in saved.items():
            if key in prev:
                ns[key] = value
        ip.execution_count = self.early.count


_DRIVER_NAMES = ("ANSWER", "_stdout", "_stderr", "exit", "quit")


class _timer_paused:
    """Stops the cell's soft timeout for the driver's own work, and starts what was left of it after."""

    def __enter__(self):
        self.left = signal.setitimer(signal.ITIMER_REAL, 0)[0]

    def __exit__(self, *exc):
        if self.left > 0:
            signal.setitimer(signal.ITIMER_REAL, self.left)


def _driver_names(ns, saved=None):
    """What the driver adds to a session's namespace and builtins (main sets them first)."""
    import warnings

    saved = saved or {}
    ns["ANSWER"] = ANSWER
    ns["_stdout"], ns["_stderr"] = saved.get("_stdout", {}), saved.get("_stderr", {})
    ns["exit"] = ns["quit"] = saved.get("exit") or _Exiter()
    builtins.exit = builtins.quit = ns["exit"]
    warnings.filterwarnings("ignore", message="To exit: use")


def make_shell():
    if os.environ.get("CTXCODE_NO_IPYTHON") != "1":
        start = os.environ.get("CTXCODE_IPYTHON_START", "background")
        if start in ("background", "hold"):
            version = _ipython_version()
            if version is not None:
                return _Lazy(start == "background"), "ipython " + version
        try:
            return _ipython_shell()
        except ImportError:
            pass
    return StdlibShell(), "stdlib"


# ---------------------------------------------------------------- the shell op
# {"op":"shell","command":...} runs /bin/sh -c command for condition A's bash
# tool: in the session folder and with the environment the kernel started
# with (both taken before any cell runs, so a cell's os.chdir or os.environ
# changes do not move it), in a session and process group of its own, stdin
# /dev/null, stdout and stderr on one pipe (so their order is kept), none of
# the driver's other fds. The interpreter's namespace and count are not
# touched. The output is cut by the one head-and-tail rule (_join_capped).
# The call ends when the command ends, or at its timeout: then, or
# _SHELL_GRACE after the command's own end when a child it left behind still
# holds the pipe, the whole group is killed (SIGKILL: a child that ignores
# SIGTERM dies too) and what the pipe still holds is read. A process that
# left the group (setsid) is not followed; the sandbox bounds it.

SESSION_DIR = os.getcwd()
SHELL_ENV = dict(os.environ)
_SHELL_GRACE = 0.2  # seconds
_shell_groups = set()  # groups killed whose members this process may still have to reap


class _HeadTail:
    """The head and the tail of a stream within cap bytes, as _cap_text
    keeps them, without holding the middle."""

    def __init__(self, cap):
        self.cap = cap
        self.half = max(cap // 2, 1)
        self.keep = max(cap - self.half, self.half + 1)  # what rest must hold
        self.head = bytearray()
        self.rest = bytearray()
        self.size = 0

    def add(self, data):
        self.size += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.rest += data
        if len(self.rest) > 2 * self.keep:  # past the cap by now: the middle goes
            del self.rest[: len(self.rest) - self.keep]

    def text(self):
        if self.size <= self.cap:
            return bytes(self.head + self.rest).decode("utf-8", "replace"), 0
        tail = bytes(self.rest[-self.half :])
        before = bytes(self.rest[-self.half - 1 : -self.half])
        return _join_capped(bytes(self.head), tail, self.size, before == b"\n")


def _ended(proc):
    """Whether the command has ended, without reaping it where waitid can:
    while it is a zombie its pid, and so its group's id, stays its own."""
    if not hasattr(os, "waitid"):
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _shell_groups.add(pgid)


def _reap_groups(wait=0.0):
    """Reap what is left of killed groups, waiting up to wait seconds for
    them to die. Where the driver is pid 1 (a local kernel's own PID
    namespace) their orphans are its children, and would stay zombies."""
    until = time.monotonic() + wait
    while True:
        for pgid in list(_shell_groups):
            try:
                while os.waitpid(-pgid, os.WNOHANG)[0] != 0:
                    pass
            except ChildProcessError:
                _shell_groups.discard(pgid)  # none of its members is ours (any more)
        if not _shell_groups or time.monotonic() >= until:
            return
        time.sleep(0.001)


def _shell_error(rid, name, msg, elapsed=0):
    return {"id": rid, "status": "error", "stdout": "", "stderr": "", "value": "",
            "error": {"name": name, "value": msg, "traceback": ""}, "answer": None,
            "elapsed_ms": elapsed, "dropped_bytes": 0}


def run_shell(req):
    rid = req.get("id", 0)
    command = req.get("command") or ""  # "" runs nothing, as in sh -c ''
    if not isinstance(command, str):
        return _shell_error(rid, "ProtocolError", "the shell op needs a command (a string)")
    timeout = max(int(req.get("timeout_ms") or 30000), 1) / 1000.0
    cap = max(int(req.get("max_output_bytes") or 1 << 20), 64)
    _reap_groups()
    # A cell may have set SIGCHLD to SIG_IGN, which reaps children unasked:
    # the command's end could then not be seen.
    sigchld = signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        return _run_command(rid, command, timeout, cap)
    finally:
        signal.signal(signal.SIGCHLD, sigchld)


def _run_command(rid, command, timeout, cap):
    import select
    import subprocess

    started = time.monotonic()
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command], cwd=SESSION_DIR, env=SHELL_ENV,
            stdin=subprocess.DEVNULL, stdout=w, stderr=w,
            close_fds=True, start_new_session=True,
        )
    except OSError as e:
        os.close(r)
        return _shell_error(rid, "ShellError", "cannot run /bin/sh in %s: %s" % (SESSION_DIR, e))
    finally:
        os.close(w)
    out = _HeadTail(cap)
    deadline = started + timeout
    ended_at = None
    eof = timed_out = False

    def read(wait):
        nonlocal eof
        if select.select([r], [], [], max(wait, 0))[0]:
            data = os.read(r, 1 << 16)
            if data:
                out.add(data)
            else:
                eof = True

    try:
        while True:
            now = time.monotonic()
            if ended_at is None and _ended(proc):
                ended_at = now
            if _shell_groups:
                _reap_groups()
            if ended_at is not None and (eof or now >= ended_at + _SHELL_GRACE):
                break  # ended; a child left behind may keep the pipe
            if ended_at is None and now >= deadline:
                timed_out = True
                break
            until = ended_at + _SHELL_GRACE if ended_at is not None else deadline
            if eof:
                time.sleep(min(until - now, 0.01))  # the command closed its output but runs on
            else:
                read(min(until - now, 0.05))
        _kill_group(proc.pid)
        drain_until = time.monotonic() + _SHELL_GRACE
        while not eof and time.monotonic() < drain_until:
            read(drain_until - time.monotonic())
        rc = proc.wait()
    finally:
        os.close(r)
        if proc.returncode is None:
            _kill_group(proc.pid)
            proc.wait()
        _reap_groups(wait=0.05)
    elapsed = int((time.monotonic() - started) * 1000)
    text, dropped = out.text()
    res = {"id": rid, "status": "ok", "stdout": text, "stderr": "", "value": "", "error": None,
           "answer": None, "elapsed_ms": elapsed, "dropped_bytes": dropped, "exit_code": rc}
    if rc < 0:
        res["exit_code"] = -1
        try:
            res["signal"] = signal.Signals(-rc).name
        except ValueError:
            res["signal"] = "signal %d" % -rc
    if timed_out:
        res["status"] = "timeout"
        res["error"] = {"name": "ShellTimeout", "traceback": "",
                        "value": "command exceeded its timeout of %gs; its process group was killed" % timeout}
    elif rc != 0:
        res["status"] = "error"
    return res


# ---------------------------------------------------------------- main loop


_timeout = [0.0]


_alarm = {"held": False, "pending": False}


def _timeout_error():
    return CellTimeout("cell exceeded its timeout of %gs; the namespace is kept" % _timeout[0])


def _on_alarm(signum, frame):
    if _alarm["held"]:
        _alarm["pending"] = True  # raised when the cell's own code runs again (_let_alarm), else dropped
        return
    raise _timeout_error()


def _let_alarm():
    """Let the soft timeout through again (raising it now if it came while held)."""
    _alarm["held"] = False
    if _alarm["pending"]:
        _alarm["pending"] = False
        raise _timeout_error()


def run_exec(shell, req):
    timeout = _timeout[0] = max(int(req.get("timeout_ms") or 30000), 1) / 1000.0
    cap = max(int(req.get("max_output_bytes") or 1 << 20), 64)
    code = req.get("code") or ""
    STATE["answer"] = None
    STATE["early"] = False
    _alarm["pending"] = False
    _point_fds()
    n0 = shell.next_count()
    with _cap_lock:
        _cap_now[0] = cap
        _cell_running.set()
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _on_alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout)
            n, value, exc = shell.run(code)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except CellTimeout:
        # the alarm fired outside the cell's own frames
        n, value, exc = n0, "", sys.exc_info()
    if os.getpid() != MAIN_PID:
        _flush_streams()  # a child forked by the cell must not return to the protocol
        os._exit(0)
    elapsed = int((time.monotonic() - started) * 1000)
    _flush_streams()
    with _cap_lock:
        _cell_running.clear()
        out, d1 = OUT.drain(cap)
        err, d2 = ERR.drain(cap)
    value, d3 = _cap_text(value, cap)
    if code.strip():
        # What a cell printed stays reachable as _stdout[n] and _stderr[n],
        # so a model shown a cut rendering can page through the full text.
        ns = shell.user_ns
        for key, text in (("_stdout", out), ("_stderr", err)):
            if text:
                kept = ns.get(key)
                if not isinstance(kept, dict):
                    kept = ns[key] = {}
                kept[n] = text
    status, error = "ok", None
    if exc is not None and not issubclass(exc[0], _Answer):
        status = "timeout" if issubclass(exc[0], CellTimeout) else "error"
        error = error_info(*exc)
    res = {
        "id": req.get("id", 0),
        "count": n,
        "status": status,
        "stdout": out,
        "stderr": err,
        "value": value,
        "error": error,
        "answer": STATE["answer"],
        "elapsed_ms": elapsed,
        "dropped_bytes": d1 + d2 + d3,
    }
    if TRACE_EARLY:
        res["early"] = STATE["early"]  # the cell ran before IPython had loaded (for the tests)
    return res


def send(obj):
    """Write one protocol line, all of it: a signal may cut a large write short."""
    data = memoryview(json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace") + b"\n")
    while data:
        data = data[os.write(PROTO_OUT_FD, data) :]


class _Requests:
    """Protocol lines from fd; while IPython loads, the wait for one also
    makes the switch to IPython as soon as its loader is done."""

    def __init__(self, fd):
        self.fd = fd
        self.buf = bytearray()
        self.eof = False

    def readline(self, shell):
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                return line
            if self.eof:
                line = bytes(self.buf)
                self.buf.clear()
                return line
            lazy = isinstance(shell, _Lazy) and not shell.settled() and shell.loader is not None
            if lazy:
                if shell.ready():
                    shell.switch()
                    _point_fds()
                    OUT.drain(1 << 16)
                    ERR.drain(1 << 16)
                    continue
                _point_null()  # what the loader may print between cells is no cell's output
                r, _, _ = select.select([self.fd, shell.wake_r], [], [])
                if self.fd not in r:
                    os.read(shell.wake_r, 64)
                    continue
            data = os.read(self.fd, 1 << 16)
            if not data:
                self.eof = True
            self.buf += data


def main():
    _point_fds()
    shell, flavour = make_shell()
    _driver_names(shell.user_ns)
    version = "python %d.%d.%d %s" % (sys.version_info[:3] + (flavour,))
    OUT.drain(1 << 16)
    ERR.drain(1 << 16)
    requests = _Requests(PROTO_IN_FD)
    while True:
        line = requests.readline(shell)
        if not line:
            break
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("request is not a JSON object")
        except ValueError as e:
            send({"id": 0, "status": "error", "error": {"name": "ProtocolError", "value": "bad request: %s" % e, "traceback": ""}})
            continue
        op = req.get("op")
        if op == "exec":
            send(run_exec(shell, req))
        elif op == "shell":
            send(run_shell(req))
        elif op == "ping":
            send({"id": req.get("id", 0), "status": "ok", "value": version})
        else:
            send({"id": req.get("id", 0), "status": "error", "error": {"name": "ProtocolError", "value": "unknown op %r" % op, "traceback": ""}})


main()
