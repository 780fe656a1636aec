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

var codecs sync.Map // Encoding -> func() (tokenizer.Codec, error), loading once

// CheckEncoding says whether enc names a vocabulary ctxcode counts with
// (empty is the default, o200k_base), without loading it: loading takes
// tens of milliseconds, which a command's start need not wait for.
func CheckEncoding(enc Encoding) error {
	switch enc {
	case "", O200kBase, Cl100kBase:
		return nil
	}
	return fmt.Errorf("unknown token encoding %q: expected %s or %s", enc, O200kBase, Cl100kBase)
}

// codec is enc's vocabulary, loaded on first use, once per process:
// counts made at the same time (CountLater) wait for the one load.
func codec(enc Encoding) (tokenizer.Codec, error) {
	if err := CheckEncoding(enc); err != nil {
		return nil, err
	}
	if enc == "" {
		enc = O200kBase
	}
	load, ok := codecs.Load(enc)
	if !ok {
		load, _ = codecs.LoadOrStore(enc, sync.OnceValues(func() (tokenizer.Codec, error) {
			c, err := tokenizer.Get(tokenizer.Encoding(enc))
			if err != nil {
				return nil, fmt.Errorf("load %s: %w", enc, err)
			}
			return c, nil
		}))
	}
	return load.(func() (tokenizer.Codec, error))()
}

// CountTokens counts the tokens of text in a real vocabulary (the default
// when enc is empty: o200k_base).
func CountTokens(enc Encoding, text string) (int, error) {
	c, err := codec(enc)
	if err != nil {
		return 0, err
	}
	return c.Count(text)
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
	return countRequest(r, func(s string) (int, error) { return CountTokens(enc, s) })
}

// BoundRequest is at least CountRequest's count of r in every vocabulary,
// found without one: a token is at least one byte, so a text has at most
// as many tokens as bytes. A budget check it passes needs no exact count.
func BoundRequest(r Request) int {
	n, _ := countRequest(r, func(s string) (int, error) { return len(s), nil })
	return n
}

// CountLater counts r as CountRequest does, in a goroutine of its own, so
// that the count is made while the request is on its way. The function it
// returns waits for the count; call it before returning (at least once:
// it is how the goroutine is joined).
func CountLater(enc Encoding, r Request) func() (int, error) {
	done := make(chan struct{})
	var n int
	var err error
	go func() {
		defer close(done)
		n, err = CountRequest(enc, r)
	}()
	return func() (int, error) {
		<-done
		return n, err
	}
}

// countRequest is the cookbook's arithmetic over r, with tokens of a text
// counted by tokens.
func countRequest(r Request, tokens func(string) (int, error)) (int, error) {
	total := tokensReplyPrimer
	count := func(s string) error {
		if s == "" {
			return nil
		}
		n, err := tokens(s)
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

// Usage is the token count of one or more calls.
// Its JSON form uses the provider's field names.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`     // all prompt tokens, the cached ones included
	CompletionTokens int `json:"completion_tokens"` // all output tokens, the reasoning ones included
	CachedTokens     int `json:"cached_tokens"`     // prompt tokens served from the provider's cache
	ReasoningTokens  int `json:"reasoning_tokens"`  // output tokens spent on hidden reasoning
	// Estimated says the counts came from the tokenizer because the
	// provider reported none.
	Estimated bool `json:"estimated"`
}

// Add adds v's counts to u; the sum is Estimated if either part is.
func (u *Usage) Add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.CachedTokens += v.CachedTokens
	u.ReasoningTokens += v.ReasoningTokens
	u.Estimated = u.Estimated || v.Estimated
}
