// Package llm sends a session.Request to a chat model and returns its reply
// with what the call cost.
//
// A Model is anything that answers a request: the OpenAI-compatible client
// (OpenAI, OpenRouter, Ollama, vLLM and llama.cpp servers all speak the
// same chat-completions wire format, through go-openai) or the offline
// Reference model, which plays each built-in task's reference solution in
// the protocol of the request.
//
// # Requests
//
// A session.Request becomes one chat-completions request: its messages in
// order (system, user, assistant with its tool calls, tool with its
// tool_call_id), its tools as function tools whose parameters are
// session.Tool.Schema, and parallel_tool_calls false whenever there are
// tools, asking for at most one call per reply. Sampling is greedy by
// default (Config.Temperature 0); see Config for how a zero temperature and
// the output cap reach the wire.
//
// # Retries
//
// One Complete makes at most 1+Config.MaxRetries HTTP attempts, each bounded
// by Config.Timeout. An attempt is retried when the provider answers 408,
// 429 (except "insufficient_quota", which waiting does not cure) or any
// 5xx; when it does not answer within Config.Timeout; when the connection
// is reset or closed early (EOF); and, once, when a 2xx body is not a chat
// completion (not JSON, or no choices), which is treated as a server fault:
// a second such body ends the call, since a server that answers 200 with a
// web page (a wrong base URL, a captive proxy) will go on doing so.
// Everything else fails at once: 400, 401, 403, 404 and the other 4xx as an
// *APIError whose message says what to check, a request longer than the
// model's context window as an error that matches ErrContextLength, an
// unreachable server (connection refused, unknown host) as an error naming
// the base URL.
//
// Each retry is reported to Config.OnRetry, when set, before its wait
// (what failed, the wait, attempt k of n), so a command can show one
// progress line per retry. A call that retried and still failed says so in
// the same terms: "gave up after attempt k of n", with why when k < n (a
// failure that is not retried, a second reply that is not a completion).
//
// Clients that share an endpoint can share a Config.Gate: Complete waits
// for it before every attempt, the first included, tells it of every
// throttling reply (a retryable 429, or a 503 with Retry-After) with the
// wait it chose, before OnRetry and its own sleep, and of every reply the
// provider took. A Throttle shared that way makes a 429 to one client
// pause and slow all of them, and the replies after the pause restore
// their rate within a few requests.
//
// Between attempts Complete sleeps for the time the provider asked for
// (Retry-After in seconds or as an HTTP date, or retry-after-ms), capped at
// Config.RetryMax; without one, exponential backoff with equal jitter:
// retry n (from 0) waits a uniform time in [d/2, d] where
// d = min(RetryBase·2ⁿ, RetryMax). Sleeps and waits for the Gate watch the
// context: when it ends, Complete returns at once with an error that wraps
// the context's error.
// go-openai's errors carry no response headers, so the client wraps the
// HTTP client with a recorder that keeps each attempt's status, headers and
// the head of its body; the recorder travels in the attempt's context, so
// concurrent calls on one client never see each other's headers.
//
// # Usage
//
// Reply.Usage holds the provider's own counts: prompt and completion tokens,
// and the cached prompt tokens and reasoning tokens when it reports them.
// When it reports none (both prompt and completion zero), the counts are
// estimated with the tokenizer of Config.Encoding (the prompt with
// session.CountRequest, the completion from the reply's text, reasoning
// text and tool calls) and Usage.Estimated is set. Reply.RequestTokens is
// always the session.CountRequest estimate of the request, so request sizes
// compare across providers. Reply.Latency is the wall time of the whole
// Complete, retries, sleeps and waits for the Gate included; Attempts and
// Waited say how much of it was retrying and waiting. On error the Reply
// still carries these accounting fields.
//
// # Secrets
//
// The API key is sent only in the Authorization header. It never appears in
// an error, in Config.String or in a Reply; text a provider echoes back has
// the key replaced by "[redacted]".
//
// # Non-goals
//
// No streaming, no n>1 choices, no multi-modal content, no Responses API,
// no provider-specific request fields beyond the chat-completions ones
// above, and no HTTP client of our own: go-openai builds and decodes the
// requests.
package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ctxcode/ctxcode/session"
)

// Model is a chat model.
type Model interface {
	Name() string
	Complete(ctx context.Context, req session.Request) (Reply, error)
}

// Reply is a model's answer to one request and what it cost.
type Reply struct {
	Content      string
	ToolCalls    []session.ToolCall
	FinishReason string // as the provider says it: stop, length, tool_calls, content_filter, ...
	Usage        Usage
	// Latency is the wall time of the whole Complete call: every attempt,
	// every sleep between attempts and every wait for Config.Gate.
	Latency time.Duration
	// Attempts is how many HTTP attempts were made (1 = no retry).
	Attempts int
	// Waited is the total time slept between attempts plus the time spent
	// waiting for Config.Gate before attempts, the first included (part
	// of Latency).
	Waited time.Duration
	// RequestTokens is the session.CountRequest estimate of the request,
	// always filled, whatever the provider reports.
	RequestTokens int
}

// Usage is the token count of one or more calls (session.Usage: the
// trajectory's call events record it).
type Usage = session.Usage

// ErrContextLength matches (with errors.Is) the error of a request longer
// than the model's context window. It is never retried: the caller must
// send less.
var ErrContextLength = errors.New("the request is longer than the model's context window")

// APIError is an error status from the provider.
type APIError struct {
	Status  int    // the HTTP status
	Code    string // the provider's error code, e.g. "invalid_api_key", "context_length_exceeded"
	Type    string // the provider's error type, e.g. "invalid_request_error"
	Message string // the provider's message, with the API key redacted
	Model   string // the model the request named
	BaseURL string // where it was sent
}

// Error says what happened and what to check.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", e.Status)
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" " + t)
	}
	b.WriteString(" from " + e.BaseURL)
	if msg := strings.TrimSpace(e.Message); msg != "" {
		b.WriteString(": " + msg)
	}
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	b.WriteString("; " + e.hint())
	return b.String()
}

func (e *APIError) hint() string {
	switch {
	case e.contextLength():
		return "the request is longer than the context window of model " + strconv.Quote(e.Model) + ": send fewer or shorter messages"
	case e.Status == 401:
		return "the API key was refused: check OPENAI_API_KEY (it must be a key of the provider at " + e.BaseURL + ")"
	case e.Status == 403:
		return "the key may not use model " + strconv.Quote(e.Model) + ": check the key's permissions and that the provider serves your region"
	case e.Status == 404:
		return "check the model name " + strconv.Quote(e.Model) + " and the base URL " + e.BaseURL +
			" (an OpenAI-compatible API usually ends in /v1)"
	case e.Status == 429 && e.Code == "insufficient_quota":
		return "the account is out of quota: check its plan and billing"
	case e.Status == 429:
		return "rate limited: lower the parallelism or wait"
	case e.Status == 400 || e.Status == 422:
		return "the provider rejected the request: check it (model " + strconv.Quote(e.Model) +
			" may not support tools, seed, temperature or the output cap as sent)"
	case e.Status >= 500:
		return "the provider failed: try again later"
	}
	return "check the request, the model name " + strconv.Quote(e.Model) + " and the base URL"
}

// Is reports whether e is a context-length error, so that
// errors.Is(err, ErrContextLength) holds for one.
func (e *APIError) Is(target error) bool {
	return target == ErrContextLength && e.contextLength()
}

// contextLength recognises the context-length errors of the common
// servers: OpenAI's and vLLM's code, llama.cpp's type, and the wording of
// those that send only a message.
func (e *APIError) contextLength() bool {
	if e.Code == "context_length_exceeded" || e.Type == "exceed_context_size_error" {
		return true
	}
	msg := strings.ToLower(e.Message)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context window", "context length"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// retryable says whether waiting may cure the error.
func (e *APIError) retryable() bool {
	if e.contextLength() {
		return false
	}
	switch {
	case e.Status == 408:
		return true
	case e.Status == 429:
		return e.Code != "insufficient_quota"
	case e.Status >= 500:
		return true
	}
	return false
}
