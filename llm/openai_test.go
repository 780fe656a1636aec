package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/session"
)

const testKey = "sk-test-0123456789-secret"

// requestBody is the n-th request f received (from 0), decoded.
func requestBody(t *testing.T, f *llmtest.Server, n int) map[string]any {
	t.Helper()
	reqs := f.Requests()
	require.Greater(t, len(reqs), n, "request %d was made", n)
	var body map[string]any
	require.NoError(t, json.Unmarshal(reqs[n].Raw, &body))
	return body
}

// authorization is the Authorization header of the n-th request.
func authorization(f *llmtest.Server, n int) string {
	return f.Requests()[n].Header.Get("Authorization")
}

// completion is a chat-completion body with one choice.
func completion(content, usage string) string {
	return completionWith(fmt.Sprintf(`{"role":"assistant","content":%q}`, content), "stop", usage)
}

func completionWith(message, finish, usage string) string {
	b := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model","choices":[{"index":0,"message":` +
		message + `,"finish_reason":"` + finish + `"}]`
	if usage != "" {
		b += `,"usage":` + usage
	}
	return b + "}"
}

const plainUsage = `{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}`

func errorBody(message, typ, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code}})
	return string(b)
}

// testConfig is a fast configuration against f.
func testConfig(f *llmtest.Server) Config {
	return Config{
		Model:     "test-model",
		BaseURL:   f.URL,
		APIKey:    testKey,
		RetryBase: 10 * time.Millisecond,
		RetryMax:  50 * time.Millisecond,
	}
}

func newClient(t *testing.T, cfg Config) *OpenAI {
	t.Helper()
	c, err := NewOpenAI(cfg)
	require.NoError(t, err)
	return c
}

// simpleRequest is a bare request: a system message and a question.
func simpleRequest() session.Request {
	return session.Request{Protocol: session.Bare, Stable: 1, Messages: []session.Message{
		{Role: "system", Content: "Each message you send is run as the next cell."},
		{Role: "user", Content: "How many tasks are overdue?"},
	}}
}

// evalRequest is an eval request with a finished cell.
func evalRequest() session.Request {
	return session.Request{
		Protocol: session.Eval,
		Tools:    []session.Tool{session.EvalTool("")},
		Stable:   1,
		Messages: []session.Message{
			{Role: "system", Content: "Run code with the eval tool."},
			{Role: "user", Content: "How many tasks are overdue?"},
			{Role: "assistant", Content: "Let me count.", ToolCalls: []session.ToolCall{{ID: "cell_1", Name: "eval", Arguments: `{"code":"len(tasks)"}`}}},
			{Role: "tool", ToolCallID: "cell_1", Content: "Out[3]: 42"},
		},
	}
}

func TestCompleteSuccess(t *testing.T) {
	f := llmtest.NewServer(t, llmtest.Reply{Body: completion("len(tasks)",
		`{"prompt_tokens":1200,"completion_tokens":90,"total_tokens":1290,`+
			`"prompt_tokens_details":{"cached_tokens":1024},"completion_tokens_details":{"reasoning_tokens":64}}`)})
	c := newClient(t, testConfig(f))
	req := simpleRequest()

	reply, err := c.Complete(context.Background(), req)
	require.NoError(t, err)

	assert.Equal(t, "len(tasks)", reply.Content)
	assert.Empty(t, reply.ToolCalls)
	assert.Equal(t, "stop", reply.FinishReason)
	assert.Equal(t, Usage{PromptTokens: 1200, CompletionTokens: 90, CachedTokens: 1024, ReasoningTokens: 64}, reply.Usage)
	assert.Equal(t, 1, reply.Attempts)
	assert.Zero(t, reply.Waited)
	assert.Positive(t, reply.Latency)
	want, err := session.CountRequest(session.O200kBase, req)
	require.NoError(t, err)
	assert.Equal(t, want, reply.RequestTokens, "the request's own estimate, whatever the provider reports")
	assert.Equal(t, "Bearer "+testKey, authorization(f, 0))
	assert.Equal(t, "test-model", c.Name())
}

func TestRequestBody(t *testing.T) {
	seed := 7
	tests := []struct {
		name  string
		cfg   func(*Config)
		req   session.Request
		check func(t *testing.T, body map[string]any)
	}{
		{
			name: "eval request with tools, tool calls and defaults",
			cfg:  func(c *Config) { c.MaxOutputTokens = 2048; c.Seed = &seed },
			req:  evalRequest(),
			check: func(t *testing.T, body map[string]any) {
				assert.Equal(t, "test-model", body["model"])
				assert.Equal(t, false, body["stream"])
				assert.Equal(t, false, body["parallel_tool_calls"], "one call per reply")
				assert.EqualValues(t, 2048, body["max_tokens"], "max_tokens: what every OpenAI-compatible server reads")
				assert.NotContains(t, body, "max_completion_tokens")
				assert.EqualValues(t, 7, body["seed"])
				temp, ok := body["temperature"].(float64)
				if assert.True(t, ok, "a zero temperature is sent, not left to the provider's default") {
					assert.Less(t, temp, 1e-30)
				}

				msgs := body["messages"].([]any)
				require.Len(t, msgs, 4)
				assert.Equal(t, map[string]any{"role": "system", "content": "Run code with the eval tool."}, msgs[0])
				assert.Equal(t, map[string]any{"role": "user", "content": "How many tasks are overdue?"}, msgs[1])
				assert.Equal(t, map[string]any{"role": "assistant", "content": "Let me count.", "tool_calls": []any{
					map[string]any{"id": "cell_1", "type": "function", "function": map[string]any{"name": "eval", "arguments": `{"code":"len(tasks)"}`}},
				}}, msgs[2])
				assert.Equal(t, map[string]any{"role": "tool", "content": "Out[3]: 42", "tool_call_id": "cell_1"}, msgs[3])

				tools := body["tools"].([]any)
				require.Len(t, tools, 1)
				tool := tools[0].(map[string]any)
				assert.Equal(t, "function", tool["type"])
				fn := tool["function"].(map[string]any)
				assert.Equal(t, "eval", fn["name"])
				assert.Equal(t, session.EvalTool("").Description, fn["description"])
				params, err := json.Marshal(fn["parameters"])
				require.NoError(t, err)
				assert.JSONEq(t, string(session.EvalTool("").Schema()), string(params))
			},
		},
		{
			name: "no tools, no cap, no seed",
			req:  simpleRequest(),
			check: func(t *testing.T, body map[string]any) {
				for _, k := range []string{"tools", "parallel_tool_calls", "max_tokens", "max_completion_tokens", "seed"} {
					assert.NotContains(t, body, k)
				}
				assert.Contains(t, body, "temperature")
			},
		},
		{
			name: "a set temperature is sent as is",
			cfg:  func(c *Config) { c.Temperature = 0.7 },
			req:  simpleRequest(),
			check: func(t *testing.T, body map[string]any) {
				assert.InDelta(t, 0.7, body["temperature"], 1e-6)
			},
		},
		{
			name: "reasoning model: max_completion_tokens and no temperature",
			cfg:  func(c *Config) { c.Model = "o3-mini"; c.MaxOutputTokens = 4096 },
			req:  evalRequest(),
			check: func(t *testing.T, body map[string]any) {
				assert.Equal(t, "o3-mini", body["model"])
				assert.EqualValues(t, 4096, body["max_completion_tokens"])
				assert.NotContains(t, body, "max_tokens")
				assert.NotContains(t, body, "temperature", "reasoning models accept only their default")
			},
		},
		{
			name: "a tool call without arguments sends an empty object",
			req: session.Request{Protocol: session.CLI, Tools: session.CLITools(), Messages: []session.Message{
				{Role: "user", Content: "q"},
				{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash"}}},
				{Role: "tool", ToolCallID: "c1", Content: "out"},
			}},
			check: func(t *testing.T, body map[string]any) {
				msg := body["messages"].([]any)[1].(map[string]any)
				call := msg["tool_calls"].([]any)[0].(map[string]any)
				assert.Equal(t, "{}", call["function"].(map[string]any)["arguments"])
				assert.Len(t, body["tools"], 2)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.NewServer(t, llmtest.Reply{Body: completion("ok", plainUsage)})
			cfg := testConfig(f)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			_, err := newClient(t, cfg).Complete(context.Background(), tt.req)
			require.NoError(t, err)
			tt.check(t, requestBody(t, f, 0))
		})
	}
}

func TestToolCallReply(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Body: completionWith(`{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"call_abc","type":"function","function":{"name":"eval","arguments":"{\"code\":\"ANSWER(len(tasks))\"}"}}]}`,
			"tool_calls", plainUsage)},
		// A local server that sends no id: one is made up, after the request's own calls.
		llmtest.Reply{Body: completionWith(`{"role":"assistant","content":"","tool_calls":[`+
			`{"type":"function","function":{"name":"eval","arguments":"{\"code\":\"1\"}"}}]}`,
			"tool_calls", plainUsage)},
	)
	c := newClient(t, testConfig(f))

	reply, err := c.Complete(context.Background(), evalRequest())
	require.NoError(t, err)
	assert.Empty(t, reply.Content)
	assert.Equal(t, "tool_calls", reply.FinishReason)
	assert.Equal(t, []session.ToolCall{{ID: "call_abc", Name: "eval", Arguments: `{"code":"ANSWER(len(tasks))"}`}}, reply.ToolCalls)

	reply, err = c.Complete(context.Background(), evalRequest())
	require.NoError(t, err)
	assert.Equal(t, []session.ToolCall{{ID: "call_2", Name: "eval", Arguments: `{"code":"1"}`}}, reply.ToolCalls)
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		header  func() http.Header
		minWait time.Duration
	}{
		{"seconds", func() http.Header { return http.Header{"Retry-After": {"1"}} }, time.Second},
		{"milliseconds", func() http.Header { return http.Header{"Retry-After-Ms": {"300"}} }, 300 * time.Millisecond},
		// HTTP dates have whole seconds: 2s ahead is more than 1s away.
		{"HTTP date", func() http.Header {
			return http.Header{"Retry-After": {time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)}}
		}, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.NewServer(t,
				llmtest.Reply{Status: 429, Header: tt.header(), Body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded")},
				llmtest.Reply{Body: completion("ok", plainUsage)},
			)
			cfg := testConfig(f)
			cfg.RetryMax = 5 * time.Second // above what the server asks for
			reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
			require.NoError(t, err)
			assert.Equal(t, "ok", reply.Content)
			assert.Equal(t, 2, reply.Attempts)
			assert.GreaterOrEqual(t, reply.Waited, tt.minWait, "the wait the server asked for")
			assert.GreaterOrEqual(t, reply.Latency, reply.Waited, "latency is the whole call, waits included")
		})
	}
}

func TestRetryAfterIsCappedByRetryMax(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Status: 503, Header: http.Header{"Retry-After": {"3600"}}, Body: errorBody("overloaded", "server_error", "")},
		llmtest.Reply{Body: completion("ok", plainUsage)},
	)
	cfg := testConfig(f)
	cfg.RetryMax = 20 * time.Millisecond
	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.NoError(t, err)
	assert.Equal(t, 2, reply.Attempts)
	assert.Equal(t, 20*time.Millisecond, reply.Waited)
}

func TestRetryServerErrors(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Status: 500, Body: errorBody("The server had an error", "server_error", "")},
		llmtest.Reply{Status: 502, Header: http.Header{"Content-Type": {"text/html"}}, Body: "<html>Bad Gateway</html>"},
		llmtest.Reply{Body: completion("ok", plainUsage)},
	)
	reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
	require.NoError(t, err)
	assert.Equal(t, "ok", reply.Content)
	assert.Equal(t, 3, reply.Attempts)
	assert.Positive(t, reply.Waited)
}

func TestRetriesExhausted(t *testing.T) {
	var script []llmtest.Reply
	for range 4 {
		script = append(script, llmtest.Reply{Status: 503, Body: errorBody("The engine is currently overloaded", "server_error", "")})
	}
	f := llmtest.NewServer(t, script...)
	cfg := testConfig(f)
	cfg.MaxRetries = 3

	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gave up after attempt 4 of 4")
	assert.Contains(t, err.Error(), "overloaded")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 503, apiErr.Status)
	assert.Equal(t, 4, reply.Attempts, "the accounting survives the error")
	assert.Positive(t, reply.Waited)
	assert.Positive(t, reply.RequestTokens)
}

func TestNoRetries(t *testing.T) {
	f := llmtest.NewServer(t, llmtest.Reply{Status: 500, Body: errorBody("boom", "server_error", "")})
	cfg := testConfig(f)
	cfg.MaxRetries = -1
	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.Error(t, err)
	assert.Equal(t, 1, reply.Attempts)
}

func TestMalformedBody(t *testing.T) {
	t.Run("retried once as a server fault", func(t *testing.T) {
		f := llmtest.NewServer(t,
			llmtest.Reply{Body: "<html><body>Welcome to nginx!</body></html>"},
			llmtest.Reply{Body: completion("ok", plainUsage)},
		)
		reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		assert.Equal(t, "ok", reply.Content)
		assert.Equal(t, 2, reply.Attempts)
	})
	t.Run("no choices is not a completion either", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Reply{Body: `{"id":"x","choices":[]}`}, llmtest.Reply{Body: completion("ok", plainUsage)})
		reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		assert.Equal(t, 2, reply.Attempts)
	})
	t.Run("a second one fails, naming the base URL, whatever MaxRetries", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Reply{Body: "<html>not an API</html>"}, llmtest.Reply{Body: "<html>not an API</html>"})
		cfg := testConfig(f)
		cfg.MaxRetries = 5
		reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
		require.Error(t, err)
		assert.Equal(t, 2, reply.Attempts, "a server that answers 200 with something else will not change its mind")
		msg := err.Error()
		assert.Contains(t, msg, "gave up after attempt 2 of 6: a second reply that is not a chat completion ends the call")
		assert.Contains(t, msg, f.URL)
		assert.Contains(t, msg, "not a chat completion")
		assert.Contains(t, msg, "<html>not an API</html>", "the head of the body helps to see what answered")
	})
	t.Run("a fault in between does not reset the count", func(t *testing.T) {
		f := llmtest.NewServer(t,
			llmtest.Reply{Body: "<html>not an API</html>"},
			llmtest.Reply{Status: 503, Body: errorBody("overloaded", "server_error", "")},
			llmtest.Reply{Body: "<html>not an API</html>"},
		)
		reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
		require.Error(t, err)
		assert.Equal(t, 3, reply.Attempts)
	})
}

// TestRetriesAreReported: OnRetry hears of every retry, before its wait:
// what failed, the wait, and the attempt that failed out of the most there
// may be.
func TestRetriesAreReported(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"30"}}, Body: errorBody("Rate limit reached", "requests", "rate_limit_exceeded")},
		llmtest.Reply{Status: 503, Body: errorBody("The engine is currently overloaded", "server_error", "")},
		llmtest.Reply{Body: completion("ok", plainUsage)},
	)
	cfg := testConfig(f)
	cfg.MaxRetries = 3
	var mu sync.Mutex
	var seen []Retry
	cfg.OnRetry = func(r Retry) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r)
	}
	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.NoError(t, err)
	require.Len(t, seen, 2)
	assert.Equal(t, 1, seen[0].Attempt)
	assert.Equal(t, 4, seen[0].Attempts, "1 + MaxRetries")
	assert.Equal(t, 429, seen[0].Status)
	assert.Equal(t, 30*time.Millisecond, seen[0].Wait, "the wait the server asked for")
	assert.Equal(t, "test-model", seen[0].Model)
	assert.Equal(t, 2, seen[1].Attempt)
	assert.Equal(t, 503, seen[1].Status)
	assert.Positive(t, seen[1].Wait)
	assert.ErrorContains(t, seen[1].Err, "overloaded")
	assert.Equal(t, "model test-model: attempt 1 of 4 failed (429 Too Many Requests), retrying in 30ms", seen[0].String())
	assert.Equal(t, seen[0].Wait+seen[1].Wait, reply.Waited, "the reply says how long it waited")
	assert.NotContains(t, fmt.Sprint(seen), testKey)

	t.Run("the label of the call's context", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Reply{Status: 500, Body: errorBody("boom", "server_error", "")}, llmtest.Reply{Body: completion("ok", plainUsage)})
		cfg := testConfig(f)
		var got []Retry
		cfg.OnRetry = func(r Retry) { got = append(got, r) }
		_, err := newClient(t, cfg).Complete(WithLabel(context.Background(), "trial m/D/s-t1-1/r1"), simpleRequest())
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "trial m/D/s-t1-1/r1", got[0].Label)
		assert.True(t, strings.HasPrefix(got[0].String(), "trial m/D/s-t1-1/r1: model test-model: attempt 1 of 6 failed (500 "), got[0].String())
	})
	t.Run("a failure without a status", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Reply{Hangup: true}, llmtest.Reply{Body: completion("ok", plainUsage)})
		cfg := testConfig(f)
		var got []Retry
		cfg.OnRetry = func(r Retry) { got = append(got, r) }
		_, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Zero(t, got[0].Status)
		assert.Contains(t, got[0].String(), "attempt 1 of 6 failed (connection to ")
	})
}

// TestGaveUpMatchesTheAttemptsPrinted: against a server that always fails,
// the attempts the server counts, the retry lines (attempt k of n) and the
// error's "gave up after attempt k of n" agree; a call that stops before n
// says why.
func TestGaveUpMatchesTheAttemptsPrinted(t *testing.T) {
	const maxRetries = 3
	tests := []struct {
		name    string
		fail    func(w http.ResponseWriter, n int64) // n: the request's number, from 1
		want    int                                  // attempts made
		because string                               // why fewer than 1 + maxRetries
	}{
		{"a 500 every time", func(w http.ResponseWriter, _ int64) {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(errorBody("boom", "server_error", "")))
		}, 1 + maxRetries, ""},
		{"a 429 every time", func(w http.ResponseWriter, _ int64) {
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(429)
			_, _ = w.Write([]byte(errorBody("Rate limit reached", "requests", "rate_limit_exceeded")))
		}, 1 + maxRetries, ""},
		{"a hang-up every time", func(w http.ResponseWriter, _ int64) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if assert.NoError(t, err) {
				_ = conn.Close()
			}
		}, 1 + maxRetries, ""},
		{"a web page every time", func(w http.ResponseWriter, _ int64) {
			_, _ = w.Write([]byte("<html>not an API</html>"))
		}, 2, "a second reply that is not a chat completion ends the call"},
		{"a 500, then a 400 every time", func(w http.ResponseWriter, n int64) {
			if n == 1 {
				w.WriteHeader(500)
				_, _ = w.Write([]byte(errorBody("boom", "server_error", "")))
				return
			}
			w.WriteHeader(400)
			_, _ = w.Write([]byte(errorBody("bad request", "invalid_request_error", "")))
		}, 2, "this failure is not retried"},
	}
	gaveUp := regexp.MustCompile(`gave up after attempt (\d+) of (\d+)(: [^(]*)? \(`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				tt.fail(w, requests.Add(1))
			}))
			t.Cleanup(srv.Close)
			var lines []string
			cfg := Config{Model: "m", BaseURL: srv.URL, APIKey: testKey, MaxRetries: maxRetries,
				RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
				OnRetry: func(r Retry) { lines = append(lines, r.String()) }}
			reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
			require.Error(t, err)

			assert.Equal(t, int64(tt.want), requests.Load(), "attempts the server saw")
			assert.Equal(t, tt.want, reply.Attempts)
			require.Len(t, lines, tt.want-1, "a retry line per attempt but the last")
			for i, l := range lines {
				assert.Contains(t, l, fmt.Sprintf("model m: attempt %d of %d failed (", i+1, 1+maxRetries))
			}
			m := gaveUp.FindStringSubmatch(err.Error())
			require.NotNil(t, m, "the error says the attempt it gave up after: %v", err)
			assert.Equal(t, strconv.Itoa(tt.want), m[1], "the last attempt, as the server counted: %v", err)
			assert.Equal(t, strconv.Itoa(1+maxRetries), m[2], "of the most, as the retry lines say: %v", err)
			if tt.because == "" {
				assert.Empty(t, m[3], "no reason when every attempt was made")
			} else {
				assert.Equal(t, ": "+tt.because, m[3], "why it stopped before the last attempt")
			}
		})
	}
}

func TestTimeoutThenSuccess(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Delay: time.Second, Body: completion("too late", plainUsage)},
		llmtest.Reply{Body: completion("ok", plainUsage)},
	)
	cfg := testConfig(f)
	cfg.Timeout = 200 * time.Millisecond
	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.NoError(t, err)
	assert.Equal(t, "ok", reply.Content)
	assert.Equal(t, 2, reply.Attempts)
	assert.GreaterOrEqual(t, reply.Latency, 200*time.Millisecond)
}

func TestTimeoutEveryTime(t *testing.T) {
	f := llmtest.NewServer(t, llmtest.Reply{Delay: time.Second}, llmtest.Reply{Delay: time.Second})
	cfg := testConfig(f)
	cfg.Timeout = 100 * time.Millisecond
	cfg.MaxRetries = 1
	_, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "within 100ms")
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the caller's context did not end")
}

func TestConnectionClosedIsRetried(t *testing.T) {
	f := llmtest.NewServer(t, llmtest.Reply{Hangup: true}, llmtest.Reply{Body: completion("ok", plainUsage)})
	reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
	require.NoError(t, err)
	assert.Equal(t, 2, reply.Attempts)
}

func TestUnreachableServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	cfg := Config{Model: "m", BaseURL: "http://" + addr + "/v1", RetryBase: 10 * time.Millisecond}
	reply, err := newClient(t, cfg).Complete(context.Background(), simpleRequest())
	require.Error(t, err)
	assert.Equal(t, 1, reply.Attempts, "a refused connection is not retried")
	assert.Contains(t, err.Error(), "cannot reach http://"+addr+"/v1")
	assert.Contains(t, err.Error(), "the server is running")
}

func TestErrorsNotRetried(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		contains []string
		check    func(t *testing.T, err error)
	}{
		{
			name:   "401 bad key",
			status: 401,
			// OpenAI echoes part of the key; this server echoes all of it.
			body:     errorBody("Incorrect API key provided: "+testKey+". You can find your API key at https://platform.openai.com.", "invalid_request_error", "invalid_api_key"),
			contains: []string{"401", "OPENAI_API_KEY", "[redacted]"},
		},
		{
			name:     "403 forbidden",
			status:   403,
			body:     errorBody("Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory"),
			contains: []string{"403", "permissions", "region"},
		},
		{
			name:     "404 unknown model",
			status:   404,
			body:     errorBody("The model `test-model` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
			contains: []string{"404", `model name "test-model"`, "/v1", "base URL"},
		},
		{
			name:     "404 wrong path, plain text",
			status:   404,
			body:     "404 page not found",
			contains: []string{"404", `"test-model"`, "404 page not found", "/v1"},
		},
		{
			name:     "400 bad request",
			status:   400,
			body:     errorBody("Invalid value for 'tool_choice'.", "invalid_request_error", "invalid_value"),
			contains: []string{"400", "Invalid value", "rejected the request"},
			check: func(t *testing.T, err error) {
				assert.NotErrorIs(t, err, ErrContextLength)
			},
		},
		{
			name:     "429 out of quota",
			status:   429,
			body:     errorBody("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
			contains: []string{"429", "billing"},
		},
		{
			name:   "context length, OpenAI",
			status: 400,
			body: errorBody("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
				"invalid_request_error", "context_length_exceeded"),
			contains: []string{"context window"},
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrContextLength)
			},
		},
		{
			name:     "context length, llama.cpp",
			status:   400,
			body:     `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`,
			contains: []string{"context window"},
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrContextLength)
			},
		},
		{
			name:   "context length, message only (vLLM)",
			status: 400,
			body:   `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.","type":"BadRequestError","param":null,"code":400}`,
			check: func(t *testing.T, err error) {
				assert.ErrorIs(t, err, ErrContextLength)
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.", apiErr.Message)
				assert.Equal(t, "BadRequestError", apiErr.Type)
				assert.Empty(t, apiErr.Code, "a code that repeats the status says nothing")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := llmtest.NewServer(t, llmtest.Reply{Status: tt.status, Body: tt.body}) // a second request would fail the server's check
			reply, err := newClient(t, testConfig(f)).Complete(context.Background(), simpleRequest())
			require.Error(t, err)
			assert.Equal(t, 1, reply.Attempts)
			var apiErr *APIError
			if assert.ErrorAs(t, err, &apiErr) {
				assert.Equal(t, tt.status, apiErr.Status)
				assert.NotContains(t, apiErr.Message, testKey)
			}
			for _, s := range tt.contains {
				assert.Contains(t, err.Error(), s)
			}
			assert.NotContains(t, err.Error(), testKey, "the key never appears in an error")
			if tt.check != nil {
				tt.check(t, err)
			}
		})
	}
}

func TestNoUsageIsEstimated(t *testing.T) {
	f := llmtest.NewServer(t,
		llmtest.Reply{Body: completion("[t for t in tasks if t['overdue']]", "")},
		llmtest.Reply{Body: completionWith(`{"role":"assistant","tool_calls":[`+
			`{"id":"c","type":"function","function":{"name":"eval","arguments":"{\"code\":\"len(tasks)\"}"}}]}`,
			"tool_calls", `{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`)},
	)
	c := newClient(t, testConfig(f))
	req := simpleRequest()
	prompt, err := session.CountRequest(session.O200kBase, req)
	require.NoError(t, err)

	reply, err := c.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, reply.Usage.Estimated)
	assert.Equal(t, prompt, reply.Usage.PromptTokens)
	content, err := session.CountTokens(session.O200kBase, reply.Content)
	require.NoError(t, err)
	assert.Equal(t, content, reply.Usage.CompletionTokens)
	assert.Positive(t, reply.Usage.CompletionTokens)

	reply, err = c.Complete(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, reply.Usage.Estimated)
	assert.Positive(t, reply.Usage.CompletionTokens, "tool calls count")
}

func TestCancelDuringBackoff(t *testing.T) {
	f := llmtest.NewServer(t, llmtest.Reply{Status: 429, Header: http.Header{"Retry-After": {"30"}}, Body: errorBody("slow down", "requests", "rate_limit_exceeded")})
	cfg := testConfig(f)
	cfg.RetryMax = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(100*time.Millisecond, cancel)

	reply, err := newClient(t, cfg).Complete(ctx, simpleRequest())
	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, reply.Attempts)
	assert.Contains(t, err.Error(), "to retry after attempt 1")
}

func TestCancelledBeforeCall(t *testing.T) {
	f := llmtest.NewServer(t) // no request reaches the server
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newClient(t, testConfig(f)).Complete(ctx, simpleRequest())
	assert.ErrorIs(t, err, context.Canceled)
}

func TestConcurrentCallsKeepTheirOwnRetryAfter(t *testing.T) {
	// Two calls share a client; each sees only its own response headers.
	var script []llmtest.Reply
	for range 2 {
		script = append(script,
			llmtest.Reply{Status: 429, Header: http.Header{"Retry-After-Ms": {"50"}}, Body: errorBody("slow down", "requests", "rate_limit_exceeded")})
	}
	script = append(script, llmtest.Reply{Body: completion("ok", plainUsage)}, llmtest.Reply{Body: completion("ok", plainUsage)})
	f := llmtest.NewServer(t, script...)
	cfg := testConfig(f)
	cfg.RetryMax = time.Second
	c := newClient(t, cfg)

	// The server plays its script in arrival order: whichever call gets
	// which reply, four attempts in all bring two successes.
	var wg sync.WaitGroup
	replies := make([]Reply, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { replies[i], errs[i] = c.Complete(context.Background(), simpleRequest()) })
	}
	wg.Wait()
	for i := range 2 {
		assert.NoError(t, errs[i])
		assert.Equal(t, "ok", replies[i].Content)
	}
	assert.Equal(t, 4, replies[0].Attempts+replies[1].Attempts)
}

func TestNewOpenAI(t *testing.T) {
	t.Run("needs a model", func(t *testing.T) {
		_, err := NewOpenAI(Config{APIKey: testKey})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--model")
	})
	t.Run("OpenAI needs a key", func(t *testing.T) {
		for _, base := range []string{"", OpenAIBaseURL, OpenAIBaseURL + "/"} {
			_, err := NewOpenAI(Config{Model: "gpt-4.1-mini", BaseURL: base})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "OPENAI_API_KEY")
			assert.Contains(t, err.Error(), "--base-url")
		}
	})
	t.Run("bad base URL", func(t *testing.T) {
		_, err := NewOpenAI(Config{Model: "m", BaseURL: "localhost:11434"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not an http or https URL")
	})
	t.Run("unknown encoding", func(t *testing.T) {
		_, err := NewOpenAI(Config{Model: "m", APIKey: testKey, Encoding: "p50k"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "p50k")
	})
	t.Run("defaults fill zero fields", func(t *testing.T) {
		c := newClient(t, Config{Model: "m", APIKey: testKey})
		got := c.Config()
		assert.Equal(t, OpenAIBaseURL, got.BaseURL)
		assert.Equal(t, DefaultTimeout, got.Timeout)
		assert.Equal(t, DefaultMaxRetries, got.MaxRetries)
		assert.Equal(t, DefaultRetryBase, got.RetryBase)
		assert.Equal(t, DefaultRetryMax, got.RetryMax)
		assert.Equal(t, session.O200kBase, got.Encoding)
		assert.NotNil(t, got.HTTPClient)
	})
	t.Run("a local server needs no key and gets no Authorization header", func(t *testing.T) {
		f := llmtest.NewServer(t, llmtest.Reply{Body: completion("ok", plainUsage)})
		c := newClient(t, Config{Model: "qwen2.5-coder", BaseURL: f.URL + "/"})
		_, err := c.Complete(context.Background(), simpleRequest())
		require.NoError(t, err)
		assert.Empty(t, authorization(f, 0))
	})
}

func TestDefaultConfig(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("OPENAI_API_KEY", "")
	cfg := DefaultConfig()
	assert.Equal(t, OpenAIBaseURL, cfg.BaseURL)
	assert.Empty(t, cfg.APIKey)
	assert.Equal(t, DefaultTimeout, cfg.Timeout)
	assert.Equal(t, DefaultMaxRetries, cfg.MaxRetries)
	assert.Equal(t, session.O200kBase, cfg.Encoding)
	assert.Zero(t, cfg.Temperature)

	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	t.Setenv("OPENAI_API_KEY", testKey)
	cfg = DefaultConfig()
	assert.Equal(t, "http://localhost:11434/v1", cfg.BaseURL)
	assert.Equal(t, testKey, cfg.APIKey)
}

func TestConfigStringRedactsKey(t *testing.T) {
	seed := 3
	cfg := Config{Model: "gpt-4.1-mini", BaseURL: OpenAIBaseURL, APIKey: testKey, Seed: &seed}
	c := newClient(t, cfg)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%q", "%x"} {
		for name, v := range map[string]any{"config": cfg, "*config": &cfg, "client": c} {
			out := fmt.Sprintf(verb, v)
			assert.NotContains(t, out, testKey, "%s printed with %s", name, verb)
			assert.NotContains(t, out, fmt.Sprintf("%x", testKey), "%s printed with %s", name, verb)
		}
	}
	assert.Contains(t, cfg.String(), "APIKey:[redacted]")
	assert.Contains(t, cfg.String(), `Model:"gpt-4.1-mini"`)
	assert.Contains(t, cfg.String(), "Seed:3")
	assert.Contains(t, Config{}.String(), "APIKey:[unset]")
}

func TestJitter(t *testing.T) {
	base, ceiling := 100*time.Millisecond, time.Second
	for n, d := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		d *= time.Millisecond
		for range 50 {
			got := jitter(base, ceiling, n)
			assert.GreaterOrEqual(t, got, d/2, "retry %d", n)
			assert.LessOrEqual(t, got, d, "retry %d", n)
		}
	}
	assert.LessOrEqual(t, jitter(base, ceiling, 200), ceiling, "no overflow")
}

func TestRetryAfterParsing(t *testing.T) {
	tests := []struct {
		header map[string]string
		want   time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0}, // in the past
		{map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.header), func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			x := &exchange{header: h}
			assert.Equal(t, tt.want, x.retryAfter())
		})
	}
}

func TestUsageAdd(t *testing.T) {
	u := Usage{PromptTokens: 10, CompletionTokens: 2, CachedTokens: 8, ReasoningTokens: 1}
	u.Add(Usage{PromptTokens: 5, CompletionTokens: 3, CachedTokens: 1, ReasoningTokens: 2})
	assert.Equal(t, Usage{PromptTokens: 15, CompletionTokens: 5, CachedTokens: 9, ReasoningTokens: 3}, u)
	u.Add(Usage{PromptTokens: 1, Estimated: true})
	assert.True(t, u.Estimated)
	u.Add(Usage{})
	assert.True(t, u.Estimated, "once estimated, the sum stays estimated")
	assert.Equal(t, 16, u.PromptTokens)

	b, err := json.Marshal(Usage{PromptTokens: 1, CompletionTokens: 2, CachedTokens: 3, ReasoningTokens: 4, Estimated: true})
	require.NoError(t, err)
	assert.JSONEq(t, `{"prompt_tokens":1,"completion_tokens":2,"cached_tokens":3,"reasoning_tokens":4,"estimated":true}`, string(b))
}

func TestAPIErrorMessages(t *testing.T) {
	e := &APIError{Status: 404, Message: "no such model", Model: "gtp-4o", BaseURL: "http://h/v1"}
	assert.Equal(t, `404 Not Found from http://h/v1: no such model; check the model name "gtp-4o" and the base URL http://h/v1 (an OpenAI-compatible API usually ends in /v1)`, e.Error())
	assert.False(t, errors.Is(e, ErrContextLength))
}

func TestSafeURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.openai.com/v1":                     "https://api.openai.com/v1",
		"https://user:secret@example.com/v1?api-key=xy": "https://example.com/v1?…",
		"http://localhost:11434/v1":                     "http://localhost:11434/v1",
	} {
		assert.Equal(t, want, SafeURL(in))
	}
}
