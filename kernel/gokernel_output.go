package kernel

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// goCapWriter keeps the first and the last bytes written to it, up to limit
// bytes in all, and counts the rest. Its memory never exceeds about limit
// bytes, however much is written. Write never fails.
type goCapWriter struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // a ring once it holds tailMax bytes
	tailStart        int    // index of the oldest byte in tail once the ring is full
	beforeTail       byte   // the byte just before the tail, once bytes were dropped
	total            int64
}

func newGoCapWriter(limit int) *goCapWriter {
	if limit < 0 {
		limit = 0
	}
	return &goCapWriter{headMax: limit / 2, tailMax: limit - limit/2}
}

func (c *goCapWriter) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		take := min(room, len(p))
		c.head = append(c.head, p[:take]...)
		p = p[take:]
	}
	if len(p) == 0 || c.tailMax == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		if len(p) > c.tailMax {
			c.beforeTail = p[len(p)-c.tailMax-1]
		} else if len(c.tail) > 0 {
			c.beforeTail = c.tail[(c.tailStart+len(c.tail)-1)%len(c.tail)] // the newest byte
		}
		if cap(c.tail) < c.tailMax {
			c.tail = make([]byte, 0, c.tailMax)
		}
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		c.tailStart = 0
		return n, nil
	}
	if room := c.tailMax - len(c.tail); room > 0 {
		take := min(room, len(p))
		c.tail = append(c.tail, p[:take]...)
		p = p[take:]
	}
	for len(p) > 0 {
		// The k oldest bytes are evicted; the last of them comes just
		// before the new oldest byte.
		k := min(len(p), c.tailMax-c.tailStart)
		c.beforeTail = c.tail[c.tailStart+k-1]
		copy(c.tail[c.tailStart:], p[:k])
		p = p[k:]
		c.tailStart = (c.tailStart + k) % c.tailMax
	}
	return n, nil
}

// result returns the kept text and the number of bytes left out, cut and
// joined by the one rule of Cut (see cut.go).
func (c *goCapWriter) result() (string, int64) {
	tail := make([]byte, 0, len(c.tail))
	tail = append(tail, c.tail[c.tailStart:]...)
	tail = append(tail, c.tail[:c.tailStart]...)
	if int64(len(c.head)+len(tail)) == c.total {
		return string(c.head) + string(tail), 0
	}
	head, kept := TrimCut(string(c.head), string(tail), c.beforeTail == '\n')
	dropped := c.total - int64(len(head)+len(kept))
	return JoinCut(head, kept, dropped), dropped
}

// goStream carries one output stream of the interpreter (stdout or stderr)
// through an OS pipe into the capture of the running cell. The interpreter
// (and, in ServeGoStdio, fd 1) writes into w; a drain goroutine reads the
// pipe and forwards to the current sink. To know that everything written
// during a cell has arrived, end writes a random marker into the pipe and
// waits until the drain loop has seen it.
type goStream struct {
	r, w   *os.File
	marker []byte
	synced chan struct{} // one value per marker seen
	done   chan struct{} // closed when the drain loop returns

	// sink is nil between cells: what the drain loop reads then (written
	// by a goroutine a cell left running) is dropped; what it has not read
	// yet when the next cell begins goes to that cell.
	mu   sync.Mutex
	sink *goCapWriter
}

func newGoStream() (*goStream, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, fmt.Errorf("make sync marker: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make output pipe: %w", err)
	}
	s := &goStream{
		r: r,
		w: w,
		// \x00 only first and \x01 only last: no proper prefix of the
		// marker is also a suffix of it, so output that ends like the start
		// of the marker can never combine with the marker into an early match.
		marker: []byte("\x00ctxcode-sync-" + hex.EncodeToString(nonce[:]) + "\x01"),
		synced: make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	go s.drain()
	return s, nil
}

func (s *goStream) drain() {
	defer close(s.done)
	buf := make([]byte, 64<<10)
	var carry []byte // a possible start of the marker, held back
	for {
		n, err := s.r.Read(buf)
		data := buf[:n]
		if len(carry) > 0 {
			data = append(carry, data...)
			carry = nil
		}
		for {
			i := bytes.Index(data, s.marker)
			if i < 0 {
				break
			}
			s.forward(data[:i])
			data = data[i+len(s.marker):]
			select {
			case s.synced <- struct{}{}:
			default:
			}
		}
		k := goMarkerPrefixLen(data, s.marker)
		s.forward(data[:len(data)-k])
		if k > 0 {
			carry = append([]byte(nil), data[len(data)-k:]...)
		}
		if err != nil {
			s.forward(carry)
			return
		}
	}
}

// goMarkerPrefixLen returns the length of the longest suffix of data that is
// a proper prefix of marker.
func goMarkerPrefixLen(data, marker []byte) int {
	for k := min(len(data), len(marker)-1); k > 0; k-- {
		if bytes.HasSuffix(data, marker[:k]) {
			return k
		}
	}
	return 0
}

func (s *goStream) forward(p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	if s.sink != nil {
		s.sink.Write(p)
	}
	s.mu.Unlock()
}

// begin starts capturing into a fresh sink that keeps at most limit bytes.
func (s *goStream) begin(limit int) {
	for len(s.synced) > 0 { // a late signal from a sync that timed out
		<-s.synced
	}
	s.mu.Lock()
	s.sink = newGoCapWriter(limit)
	s.mu.Unlock()
}

// goSyncWait bounds how long end waits for its marker; the drain loop never
// blocks, so it is only reached if the pipe is broken.
const goSyncWait = 5 * time.Second

// end waits until everything written so far has been drained, stops
// capturing and returns what was captured.
func (s *goStream) end() (string, int64) {
	if _, err := s.w.Write(s.marker); err == nil {
		t := time.NewTimer(goSyncWait)
		select {
		case <-s.synced:
		case <-s.done:
		case <-t.C:
		}
		t.Stop()
	}
	s.mu.Lock()
	sink := s.sink
	s.sink = nil
	s.mu.Unlock()
	if sink == nil {
		return "", 0
	}
	return sink.result()
}

func (s *goStream) close() error {
	werr := s.w.Close()
	rerr := s.r.Close() // unblocks the drain loop's Read
	<-s.done
	if werr != nil {
		return werr
	}
	return rerr
}

// goPanicLine matches the line yaegi writes to the interpreter's stderr for
// each interpreted frame a panic unwinds, e.g. "In[4]:2:9: panic: main.h(...)".
var goPanicLine = regexp.MustCompile(`^(\S+): panic: (\S*)\(\.\.\.\)\n?$`)

// goPanicFrame is one such line: where the panic passed and in which function.
type goPanicFrame struct {
	pos, fn string
}

// goStderr is the interpreter's stderr: it takes yaegi's panic-frame lines
// aside (they become the traceback) and passes everything else on to the
// stderr pipe, so that the cell's stderr holds only what the code wrote.
type goStderr struct {
	w *os.File

	mu     sync.Mutex
	frames []goPanicFrame
}

// goMaxFrames bounds the panic frames kept for one evaluation.
const goMaxFrames = 64

func (e *goStderr) Write(p []byte) (int, error) {
	if m := goPanicLine.FindSubmatch(p); m != nil {
		e.mu.Lock()
		if len(e.frames) < goMaxFrames {
			e.frames = append(e.frames, goPanicFrame{pos: goCleanPos(string(m[1])), fn: string(m[2])})
		}
		e.mu.Unlock()
		return len(p), nil
	}
	return e.w.Write(p)
}

// takeFrames returns the frames recorded since the last call, innermost first.
func (e *goStderr) takeFrames() []goPanicFrame {
	e.mu.Lock()
	defer e.mu.Unlock()
	f := e.frames
	e.frames = nil
	return f
}

// goFormatValues renders the results of a cell's final expression: nothing
// for a single nil, strings quoted as by strconv.Quote, anything else as by
// fmt's %v; several results (a multi-valued call) as "(a, b)". The text is
// capped at limit bytes like the output streams.
func goFormatValues(vals []any, limit int) (string, int64) {
	if len(vals) == 0 || len(vals) == 1 && goIsNil(vals[0]) {
		return "", 0
	}
	w := newGoCapWriter(limit)
	if len(vals) > 1 {
		w.Write([]byte("("))
	}
	for i, v := range vals {
		if i > 0 {
			w.Write([]byte(", "))
		}
		goFormatValue(w, v)
	}
	if len(vals) > 1 {
		w.Write([]byte(")"))
	}
	return w.result()
}

func goFormatValue(w *goCapWriter, v any) {
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() == reflect.String {
		w.Write([]byte(strconv.Quote(rv.String())))
		return
	}
	fmt.Fprintf(w, "%v", v)
}

// goIsNil reports whether v is nil or a nil pointer, func, channel or interface.
func goIsNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
