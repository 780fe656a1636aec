"""The shell op: a /bin/sh command for condition A's bash tool.

{"op":"shell","command":...} runs /bin/sh -c command in the session folder
and with the environment the kernel started with (both taken before any
cell runs, so a cell's os.chdir or os.environ changes do not move it), in
a session and process group of its own, stdin /dev/null, stdout and stderr
on one pipe (so their order is kept), none of the driver's other fds. The
interpreter's namespace and count are not touched. The output is cut by
the one head-and-tail rule (capture.join_capped).

The call ends when the command ends, or at its timeout: then, or
_SHELL_GRACE after the command's own end when a child it left behind still
holds the pipe, the whole group is killed (SIGKILL: a child that ignores
SIGTERM dies too) and what the pipe still holds is read. A process that
left the group (setsid) is not followed; the sandbox bounds it.
"""

import os
import select
import signal
import time

from ctxcode_driver import capture

SESSION_DIR = os.getcwd()
SHELL_ENV = dict(os.environ)
_SHELL_GRACE = 0.2  # seconds
_shell_groups = set()  # groups killed whose members this process may still have to reap


class _HeadTail:
    """The head and the tail of a stream within cap bytes, as capture.cap_text
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
        return capture.join_capped(bytes(self.head), tail, self.size, before == b"\n")


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
