"""The kernel protocol's wire: one JSON object a line, on private fds.

Channel takes duplicates of fds 0 and 1 as they were when the process
started (the client's pipe or the container's attach stream); after that,
fds 0, 1 and 2 belong to capture. Requests are read whole, a line at a
time; a response is written whole even when a signal cuts a write short.
The ops and the fields of requests and responses are specified in the Go
package kernel.
"""

import json
import os


class Channel:
    def __init__(self):
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        self.buf = bytearray()
        self.eof = False

    def readline(self):
        """The next request line (bytes), or b"" at the end of the input."""
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
            data = os.read(self.rfd, 1 << 16)
            if not data:
                self.eof = True
            self.buf += data

    def send(self, obj):
        """Write one response line, all of it."""
        data = memoryview(json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace") + b"\n")
        while data:
            data = data[os.write(self.wfd, data) :]


def error(rid, name, message):
    """A response for a request the driver could not take."""
    return {"id": rid, "status": "error", "error": {"name": name, "value": message, "traceback": ""}}


def parse(line):
    """The request in line, or raises ValueError saying what is wrong."""
    req = json.loads(line)
    if not isinstance(req, dict):
        raise ValueError("request is not a JSON object")
    return req
