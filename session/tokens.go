package session

import (
	"fmt"
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
