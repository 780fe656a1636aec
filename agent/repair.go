package agent

import (
	"regexp"
	"strconv"
	"strings"
)

// Repairs of obvious mistakes in a model's message, each disclosed: the
// cell's output begins with one short note saying what was changed. A
// repair only removes what is not code (fences, prompts, prose around a
// single block); it never rewrites what the code means.

var (
	fenceRE  = regexp.MustCompile("(?m)^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[ \t]*$")
	inRE     = regexp.MustCompile(`^In \[\d+\]: ?`)
	contRE   = regexp.MustCompile(`^ *\.\.\.: ?`)
	answerRE = regexp.MustCompile(`(?s)^\s*ANSWER\s*:\s*(.*?)\s*$`)
)

// block is a fenced code block of a message.
type block struct {
	lang       string
	code       string
	start, end int // byte offsets of the whole block, fences included
}

// blocks finds the fenced code blocks of msg; an unclosed last fence runs to
// the end of the message.
func blocks(msg string) []block {
	var out []block
	locs := fenceRE.FindAllStringSubmatchIndex(msg, -1)
	for i := 0; i < len(locs); i += 2 {
		open := locs[i]
		b := block{lang: msg[open[2]:open[3]], start: open[0]}
		bodyStart := open[1]
		if bodyStart < len(msg) && msg[bodyStart] == '\n' {
			bodyStart++
		}
		if i+1 < len(locs) {
			closing := locs[i+1]
			b.code = msg[bodyStart:closing[0]]
			b.end = closing[1]
		} else {
			b.code = msg[bodyStart:]
			b.end = len(msg)
		}
		b.code = strings.TrimRight(b.code, "\n")
		out = append(out, b)
	}
	return out
}

// repairCell turns a model's message into the code of the next cell, and
// says what it changed: Markdown fences around it, prose before or after a
// single fenced block, and leading "In [n]:", ">>>" and "..." prompts.
// A message with several fenced blocks is left alone: which of them the
// model meant is not obvious.
func repairCell(msg string) (code string, notes []string) {
	code = msg
	if bs := blocks(msg); len(bs) == 1 {
		b := bs[0]
		before, after := msg[:b.start], msg[b.end:]
		code = b.code
		notes = append(notes, "removed the Markdown fences around your code")
		switch {
		case strings.TrimSpace(before) == "" && strings.TrimSpace(after) == "":
		case isProse(before) && isProse(after):
			notes = append(notes, "removed the prose around the code block; only the code runs")
		default:
			// Code outside the fences is code: keep it, in order.
			code = strings.Trim(before, "\n") + "\n" + b.code + "\n" + strings.Trim(after, "\n")
		}
	}
	if stripped, ok := stripPrompts(code); ok {
		code = stripped
		notes = append(notes, "removed the interpreter prompts (In [n]:, >>>, ...) before the lines")
	}
	return strings.Trim(code, "\n"), notes
}

// stripPrompts removes interpreter prompts when every line that is not
// blank carries one: IPython's "In [n]:" and "...:", or the standard
// ">>> " and "... ".
func stripPrompts(code string) (string, bool) {
	lines := strings.Split(strings.Trim(code, "\n"), "\n")
	if len(lines) == 0 {
		return code, false
	}
	first := strings.TrimLeft(lines[0], " ")
	switch {
	case inRE.MatchString(first):
		for i, l := range lines {
			switch {
			case strings.TrimSpace(l) == "":
			case i == 0:
				lines[i] = inRE.ReplaceAllString(first, "")
			case contRE.MatchString(l):
				lines[i] = contRE.ReplaceAllString(l, "")
			default:
				return code, false
			}
		}
	case strings.HasPrefix(first, ">>>"):
		for i, l := range lines {
			switch {
			case strings.TrimSpace(l) == "":
			case strings.HasPrefix(l, ">>> ") || l == ">>>":
				lines[i] = strings.TrimPrefix(strings.TrimPrefix(l, ">>>"), " ")
			case strings.HasPrefix(l, "... ") || l == "...":
				lines[i] = strings.TrimPrefix(strings.TrimPrefix(l, "..."), " ")
			default:
				return code, false
			}
		}
	default:
		return code, false
	}
	return strings.Join(lines, "\n"), true
}

// textAnswer reads a plain-text "ANSWER: <value>" message: an answer the
// model stated rather than computed.
func textAnswer(msg string) (string, bool) {
	if len(blocks(msg)) > 0 {
		return "", false
	}
	m := answerRE.FindStringSubmatch(msg)
	if m == nil || strings.Contains(m[1], "\n") || m[1] == "" {
		return "", false
	}
	return m[1], true
}

// oneShotCode takes the one code block of a one-shot reply: the only fenced
// block; among several, the last one that calls ANSWER (said in a note);
// with none, the whole reply, prompts removed.
func oneShotCode(msg string) (code string, notes []string) {
	bs := blocks(msg)
	switch {
	case len(bs) == 0:
		code = strings.Trim(msg, "\n")
		if stripped, ok := stripPrompts(code); ok {
			code = stripped
			notes = append(notes, "removed the interpreter prompts (In [n]:, >>>, ...) before the lines")
		}
		return code, notes
	case len(bs) == 1:
		return repairCell(msg)
	}
	pick := len(bs) - 1
	for i := len(bs) - 1; i >= 0; i-- {
		if strings.Contains(bs[i].code, "ANSWER(") {
			pick = i
			break
		}
	}
	why := "the last that calls ANSWER"
	if !strings.Contains(bs[pick].code, "ANSWER(") {
		why = "the last; none calls ANSWER"
	}
	return strings.Trim(bs[pick].code, "\n"), []string{"your reply had " + strconv.Itoa(len(bs)) + " code blocks; ran block " + strconv.Itoa(pick+1) + ", " + why}
}

// isProse says whether text outside a code block reads as sentences, not
// code: every line that is not blank has none of the characters code is
// made of, and ends like a sentence or starts like one.
func isProse(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, "()[]{}=<>+*/\\`") {
			return false
		}
		words := strings.Fields(line)
		endsLikeSentence := strings.ContainsAny(line[len(line)-1:], ".!?:")
		startsLikeSentence := len(words) >= 3 && line[0] >= 'A' && line[0] <= 'Z'
		if !endsLikeSentence && !startsLikeSentence {
			return false
		}
	}
	return true
}
