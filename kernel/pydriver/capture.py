"""Where a cell's output goes: fds 0, 1 and 2, sys.stdin/out/err, and the cut.

Owns the process's standard fds. The protocol runs on private duplicates
taken before anything here runs (main), so nothing a cell writes to fd 1 or
2, from Python, C or a child process, can corrupt it. While a cell runs,
fds 1 and 2 point at two capture files (temporary, unlinked, O_APPEND);
between cells they point at /dev/null, so that:

  - output belongs to the cell during which it was written: what a
    background thread writes between two cells is no cell's and is dropped;
  - fds 0, 1 and 2 are never free between cells, so no file opened by any
    thread can take one of their numbers and be re-pointed or closed by
    the next cell's set-up (a cell that closed fd 1 gets it back).

fd 0 reads /dev/null and sys.stdin refuses at once with a clear message.
A watchdog thread punches a hole in the middle of a capture file that
grows far past the cell's cap, so a print loop cannot fill the disk.

The head-and-tail cut (join_capped) is the one rule of the Go side
(kernel.TrimCut and kernel.JoinCut in cut.go); the shell op uses it too.
"""

import fcntl
import io
import os
import sys
import tempfile
import threading
import time

STDIN_MESSAGE = "stdin is not available in this session"


def _private_fd(fd):
    os.set_inheritable(fd, False)
    return fd


def _capture_file():
    f = tempfile.TemporaryFile()
    fd = _private_fd(os.dup(f.fileno()))
    f.close()
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
    return fd


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


def no_input(prompt=""):
    """builtins.input: the session has no stdin."""
    raise RuntimeError(STDIN_MESSAGE)


def _text_stream(fd):
    return io.TextIOWrapper(
        io.FileIO(fd, "w", closefd=False),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
        write_through=True,
    )


def flush_streams():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:
            pass


# ---------------------------------------------------------------- the cut


def cap_text(data, cap):
    """Keep the head and the tail of data (bytes or str) within cap bytes."""
    b = data.encode("utf-8", "replace") if isinstance(data, str) else data
    if len(b) <= cap:
        return b.decode("utf-8", "replace"), 0
    half = max(cap // 2, 1)
    head = b[:half]
    tail = b[len(b) - half :]
    return join_capped(head, tail, len(b), b[len(b) - half - 1 : len(b) - half] == b"\n")


def join_capped(head, tail, size, tail_starts_line):
    """Trim a head and a tail kept from size bytes and join them around the
    dropped-bytes line. The head ends after its last newline when that lies
    in its second half, else on a whole UTF-8 character; the tail starts
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


# ---------------------------------------------------------------- capture files


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


class _Puncher:
    """The puncher, loaded (ctypes) on first need, not at start-up."""

    def __init__(self):
        self.fn = None
        self.looked = False

    def get(self):
        if not self.looked:
            self.fn, self.looked = _hole_puncher(), True
        return self.fn


_puncher = _Puncher()


class _Capture:
    """A capture file behind fd 1 or 2. While a cell runs, the watchdog frees
    the middle of the file once it passes a bound (a hole: offsets and the
    head and tail stay as they are)."""

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
        punch = _puncher.get()
        if punch is None:
            return
        if punch(self.fd, start, end - start):
            self.punched = end
        else:
            _puncher.fn = None  # this file system cannot: keep everything

    def drain(self, cap):
        """What the file holds (head and tail within cap), then empty it."""
        fd = self.fd
        size = os.fstat(fd).st_size
        if cap <= 0:
            text, dropped = "", size
        elif size <= cap:
            data = os.pread(fd, size, 0) if size else b""
            text, dropped = data.decode("utf-8", "replace"), 0
        else:
            half = max(cap // 2, 1)
            head = os.pread(fd, half, 0)
            tail = os.pread(fd, half, size - half)
            before = os.pread(fd, 1, size - half - 1)
            text, dropped = join_capped(head, tail, size, before == b"\n")
        os.ftruncate(fd, 0)
        self.punched = 0
        return text, dropped


class Capture:
    """The standard fds of the process, for cells and between them."""

    def __init__(self):
        self.out = _Capture()
        self.err = _Capture()
        self.null_in = _private_fd(os.open(os.devnull, os.O_RDONLY))
        self.null_out = _private_fd(os.open(os.devnull, os.O_WRONLY))
        self.streams = {}
        self.lock = threading.Lock()  # the files, between the watchdog and drain
        self.running = threading.Event()
        self.cap = 1 << 20
        os.dup2(self.null_in, 0)
        sys.stdin = sys.__stdin__ = _NoStdin()
        self.between()
        threading.Thread(target=self._watchdog, name="ctxcode-capture", daemon=True).start()

    def _streams(self):
        for name, fd in (("stdout", 1), ("stderr", 2)):
            s = self.streams.get(fd)
            if s is None or s.closed:
                s = self.streams[fd] = _text_stream(fd)
            setattr(sys, name, s)
            setattr(sys, "__%s__" % name, s)

    def begin(self, cap):
        """Point fds 0, 1 and 2 (and sys.stdout/err) at the cell's files,
        emptied first: what a child of an earlier cell wrote there since is
        no cell's."""
        with self.lock:
            self.out.drain(0)
            self.err.drain(0)
        os.dup2(self.null_in, 0)
        os.dup2(self.out.fd, 1)
        os.dup2(self.err.fd, 2)
        self._streams()
        with self.lock:
            self.cap = cap
            self.running.set()

    def end(self, cap):
        """The cell's stdout and stderr (each cut to cap) and the bytes
        dropped. fds 1 and 2 point at /dev/null first, so that what is
        written from now on is no cell's."""
        self.between()
        with self.lock:
            self.running.clear()
            out, d1 = self.out.drain(cap)
            err, d2 = self.err.drain(cap)
        return out, err, d1 + d2

    def between(self):
        """fds 0, 1 and 2 on /dev/null, and sys.stdout/err on them."""
        flush_streams()
        os.dup2(self.null_in, 0)
        os.dup2(self.null_out, 1)
        os.dup2(self.null_out, 2)
        self._streams()

    def _watchdog(self):
        while True:
            self.running.wait()
            time.sleep(0.05)
            with self.lock:
                if self.running.is_set():
                    cap = self.cap
                    for c in (self.out, self.err):
                        c.trim(cap, max(4 * cap, 8 << 20))
