package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/ctxcode/ctxcode/session"
)

// OpenAIBaseURL is the base URL of OpenAI's own API, the default.
const OpenAIBaseURL = "https://api.openai.com/v1"

// Defaults of Config.
const (
	DefaultTimeout    = 120 * time.Second
	DefaultMaxRetries = 5
	DefaultRetryBase  = time.Second
	DefaultRetryMax   = 60 * time.Second
)

// Config configures an OpenAI-compatible client. Zero fields take their
// defaults in NewOpenAI, so Config{Model: "m", APIKey: k} works as well as
// DefaultConfig with Model set.
type Config struct {
	// Model is sent as is as the request's "model". Required.
	Model string
	// BaseURL is the API root, the part before /chat/completions, e.g.
	// http://localhost:11434/v1 for Ollama. Zero is OpenAIBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends no
	// Authorization header (local servers need none). It never appears in
	// String, errors or replies.
	APIKey string
	// Temperature is the sampling temperature; 0 (the zero value and the
	// default) is greedy. go-openai drops a zero temperature from the JSON
	// (omitempty), which would leave the provider's default (usually 1), so
	// 0 is sent as the smallest positive float32 (1e-45), which every
	// server treats as greedy. For OpenAI reasoning models (names starting
	// o1, o3, o4, gpt-5, gpt-6), which accept only their default, a zero
	// temperature is not sent at all.
	Temperature float32
	// MaxOutputTokens caps the reply's tokens; 0 (the default) or less sends
	// no cap. It is sent as max_tokens, which every OpenAI-compatible server
	// understands, except for OpenAI reasoning models, which accept only
	// max_completion_tokens (and count their reasoning in it).
	MaxOutputTokens int
	// Seed asks the provider for reproducible sampling; nil sends none.
	Seed *int
	// Timeout bounds each HTTP attempt, from sending the request to
	// reading the whole reply. 0 is DefaultTimeout (120s); negative is no
	// bound (the caller's context still applies).
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried (see the
	// package comment for which failures are). 0 is DefaultMaxRetries (5);
	// negative is no retry.
	MaxRetries int
	// RetryBase and RetryMax shape the backoff: retry n waits a jittered
	// time in [d/2, d] with d = min(RetryBase·2ⁿ, RetryMax); a provider's
	// Retry-After is honoured up to RetryMax. Zero values are
	// DefaultRetryBase (1s) and DefaultRetryMax (60s).
	RetryBase, RetryMax time.Duration
	// Encoding is the tokenizer vocabulary of the estimates
	// (Reply.RequestTokens, and Usage when the provider reports none).
	// Zero is session.O200kBase.
	Encoding session.Encoding
	// HTTPClient sends the requests; nil is a new http.Client with no
	// timeout of its own (Timeout bounds each attempt).
	HTTPClient *http.Client
	// OnRetry, when set, hears of each retry before its wait: what failed,
	// how long Complete will wait, which attempt of how many it was, and
	// the label of the call's context (WithLabel), which tells concurrent
	// calls apart (Retry.String is one line for a person). It is called
	// on the goroutine of Complete, so concurrent calls may call it
	// concurrently; it must return quickly. Nil reports nothing.
	OnRetry func(Retry)
	// Gate, when set, paces the attempts of every client that shares it:
	// Complete calls Gate.Wait before each attempt (the first and every
	// retry), Gate.Slow after each throttling reply (a retryable 429,
	// or a 503 with Retry-After), with the wait it chose for that reply,
	// before OnRetry and its own sleep, and Gate.Pass after each reply
	// the provider took (a status below 500 other than 429). One
	// Throttle shared by the clients of an endpoint makes a 429 to one
	// slow them all, and the replies after it speed them up again. Time
	// in Wait counts in Reply.Waited. Nil paces nothing.
	Gate Gate
}

// Retry is one failed attempt that Complete is about to try again.
type Retry struct {
	// Label names the call's caller, from its context (WithLabel): which
	// of several concurrent calls this is. "" when the context has none.
	Label    string
	Model    string        // the model the request named
	Attempt  int           // the attempt that failed, from 1
	Attempts int           // the most attempts the call may make: 1 + MaxRetries
	Status   int           // the HTTP status of an error reply; 0 for a timeout, a lost connection, a 2xx that was not a completion
	Err      error         // what failed, the API key redacted
	Wait     time.Duration // how long Complete waits before the next attempt
}

// String is the retry as one progress line: "model m: attempt 1 of 6
// failed (429 Too Many Requests), retrying in 2s", after "LABEL: " when the
// call's context has a label (WithLabel).
func (r Retry) String() string {
	why := ""
	switch {
	case r.Status != 0:
		why = strconv.Itoa(r.Status)
		if t := http.StatusText(r.Status); t != "" {
			why += " " + t
		}
	case r.Err != nil:
		why = r.Err.Error()
	}
	label := ""
	if r.Label != "" {
		label = r.Label + ": "
	}
	return fmt.Sprintf("%smodel %s: attempt %d of %d failed (%s), retrying in %s",
		label, r.Model, r.Attempt, r.Attempts, why, r.Wait.Round(time.Millisecond))
}

type labelKey struct{}

// WithLabel returns ctx carrying label, a name for the calls made with it
// (bench: "trial MODEL/CONDITION/TASK/rREP"). Complete puts it in each
// Retry it reports, so that the retry lines of calls that run at once say
// whose they are.
func WithLabel(ctx context.Context, label string) context.Context {
	return context.WithValue(ctx, labelKey{}, label)
}

// labelOf is the label ctx carries (WithLabel), "" for none.
func labelOf(ctx context.Context) string {
	s, _ := ctx.Value(labelKey{}).(string)
	return s
}

// DefaultConfig is the configuration with every default filled in, the
// base URL from $OPENAI_BASE_URL (else OpenAIBaseURL) and the key from
// $OPENAI_API_KEY. Model is left empty: the caller names it.
func DefaultConfig() Config {
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		base = OpenAIBaseURL
	}
	return Config{
		BaseURL:    base,
		APIKey:     os.Getenv("OPENAI_API_KEY"),
		Timeout:    DefaultTimeout,
		MaxRetries: DefaultMaxRetries,
		RetryBase:  DefaultRetryBase,
		RetryMax:   DefaultRetryMax,
		Encoding:   session.O200kBase,
	}
}

// DefaultModelName is the model asked at OpenAI when none is named.
const DefaultModelName = "gpt-4o-mini"

// DefaultModel is the model to ask when the user names none:
// $CTXCODE_MODEL, else DefaultModelName when the endpoint is OpenAI's.
// baseURL is the endpoint the user named ("" for $OPENAI_BASE_URL). The
// error, a sentence for the user, is no model configured at all (no key,
// no endpoint), or another endpoint (a local server) whose model only the
// user can name.
func DefaultModel(baseURL string) (string, error) {
	if name := os.Getenv("CTXCODE_MODEL"); name != "" {
		return name, nil
	}
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	switch {
	case os.Getenv("OPENAI_API_KEY") == "" && baseURL == "":
		return "", errors.New("no model is configured: set OPENAI_API_KEY (and --model), or OPENAI_BASE_URL or --base-url for a local server, or use --model reference to run the built-in tasks offline")
	case baseURL != "" && strings.TrimRight(baseURL, "/") != OpenAIBaseURL:
		return "", fmt.Errorf("name the model to ask at %s with --model NAME (or $CTXCODE_MODEL)", SafeURL(baseURL))
	}
	return DefaultModelName, nil
}

// String shows the configuration with the key redacted.
func (c Config) String() string {
	key := "[unset]"
	if c.APIKey != "" {
		key = "[redacted]"
	}
	seed := "nil"
	if c.Seed != nil {
		seed = strconv.Itoa(*c.Seed)
	}
	return fmt.Sprintf("llm.Config{Model:%q BaseURL:%q APIKey:%s Temperature:%g MaxOutputTokens:%d Seed:%s "+
		"Timeout:%s MaxRetries:%d RetryBase:%s RetryMax:%s Encoding:%q}",
		c.Model, SafeURL(c.BaseURL), key, c.Temperature, c.MaxOutputTokens, seed,
		c.Timeout, c.MaxRetries, c.RetryBase, c.RetryMax, c.Encoding)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %d, ...), so no
// verb prints the fields, and with them the key.
func (c Config) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, c.String()) }

// withDefaults fills the zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if strings.TrimSpace(c.Model) == "" {
		return c, errors.New("no model: name one (--model), e.g. gpt-4.1-mini, or \"reference\" for the offline reference model")
	}
	if c.BaseURL == "" {
		c.BaseURL = OpenAIBaseURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("base URL %q is not an http or https URL: expected e.g. %s or http://localhost:11434/v1", c.BaseURL, OpenAIBaseURL)
	}
	if c.APIKey == "" && c.BaseURL == OpenAIBaseURL {
		return c, errors.New("no API key for " + OpenAIBaseURL + ": set OPENAI_API_KEY, " +
			"or point --base-url (or OPENAI_BASE_URL) at another OpenAI-compatible server, e.g. http://localhost:11434/v1 for Ollama, which needs no key")
	}
	if c.Temperature < 0 || math.IsNaN(float64(c.Temperature)) {
		return c, fmt.Errorf("temperature %g is negative: expected 0 (greedy) or more", c.Temperature)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.RetryMax < c.RetryBase {
		c.RetryMax = c.RetryBase
	}
	if c.Encoding == "" {
		c.Encoding = session.O200kBase
	}
	if err := session.CheckEncoding(c.Encoding); err != nil {
		return c, err
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c, nil
}

// OpenAI is a Model served by an OpenAI-compatible chat-completions API.
// It is safe for concurrent use.
type OpenAI struct {
	cfg    Config
	client *openai.Client
}

var _ Model = (*OpenAI)(nil)

// NewOpenAI returns a client for cfg.
func NewOpenAI(cfg Config) (*OpenAI, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = recorder{cfg.HTTPClient}
	return &OpenAI{cfg: cfg, client: openai.NewClientWithConfig(oc)}, nil
}

// Name is the model's name as sent.
func (c *OpenAI) Name() string { return c.cfg.Model }

// Config is the configuration in use, defaults filled in.
func (c *OpenAI) Config() Config { return c.cfg }

// String names the model and the server, never the key.
func (c *OpenAI) String() string { return "llm.OpenAI{" + c.cfg.String() + "}" }

// Format prints String for every verb: the go-openai client inside holds
// the key in a field that fmt would otherwise print.
func (c *OpenAI) Format(f fmt.State, verb rune) { _, _ = io.WriteString(f, c.String()) }

// Complete sends req, retrying as the package comment describes.
func (c *OpenAI) Complete(ctx context.Context, req session.Request) (reply Reply, err error) {
	start := time.Now()
	// The request's tokens are counted while it is on its way: loading the
	// vocabulary takes tens of milliseconds, which the first request of a
	// run need not wait for.
	count := session.CountLater(c.cfg.Encoding, req)
	defer func() {
		reply.RequestTokens, _ = count()
		reply.Latency = time.Since(start)
		err = c.redactErr(err)
	}()
	creq, err := c.request(req)
	if err != nil {
		return reply, fmt.Errorf("model %s: %w", c.cfg.Model, err)
	}
	notCompletions := 0 // 2xx replies that were not a chat completion
	for retry := 0; ; retry++ {
		if err := c.gateWait(ctx, &reply); err != nil {
			return reply, err
		}
		reply.Attempts++
		resp, x, err := c.attempt(ctx, creq)
		if c.cfg.Gate != nil && x.passed() {
			c.cfg.Gate.Pass()
		}
		if err == nil {
			if reply.RequestTokens, err = count(); err != nil {
				return reply, fmt.Errorf("count request tokens: %w", err)
			}
			if err = c.read(resp, req, &reply); err == nil {
				return reply, nil
			}
			x.retry, x.notCompletion = true, true // a 2xx that is not a usable completion: a server fault
		}
		if ctx.Err() != nil {
			return reply, fmt.Errorf("model %s: %w", c.cfg.Model, ctx.Err())
		}
		if x.notCompletion {
			// Once may be a proxy's hiccup; twice is a server that answers
			// something else, and will go on doing so.
			notCompletions++
			x.retry = notCompletions < 2
		}
		wait := c.backoff(retry, x.retryAfter())
		if c.cfg.Gate != nil && x.throttled() {
			c.cfg.Gate.Slow(x.status, wait)
		}
		if !x.retry || retry >= c.cfg.MaxRetries {
			if reply.Attempts > 1 {
				return reply, fmt.Errorf("model %s: %s (%s spent waiting): %w",
					c.cfg.Model, c.gaveUp(reply.Attempts, x), reply.Waited.Round(time.Millisecond), err)
			}
			return reply, fmt.Errorf("model %s: %w", c.cfg.Model, err)
		}
		if c.cfg.OnRetry != nil {
			status := x.status
			if status < 300 {
				status = 0 // a 2xx that failed: its error says how
			}
			c.cfg.OnRetry(Retry{Label: labelOf(ctx), Model: c.cfg.Model, Attempt: reply.Attempts, Attempts: 1 + c.cfg.MaxRetries,
				Status: status, Err: c.redactErr(err), Wait: wait})
		}
		slept, err := sleep(ctx, wait)
		reply.Waited += slept
		if err != nil {
			return reply, fmt.Errorf("model %s: waiting %s to retry after attempt %d: %w",
				c.cfg.Model, wait.Round(time.Millisecond), reply.Attempts, err)
		}
	}
}

// gaveUp says how a call that retried ended, in the terms of the retry
// lines (Retry.String: "attempt k of n failed"): its last attempt, of the
// most it may make, and why it stopped before them.
func (c *OpenAI) gaveUp(attempts int, x *exchange) string {
	most := 1 + c.cfg.MaxRetries
	switch {
	case attempts >= most:
		return fmt.Sprintf("gave up after attempt %d of %d", attempts, most)
	case x.notCompletion:
		return fmt.Sprintf("gave up after attempt %d of %d: a second reply that is not a chat completion ends the call", attempts, most)
	}
	return fmt.Sprintf("gave up after attempt %d of %d: this failure is not retried", attempts, most)
}

// gateWait waits for Config.Gate, if any, before the next attempt, and
// adds the time to reply.Waited.
func (c *OpenAI) gateWait(ctx context.Context, reply *Reply) error {
	if c.cfg.Gate == nil {
		return nil
	}
	start := time.Now()
	err := c.cfg.Gate.Wait(ctx)
	reply.Waited += time.Since(start)
	if err != nil {
		return fmt.Errorf("model %s: waiting for the shared rate limit (Config.Gate) before attempt %d: %w", c.cfg.Model, reply.Attempts+1, err)
	}
	return nil
}

// attempt makes one HTTP attempt. Its error is already classified: x.retry
// says whether to try again.
func (c *OpenAI) attempt(ctx context.Context, creq openai.ChatCompletionRequest) (openai.ChatCompletionResponse, *exchange, error) {
	x := &exchange{}
	actx := context.WithValue(ctx, exchangeKey{}, x)
	if c.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, c.cfg.Timeout)
		defer cancel()
	}
	resp, err := c.client.CreateChatCompletion(actx, creq)
	if err == nil {
		return resp, x, nil
	}
	timedOut := actx.Err() != nil && ctx.Err() == nil
	return resp, x, c.classify(err, x, timedOut)
}

// classify turns a go-openai error into ours and sets x.retry.
func (c *OpenAI) classify(err error, x *exchange, timedOut bool) error {
	var oe *openai.APIError
	var re *openai.RequestError
	switch {
	case timedOut:
		x.retry = true
		return fmt.Errorf("no complete reply from %s within %s (the per-request timeout)", SafeURL(c.cfg.BaseURL), c.cfg.Timeout)
	case errors.As(err, &oe):
		ae := c.apiError(oe.HTTPStatusCode, codeString(oe.Code), oe.Type, oe.Message)
		x.retry = ae.retryable()
		return ae
	case errors.As(err, &re):
		// An error status whose body is not an OpenAI error object: maybe
		// a bare one (older vLLM, FastAPI's "detail"), maybe a proxy's page.
		var bare struct {
			Message, Detail, Type string
			Code                  any
		}
		msg := "the body is not an error object: " + snippet(re.Body)
		switch {
		case len(strings.TrimSpace(string(re.Body))) == 0:
			msg = "empty body"
		case json.Unmarshal(re.Body, &bare) == nil && (bare.Message != "" || bare.Detail != ""):
			msg = bare.Message
			if msg == "" {
				msg = bare.Detail
			}
		}
		ae := c.apiError(re.HTTPStatusCode, codeString(bare.Code), bare.Type, msg)
		x.retry = ae.retryable()
		return ae
	case x.status >= 200 && x.status < 300 && x.bodyErr == nil:
		// The body of a success did not decode.
		x.retry, x.notCompletion = true, true
		return fmt.Errorf("%s answered %d with a body that is not a chat completion (%v): %s; check that the base URL is an OpenAI-compatible API",
			SafeURL(c.cfg.BaseURL), x.status, err, snippet(x.head))
	case connectionLost(err):
		x.retry = true
		return fmt.Errorf("connection to %s lost: %w", SafeURL(c.cfg.BaseURL), err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		x.retry = true
		return fmt.Errorf("talking to %s: %w", SafeURL(c.cfg.BaseURL), err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("cannot reach %s: %w; check the base URL and that the server is running", SafeURL(c.cfg.BaseURL), err)
	}
	// go-openai's own checks, before anything is sent.
	return fmt.Errorf("invalid request for model %q: %w", c.cfg.Model, err)
}

func connectionLost(err error) bool {
	for _, target := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func (c *OpenAI) apiError(status int, code, typ, msg string) *APIError {
	if code == strconv.Itoa(status) {
		code = "" // llama.cpp and vLLM repeat the status as the code
	}
	return &APIError{Status: status, Code: code, Type: typ, Message: c.redact(msg), Model: c.cfg.Model, BaseURL: SafeURL(c.cfg.BaseURL)}
}

// codeString is the provider's error code, a string or a number.
func codeString(code any) string {
	switch v := code.(type) {
	case nil:
		return ""
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	}
	return fmt.Sprint(code)
}

// snippet is the head of a body, quoted, for an error message.
func snippet(body []byte) string {
	const limit = 200
	s := strings.TrimSpace(string(body))
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}

// request converts a session request into go-openai's.
func (c *OpenAI) request(req session.Request) (openai.ChatCompletionRequest, error) {
	creq := openai.ChatCompletionRequest{Model: c.cfg.Model}
	for i, m := range req.Messages {
		switch m.Role {
		case openai.ChatMessageRoleSystem, openai.ChatMessageRoleDeveloper, openai.ChatMessageRoleUser,
			openai.ChatMessageRoleAssistant, openai.ChatMessageRoleTool:
		default:
			return creq, fmt.Errorf("message %d has role %q: expected system, user, assistant or tool", i, m.Role)
		}
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			args := tc.Arguments
			if args == "" {
				args = "{}" // go-openai omits empty arguments, which providers reject
			}
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
			})
		}
		creq.Messages = append(creq.Messages, om)
	}
	for _, t := range req.Tools {
		creq.Tools = append(creq.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Schema(),
		}})
	}
	if len(creq.Tools) > 0 {
		creq.ParallelToolCalls = false
	}
	reasoning := reasoningModel(c.cfg.Model)
	if t, ok := c.cfg.SentTemperature(); ok {
		creq.Temperature = t
		if t == 0 {
			creq.Temperature = math.SmallestNonzeroFloat32 // greedy (see Config.Temperature)
		}
	}
	if c.cfg.MaxOutputTokens > 0 {
		if reasoning {
			creq.MaxCompletionTokens = c.cfg.MaxOutputTokens
		} else {
			creq.MaxTokens = c.cfg.MaxOutputTokens
		}
	}
	if c.cfg.Seed != nil {
		seed := *c.cfg.Seed
		creq.Seed = &seed
	}
	return creq, nil
}

// SentTemperature is the temperature the requests ask for (0: greedy),
// and false when they carry none: an OpenAI reasoning model at
// temperature 0 gets its provider's default.
func (c Config) SentTemperature() (float32, bool) {
	if c.Temperature == 0 && reasoningModel(c.Model) {
		return 0, false
	}
	return c.Temperature, true
}

// reasoningModel mirrors go-openai's test for OpenAI reasoning models,
// whose requests it rejects when they carry max_tokens or a temperature
// other than 1.
func reasoningModel(name string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// read fills reply from a successful response; an error means the body was
// not a usable completion (retried as a server fault).
func (c *OpenAI) read(resp openai.ChatCompletionResponse, req session.Request, reply *Reply) error {
	if len(resp.Choices) == 0 {
		return fmt.Errorf("%s answered with no choices: %s; check that the base URL is an OpenAI-compatible API",
			SafeURL(c.cfg.BaseURL), c.redact(snippetJSON(resp)))
	}
	ch := resp.Choices[0]
	reply.Content = ch.Message.Content
	reply.FinishReason = string(ch.FinishReason)
	reply.ToolCalls = nil
	next := priorCalls(req) + 1
	for _, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" { // some local servers send none; the next request needs one
			id = "call_" + strconv.Itoa(next)
		}
		next++
		reply.ToolCalls = append(reply.ToolCalls, session.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	u := Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		u.CachedTokens = d.CachedTokens
	}
	if d := resp.Usage.CompletionTokensDetails; d != nil {
		u.ReasoningTokens = d.ReasoningTokens
	}
	if u.PromptTokens == 0 && u.CompletionTokens == 0 {
		var err error
		u, err = estimate(c.cfg.Encoding, reply.RequestTokens, ch.Message.Content, ch.Message.ReasoningContent, reply.ToolCalls)
		if err != nil {
			return err
		}
	}
	reply.Usage = u
	return nil
}

func snippetJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return snippet(b)
}

// priorCalls counts the tool calls the request's assistant messages made.
func priorCalls(req session.Request) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.ToolCalls)
	}
	return n
}

// estimate is the usage of a reply counted with the tokenizer.
func estimate(enc session.Encoding, prompt int, content, reasoning string, calls []session.ToolCall) (Usage, error) {
	u := Usage{PromptTokens: prompt, Estimated: true}
	n, err := session.CountTokens(enc, content)
	if err != nil {
		return u, err
	}
	u.CompletionTokens = n
	if u.ReasoningTokens, err = session.CountTokens(enc, reasoning); err != nil {
		return u, err
	}
	u.CompletionTokens += u.ReasoningTokens
	for _, tc := range calls {
		n, err := session.CountTokens(enc, tc.Name+tc.Arguments)
		if err != nil {
			return u, err
		}
		u.CompletionTokens += n
	}
	return u, nil
}

// backoff is how long to wait before retry n (from 0): the provider's
// Retry-After when it gave one, capped at RetryMax, else equal jitter over
// an exponential capped at RetryMax.
func (c *OpenAI) backoff(retry int, after time.Duration) time.Duration {
	if after > 0 {
		return min(after, c.cfg.RetryMax)
	}
	return jitter(c.cfg.RetryBase, c.cfg.RetryMax, retry)
}

// jitter is a uniform time in [d/2, d], d = min(base·2ⁿ, ceiling).
func jitter(base, ceiling time.Duration, n int) time.Duration {
	d := ceiling
	if n < 62 {
		if e := base << n; e > 0 && e>>n == base && e < ceiling {
			d = e
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d or until ctx ends, and says how long it slept.
func sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return d, nil
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
}

func (c *OpenAI) redact(s string) string {
	if c.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, c.cfg.APIKey, "[redacted]")
}

// redactErr makes sure err's text does not hold the key.
func (c *OpenAI) redactErr(err error) error {
	if err == nil || c.cfg.APIKey == "" || !strings.Contains(err.Error(), c.cfg.APIKey) {
		return err
	}
	return &redactedError{msg: c.redact(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// exchange is what the recorder saw of one attempt's HTTP response.
type exchange struct {
	status int
	header http.Header
	head   []byte // the first bytes of the body
	retry  bool   // set by classify
	// notCompletion says a 2xx came whose body is not a chat completion
	// (not JSON, or no choices); retried once at most.
	notCompletion bool
	// bodyErr is how reading the body failed before its end (a connection
	// lost mid-body), nil when it ended cleanly.
	bodyErr error
}

// retryAfter is the wait the provider asked for: retry-after-ms (OpenAI),
// else Retry-After in seconds or as an HTTP date; 0 when none.
func (x *exchange) retryAfter() time.Duration {
	if x.header == nil {
		return 0
	}
	if v := strings.TrimSpace(x.header.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(x.header.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// throttled says the attempt met a throttling reply, one to tell
// Config.Gate of: a retryable 429 (not "insufficient_quota"), or a 503
// with Retry-After.
func (x *exchange) throttled() bool {
	return x.retry && (x.status == http.StatusTooManyRequests ||
		x.status == http.StatusServiceUnavailable && x.retryAfter() > 0)
}

// passed says the provider took the attempt, one to tell Config.Gate of:
// it answered with a status below 500 other than 429.
func (x *exchange) passed() bool {
	return x.status != 0 && x.status < 500 && x.status != http.StatusTooManyRequests
}

type exchangeKey struct{}

const headBytes = 512

// recorder is go-openai's HTTPDoer: it sends with the configured client
// and records the response of the attempt whose context carries an
// exchange. go-openai drops the headers of error responses, and with them
// Retry-After.
type recorder struct{ client *http.Client }

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := r.client.Do(req)
	if x, ok := req.Context().Value(exchangeKey{}).(*exchange); ok && resp != nil {
		x.status = resp.StatusCode
		x.header = resp.Header.Clone()
		resp.Body = &headReader{ReadCloser: resp.Body, x: x}
	}
	return resp, err
}

// headReader keeps the first headBytes of a body.
type headReader struct {
	io.ReadCloser
	x *exchange
}

func (h *headReader) Read(p []byte) (int, error) {
	n, err := h.ReadCloser.Read(p)
	if room := headBytes - len(h.x.head); room > 0 && n > 0 {
		h.x.head = append(h.x.head, p[:min(n, room)]...)
	}
	if err != nil && err != io.EOF && h.x.bodyErr == nil {
		h.x.bodyErr = err
	}
	return n, err
}

// SafeURL is u without the parts that may hold a secret (user:password and
// the query), for messages and trajectories.
func SafeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a malformed URL)"
	}
	p.User = nil
	if p.RawQuery != "" {
		p.RawQuery = "…"
	}
	p.Fragment = ""
	return p.String()
}
