"""Start-up and the request loop.

One start path, in this order, before the first answer: the protocol's
fds are taken (protocol.Channel), fds 0, 1 and 2 are given to capture, the
shell is made (IPython imported now when it is there: cells.make_shell),
the driver's names are bound; then the driver answers requests, one at a
time, on the main thread: exec (run_exec), shell (the shell module), ping
(the kernel's name). Nothing here depends on timing: a cell's output is
what was written while it ran, and the soft timeout is raised only in the
cell's own code (limits).
"""

import builtins
import os
import sys
import time

from ctxcode_driver import answer, capture, cells, limits, protocol, shell


def run_exec(sh, out, req, main_pid):
    timeout = max(int(req.get("timeout_ms") or 30000), 1) / 1000.0
    cap = max(int(req.get("max_output_bytes") or 1 << 20), 64)
    code = req.get("code") or ""
    answer.recorded.value, answer.recorded.literal = None, False
    out.begin(cap)
    n0 = sh.next_count()
    started = time.monotonic()
    try:
        try:
            limits.arm(timeout, cells.is_cell_file, int(req.get("interrupts") or 0))
            n, value, exc = sh.run(code)
        finally:
            limits.disarm()
    except (limits.CellTimeout, limits.CellInterrupted):
        n, value, exc = n0, "", sys.exc_info()  # (the shells catch it in the cell's code)
    exc = limits.outcome(exc)
    if os.getpid() != main_pid:
        capture.flush_streams()  # a child forked by the cell must not return to the protocol
        os._exit(0)
    elapsed = int((time.monotonic() - started) * 1000)
    stdout, stderr, dropped = out.end(cap)
    value, d = capture.cap_text(value, cap)
    if code.strip():
        # What a cell printed stays reachable as _stdout[n] and _stderr[n],
        # so a model shown a cut rendering can page through the full text.
        ns = sh.user_ns
        for key, text in (("_stdout", stdout), ("_stderr", stderr)):
            if text:
                kept = ns.get(key)
                if not isinstance(kept, dict):
                    kept = ns[key] = {}
                kept[n] = text
    status, error = "ok", None
    if exc is not None and not issubclass(exc[0], answer.Answer):
        status = "timeout" if limits.fired(exc[0]) else "error"
        error = cells.error_info(*exc)
    resp = {
        "id": req.get("id", 0),
        "count": n,
        "status": status,
        "stdout": stdout,
        "stderr": stderr,
        "value": value,
        "error": error,
        "answer": answer.recorded.value,
        "elapsed_ms": elapsed,
        "dropped_bytes": dropped + d,
    }
    if answer.recorded.literal and answer.recorded.value is not None:
        resp["answer_literal"] = True
    return resp


def main():
    chan = protocol.Channel()  # before anything touches fds 0 and 1
    log = os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")
    try:
        import faulthandler

        faulthandler.enable(file=log)
    except Exception:
        pass
    out = capture.Capture()
    builtins.input = capture.no_input
    sh, flavour = cells.make_shell(log)
    cells.bind_driver_names(sh.user_ns)
    limits.listen()
    version = "python %d.%d.%d %s" % (sys.version_info[:3] + (flavour,))
    main_pid = os.getpid()
    while True:
        line = chan.readline()
        if not line:
            break
        try:
            req = protocol.parse(line)
        except ValueError as e:
            chan.send(protocol.error(0, "ProtocolError", "bad request: %s" % e))
            continue
        rid, op = req.get("id", 0), req.get("op")
        if op == "exec":
            chan.send(run_exec(sh, out, req, main_pid))
        elif op == "shell":
            chan.send(shell.run_shell(req))
        elif op == "ping":
            chan.send({"id": rid, "status": "ok", "value": version})
        else:
            chan.send(protocol.error(rid, "ProtocolError", "unknown op %r" % op))
