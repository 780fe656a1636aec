"""Running a cell: the IPython shell, its standard-library equivalent, and tracebacks.

make_shell() gives IPython's InteractiveShell when IPython imports (and
CTXCODE_NO_IPYTHON is not 1), else StdlibShell, which runs cells with ast
and exec and shows the final expression's value as IPython does (the same
text, In/Out/_/_i history, a top-level await, ';' to hide the value). It is
made before the driver answers its first ping: one start path.

shell.run(code) returns (count, value text, exc_info or None); a failure of
the cell's code is an exc_info, never an exception out of run. Tracebacks
are compact: the failing lines of the session's own cells (Cell In[n],
line k) and the exception line, with no driver or IPython frames.
is_cell_file says which compiled file names are cells' (the soft timeout
uses it).

The IPython shell is made with stand-ins for IPython's terminal
(prompt_toolkit) and jedi, which the driver never runs (no terminal, no
tab completion): they are about half of IPython's import time. The
stand-ins are taken away once the shell is made, so that a cell importing
either gets the real module; IPython.embed() imports the real one when
called.
"""

import ast
import builtins
import os
import io
import linecache
import re
import sys
import tokenize
import traceback
import types

from ctxcode_driver import answer, display


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
        self.ns.update({"In": [""], "Out": {}, "display": display.display})
        self.ns.update({"_": "", "__": "", "___": "", "_i": "", "_ii": "", "_iii": ""})

    def _display(self, value, n):
        ns = self.ns
        if value is None:
            return ""
        text = display.pretty(value)  # before it is stored, as IPython's displayhook does
        if value is not ns.get("Out"):  # IPython shows Out but never stores it
            ns["___"], ns["__"], ns["_"] = ns.get("__"), ns.get("_"), value
            ns["Out"][n] = value
            ns["_%d" % n] = value
        return text

    def _remember(self, n, raw):
        ns = self.ns
        ns["In"].append(raw)
        prev = ns["In"][-2] if len(ns["In"]) > 1 else ""
        ns["_iii"], ns["_ii"], ns["_i"] = ns.get("_ii"), ns.get("_i"), prev
        ns["_i%d" % n] = raw

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


def _stand_ins():
    """Put the stand-ins for IPython's terminal and jedi in sys.modules; returns what was added."""
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
    """(IPython's shell, flavour), made with the stand-ins."""
    added = _stand_ins()
    try:
        return _make_ipython_shell()
    finally:
        _drop_stand_ins(added)


def _make_ipython_shell():
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
    ip = InteractiveShell.instance(config=cfg, displayhook_class=Hook)
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
                answer.Exiter()()
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


def is_cell_file(filename):
    """True for the file name a cell's code was compiled under."""
    return _cell_name(filename) is not None


def bind_driver_names(ns):
    """What the driver adds to a session's namespace and builtins."""
    import warnings

    ns["ANSWER"] = answer.ANSWER
    answer.cell_file = is_cell_file
    ns["_stdout"], ns["_stderr"] = {}, {}
    ns["exit"] = ns["quit"] = builtins.exit = builtins.quit = answer.Exiter()
    warnings.filterwarnings("ignore", message="To exit: use")


def make_shell(log):
    """(shell, flavour): IPython's when it imports, else the standard
    library's. An IPython that is there but fails is said on log."""
    if os.environ.get("CTXCODE_NO_IPYTHON") != "1":
        try:
            return _ipython_shell()
        except ImportError as e:
            if e.name != "IPython":
                log.write("ctxcode: IPython did not load (ImportError: %s); the session runs on the standard-library shell\n" % e)
        except Exception as e:
            log.write("ctxcode: IPython did not load (%s: %s); the session runs on the standard-library shell\n" % (type(e).__name__, e))
    return StdlibShell(), "stdlib"
