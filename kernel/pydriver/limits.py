"""The soft timeout of a cell: SIGALRM, raised only inside the cell's own code.

arm(seconds, in_cell) starts the cell's timer; disarm() stops it. When it
fires, CellTimeout is raised in the main thread, but only where a frame of
the cell's own code (in_cell says which file names are cells') is on the
stack: in the cell, in a function it called, in a library it is in; or
an asyncio loop runs (a top-level await: the cell's coroutine is
suspended in it, off the stack, and the loop is ended). When
the interpreter is in the driver's or IPython's own bookkeeping before or
after the cell's code (compiling, storing history, the display of a
value outside the cell's frames), the timeout is put off by a few
milliseconds until that ends, so that it never leaves the shell half-way
through its own work; the disarm at the end of the cell drops it. What is
left after a timeout is the namespace as the cell left it.

A cell that never returns to Python (a C loop) is not interrupted here;
the client's hard deadline kills the kernel.

The display of a cell's value runs inside the cell's frame (IPython calls
its displayhook from the cell's code), so a timeout can land in IPython's
own printing and leave it half-way: its clean-up then fails (the pretty
printer's IndexError), and IPython reports that failure. An exception
raised while this cell's timeout or interrupt was being handled is
reported as the timeout or interrupt it came from (outcome). A timeout
raised where Python cannot raise it (a __del__, a generator the collector
closes) is "ignored" by Python: it is fired again, so the cell still ends.

An interrupt (SIGINT, sent by the client's Interrupt: Ctrl-C in chat) takes
the same path at once: CellInterrupted is raised where the cell's code is,
and the namespace is kept. The driver counts them; each exec request says
how many the client had sent before it, so one that arrives before the
request is read still stops that cell, and a late one for an earlier cell
stops nothing.
"""

import signal
import sys


class CellTimeout(BaseException):
    """Raised inside a cell by the soft timeout."""


class CellInterrupted(BaseException):
    """Raised inside a cell by an interrupt (SIGINT) from the client."""


_RETRY = 0.005  # seconds: how soon a put-off timeout tries again
_LOOP_RUNS = ("run_until_complete", "run_forever")


def _asyncio_file(filename):
    return "/asyncio/" in filename


class _Timer:
    def __init__(self):
        self.armed = False
        self.interrupted = False
        self.received = 0  # SIGINTs received by this process
        self.allowed = 0  # of them, those sent before the running cell's request
        self.seconds = 0.0
        self.in_cell = None
        self.raised = None  # the exception raised in the running cell, if any

    def error(self):
        if self.interrupted:
            return CellInterrupted("the cell was interrupted; the namespace is kept")
        return CellTimeout("cell exceeded its timeout of %gs; the namespace is kept" % self.seconds)

    def on_interrupt(self, signum, frame):
        # Between cells there is nothing to stop (it is counted: one sent for
        # the next cell before its request was read stops it at arm); in a
        # cell, the alarm's own path raises it where the cell's code is.
        self.received += 1
        if self.armed and self.received > self.allowed:
            self.fire()

    def fire(self):
        self.interrupted = True
        signal.setitimer(signal.ITIMER_REAL, _RETRY)

    def on_alarm(self, signum, frame):
        if not self.armed:
            return  # a signal that came as the cell ended
        f = frame
        while f is not None:
            code = f.f_code
            if self.in_cell(code.co_filename) or (code.co_name in _LOOP_RUNS and _asyncio_file(code.co_filename)):
                self.armed = False
                self.raised = self.error()
                raise self.raised
            f = f.f_back
        signal.setitimer(signal.ITIMER_REAL, _RETRY)


_timer = _Timer()


def arm(seconds, in_cell, interrupts=0):
    """Start the cell's soft timeout of seconds; in_cell(filename) says
    whether a frame's code is the cell's; interrupts is how many the client
    had sent before the cell's request (an interrupt counted beyond them,
    even one that came before the request was read, is the cell's)."""
    _timer.seconds, _timer.in_cell, _timer.interrupted = seconds, in_cell, False
    _timer.raised = None
    _timer.allowed = interrupts
    signal.signal(signal.SIGALRM, _timer.on_alarm)  # a cell may have set its own
    signal.signal(signal.SIGINT, _timer.on_interrupt)
    _timer.armed = True
    if _timer.received > _timer.allowed:
        _timer.fire()
    else:
        signal.setitimer(signal.ITIMER_REAL, seconds)


def disarm():
    """Stop the timer; an alarm already on its way is dropped."""
    _timer.armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)


def fired(exc_type):
    return exc_type is not None and issubclass(exc_type, CellTimeout)


def outcome(exc):
    """The cell's outcome given the exc_info its shell reported: the
    timeout or interrupt raised in this cell when exc was raised while it
    was being handled (its __context__ chain holds it), else exc. Called
    once, after disarm: it lets go of what the timer raised."""
    raised, _timer.raised = _timer.raised, None  # its traceback holds the cell's frames
    if exc is None or raised is None:
        return exc
    e, seen = exc[1], set()
    while e is not None and id(e) not in seen:
        if e is raised:
            return type(e), e, e.__traceback__
        seen.add(id(e))
        e = e.__context__
    return exc


def _unraisable(previous):
    def hook(unraisable):
        if unraisable.exc_value is not None and unraisable.exc_value is _timer.raised and not _timer.armed:
            # Python dropped it (a __del__, a generator closed by the
            # collector): the cell never got it, so it is fired again.
            _timer.armed = True
            signal.setitimer(signal.ITIMER_REAL, _RETRY)
            return
        previous(unraisable)

    return hook


def listen():
    """Take SIGINT for interrupts (the client's Interrupt): a cell's is
    raised in it as CellInterrupted; one between cells is dropped, so that
    the request loop never dies of it. A timeout or interrupt Python drops
    as unraisable is fired again."""
    signal.signal(signal.SIGINT, _timer.on_interrupt)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
