// Package llmtest is a scripted HTTP server speaking the OpenAI chat
// completions wire format, for tests that must reach a model over real HTTP.
//
// A Server answers each POST to /chat/completions with the next scripted
// Reply, records every request body, and, when the test ends, fails the
// test if a scripted reply was never consumed or a request came with none
// left. It never fails the test from the handler's goroutine with Fatal.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ctxcode/ctxcode/session"
)

// Reply is one scripted response.
type Reply struct {
	Status int         // HTTP status; 0 is 200
	Header http.Header // extra response headers, e.g. Retry-After
	// Body is sent as is when set; otherwise a chat.completion is built
	// from Content, ToolCalls and Usage (or, for an error status, an error
	// object from ErrorCode and ErrorMessage).
	Body         string
	Content      string
	ToolCalls    []session.ToolCall
	Usage        *Usage // nil: the response carries no usage
	FinishReason string
	ErrorCode    string
	ErrorMessage string
	Delay        time.Duration // wait before answering (the request's cancellation ends the wait)
	Hangup       bool          // close the connection without answering
	// OnRequest, when set, is called in the handler's goroutine as the
	// request for this reply has been read, before Delay: a test acts on
	// the moment a request came (releases a cell that waits for it). The
	// reply waits for it to return. It must not fail the test with Fatal.
	OnRequest func()
}

// Usage is the usage object of a response.
type Usage struct {
	Prompt, Completion, Cached, Reasoning int
}

// Text is a 200 reply with content and usage.
func Text(content string, prompt, completion int) Reply {
	return Reply{Content: content, Usage: &Usage{Prompt: prompt, Completion: completion}}
}

// Error is an error reply.
func Error(status int, code, message string) Reply {
	return Reply{Status: status, ErrorCode: code, ErrorMessage: message}
}

// Request is one request the server received.
type Request struct {
	Header http.Header
	Raw    []byte
	Body   RequestBody
	At     time.Time // when the server began to read it
}

// RequestBody is the part of a chat completion request tests look at.
type RequestBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Temperature       *float64 `json:"temperature"`
	MaxTokens         int      `json:"max_tokens"`
	Seed              *int     `json:"seed"`
	ParallelToolCalls *bool    `json:"parallel_tool_calls"`
}

// Server is a scripted OpenAI-compatible endpoint; URL is its base URL
// (ending in /v1).
type Server struct {
	URL string

	t        testing.TB
	mu       sync.Mutex
	replies  []Reply
	next     int
	requests []Request
}

// NewServer starts a server that answers with replies in order; it stops
// when the test ends.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{t: t, replies: replies}
	hs := httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = hs.URL + "/v1"
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.replies) {
			t.Errorf("llmtest: %d of %d scripted replies were never requested", len(s.replies)-s.next, len(s.replies))
		}
	})
	return s
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("llmtest: read request: %v", err)
		return
	}
	req := Request{Header: r.Header.Clone(), Raw: raw, At: at}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.t.Errorf("llmtest: request body is not a chat completion request: %v\n%s", err, raw)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		s.t.Errorf("llmtest: unexpected %s %s", r.Method, r.URL.Path)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if s.next >= len(s.replies) {
		s.mu.Unlock()
		s.t.Errorf("llmtest: request %d came, but only %d replies were scripted", len(s.requests), len(s.replies))
		http.Error(w, `{"error":{"message":"no scripted reply left","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	reply := s.replies[s.next]
	s.next++
	s.mu.Unlock()

	if reply.OnRequest != nil {
		reply.OnRequest()
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Hangup {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			s.t.Errorf("llmtest: hang up: %v", err)
			return
		}
		_ = conn.Close()
		return
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	body := reply.Body
	if body == "" {
		body = s.body(reply, status, req.Body.Model)
	}
	w.Header().Set("Content-Type", "application/json")
	for k, vs := range reply.Header {
		w.Header().Del(k)
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (s *Server) body(r Reply, status int, model string) string {
	if status >= 400 {
		msg := r.ErrorMessage
		if msg == "" {
			msg = http.StatusText(status)
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nullable(r.ErrorCode), "param": nil}})
		return string(b)
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": r.Content}
	finish := r.FinishReason
	if len(r.ToolCalls) > 0 {
		var calls []call
		for _, c := range r.ToolCalls {
			calls = append(calls, call{c.ID, "function", fn{c.Name, c.Arguments}})
		}
		msg["tool_calls"] = calls
		if r.Content == "" {
			msg["content"] = nil
		}
		if finish == "" {
			finish = "tool_calls"
		}
	}
	if finish == "" {
		finish = "stop"
	}
	s.mu.Lock()
	n := len(s.requests)
	s.mu.Unlock()
	resp := map[string]any{
		"id": "chatcmpl-" + strconv.Itoa(n), "object": "chat.completion", "created": 1764460800, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
	}
	if u := r.Usage; u != nil {
		resp["usage"] = map[string]any{
			"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion,
			"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached},
			"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		}
	}
	b, _ := json.Marshal(resp)
	return string(b)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
