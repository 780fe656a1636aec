"""How a value is shown: the standard-library path's pretty printer, and display().

A layout printer that gives the same text as IPython's default plain-text
formatter (IPython.lib.pretty, max_width 79, at most 1000 items a
container): groups break outermost first when the current line would pass
the width. The IPython path uses IPython's own formatter; this one is for
the standard-library shell, so that both give the same value text for the
same cell (kernel.TestPythonValueParity checks it).
"""

import collections
import datetime
import types

MAX_WIDTH = 79
MAX_SEQ = 1000


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
            self._break_group(g)

    def _break_group(self, g):
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
        """A newline of the text itself (a repr of several lines): as
        IPython's break_, it breaks the outermost group that can break."""
        g = self.queue_pop()
        if g is not None:
            self._break_group(g)
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


def display(*objs, **kwargs):
    """IPython's display() for a terminal: the plain text of each object."""
    for obj in objs:
        print(pretty(obj))
