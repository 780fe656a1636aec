package kernel

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The head-and-tail cut: one rule for every place that shortens long text
// for a reader — a kernel's output cap, the stderr kept of a dead process,
// the session's output budget, a note that quotes an error. The middle
// goes; the head and the tail stay, because output says what it is at its
// start and how it ended at its end. The rule (the Python driver's
// join_capped in kernel/pydriver/capture.py follows it too):
//
//   - the head ends after its last newline when that newline lies in the
//     head's second half, else on a whole UTF-8 character;
//   - the tail starts after its first newline when that newline lies in the
//     tail's first half, unless the tail already starts a line; else on a
//     whole UTF-8 character;
//   - what was left out is counted, and the text says so: kernels with the
//     line DroppedLine(n), the session with a note of its own.

// Cut keeps the head and the tail of s, keep characters (runes) in all
// before the rule trims them (half each, the odd one to the tail), and
// says how many characters were left out. A string that fits is its own
// head, with no tail.
func Cut(s string, keep int) (head, tail string, dropped int) {
	n := utf8.RuneCountInString(s)
	if n <= keep {
		return s, "", 0
	}
	keep = max(keep, 0)
	headN := keep / 2
	tailN := keep - headN
	headEnd, tailStart := byteOffset(s, headN), byteOffset(s, n-tailN)
	startsLine := tailStart > 0 && s[tailStart-1] == '\n'
	head, tail = TrimCut(s[:headEnd], s[tailStart:], startsLine)
	return head, tail, n - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
}

// byteOffset is the offset in s of its rune number i.
func byteOffset(s string, i int) int {
	for off := range s {
		if i == 0 {
			return off
		}
		i--
	}
	return len(s)
}

// TrimCut trims a head and a tail kept from a longer text by the rule
// above; tailStartsLine says the byte just before the tail is a newline.
func TrimCut(head, tail string, tailStartsLine bool) (string, string) {
	if i := strings.LastIndexByte(head, '\n'); i >= 0 && i >= len(head)/2 {
		head = head[:i+1]
	} else {
		head = trimRuneEnd(head)
	}
	if !tailStartsLine {
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
			tail = tail[i+1:]
		} else {
			tail = trimRuneStart(tail)
		}
	}
	return head, tail
}

// trimRuneEnd drops an incomplete UTF-8 sequence at the end of s.
func trimRuneEnd(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// trimRuneStart drops continuation bytes at the start of s.
func trimRuneStart(s string) string {
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}

// DroppedLine is the line, without its newline, that stands for the n
// bytes a kernel left out of a stream at its cap: "... [n bytes dropped] ...".
func DroppedLine(n int64) string { return "... [" + strconv.FormatInt(n, 10) + " bytes dropped] ..." }

// JoinCut writes a head and a tail around DroppedLine(dropped) on a line of
// its own, as kernels report output cut at their cap; with nothing
// dropped, it is head and tail as they are.
func JoinCut(head, tail string, dropped int64) string {
	if dropped == 0 {
		return head + tail
	}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 40)
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(DroppedLine(dropped))
	b.WriteByte('\n')
	b.WriteString(tail)
	return b.String()
}

var droppedLineRE = regexp.MustCompile(`(?m)^\.\.\. \[(\d+) bytes dropped\] \.\.\.$`)

// DroppedIn is the number of bytes a kernel's DroppedLine in text says it
// left out at its cap, 0 when text has no such line: what text holds is
// then all there is, and nothing keeps the rest.
func DroppedIn(text string) int64 {
	m := droppedLineRE.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
