package session

import (
	"fmt"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding names a tokenizer vocabulary.
type Encoding string

// Vocabularies ctxcode counts with.
const (
	O200kBase  Encoding = "o200k_base" // GPT-4o and later; the default
	Cl100kBase Encoding = "cl100k_base"
)

var codecs sync.Map // Encoding -> tokenizer.Codec

// CountTokens counts the tokens of text in a real vocabulary (the default
// when enc is empty: o200k_base).
func CountTokens(enc Encoding, text string) (int, error) {
	if enc == "" {
		enc = O200kBase
	}
	c, ok := codecs.Load(enc)
	if !ok {
		var err error
		switch enc {
		case O200kBase, Cl100kBase:
			c, err = tokenizer.Get(tokenizer.Encoding(enc))
		default:
			return 0, fmt.Errorf("unknown token encoding %q: expected %s or %s", enc, O200kBase, Cl100kBase)
		}
		if err != nil {
			return 0, fmt.Errorf("load %s: %w", enc, err)
		}
		c, _ = codecs.LoadOrStore(enc, c)
	}
	return c.(tokenizer.Codec).Count(text)
}

// RenderCells is cells as one IPython-style transcript, a blank line
// between cells: what the one-shot (transcript) protocol shows the model.
func RenderCells(cells []Cell) string {
	var out []byte
	for i, c := range cells {
		if i > 0 {
			out = append(out, '\n')
		}
		out = append(out, c.Render()...)
	}
	return string(out)
}

// Framing costs of the chat format, from the OpenAI cookbook ("How to count
// tokens with tiktoken", the gpt-4o family): every message costs 3 tokens
// besides its role and content, a reply is primed with 3, and a request
// with functions costs 7 per function, 3 for its properties, 3 per
// property and 12 once at the end.
const (
	tokensPerMessage  = 3
	tokensReplyPrimer = 3
	tokensPerFunction = 7
	tokensProperties  = 3
	tokensPerProperty = 3
	tokensFunctionEnd = 12
)

// CountRequest counts the prompt tokens of a request the way the OpenAI
// cookbook does for chat models: message framing, roles, contents, tool
// schemas and the reply primer. Tool calls inside assistant messages, which
// the cookbook does not cover, count as their function name, arguments and
// the framing of a message. The figure is an estimate used when a provider
// reports no usage; providers' own counts win.
func CountRequest(enc Encoding, r Request) (int, error) {
	total := tokensReplyPrimer
	count := func(s string) error {
		if s == "" {
			return nil
		}
		n, err := CountTokens(enc, s)
		total += n
		return err
	}
	for _, m := range r.Messages {
		total += tokensPerMessage
		if err := count(m.Role); err != nil {
			return 0, err
		}
		if err := count(m.Content); err != nil {
			return 0, err
		}
		for _, c := range m.ToolCalls {
			total += tokensPerMessage
			if err := count(c.Name); err != nil {
				return 0, err
			}
			if err := count(c.Arguments); err != nil {
				return 0, err
			}
		}
	}
	if len(r.Tools) > 0 {
		for _, t := range r.Tools {
			total += tokensPerFunction
			if err := count(t.Name + ":" + strings.TrimSuffix(t.Description, ".")); err != nil {
				return 0, err
			}
			if len(t.Parameters) > 0 {
				total += tokensProperties
			}
			for _, p := range t.Parameters {
				total += tokensPerProperty
				if err := count(p.Name + ":" + p.TypeName() + ":" + strings.TrimSuffix(p.Description, ".")); err != nil {
					return 0, err
				}
			}
		}
		total += tokensFunctionEnd
	}
	return total, nil
}
