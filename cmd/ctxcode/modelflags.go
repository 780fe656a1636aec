package main

import (
	"time"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/session"
)

// modelFlags are the flags of the commands that ask a model (ask, bench):
// the endpoint, the sampling seed, the token vocabulary and the budgets of
// a run.
type modelFlags struct {
	baseURL    string
	encoding   string
	seed       int
	reqTimeout time.Duration
	retries    int
	agent      agent.Config
}

// register adds the flags to fs, the sampling seed as seedFlag.
func (m *modelFlags) register(fs *flagSet, seedFlag string) {
	m.agent = agent.DefaultConfig()
	fs.StringVar(&m.baseURL, "base-url", "", "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else https://api.openai.com/v1)")
	fs.StringVar(&m.encoding, "encoding", string(session.O200kBase), "token vocabulary for estimates: o200k_base or cl100k_base")
	fs.IntVar(&m.seed, seedFlag, -1, "sampling seed sent to the model (-1: none)")
	fs.DurationVar(&m.reqTimeout, "request-timeout", 2*time.Minute, "time limit of one model request")
	fs.IntVar(&m.retries, "retries", llm.DefaultMaxRetries, "times a failed model request is tried again (429, 5xx, timeouts)")
	fs.IntVar(&m.agent.MaxTurns, "max-turns", m.agent.MaxTurns, "most model calls in a run")
	fs.IntVar(&m.agent.MaxPromptTokens, "max-prompt-tokens", m.agent.MaxPromptTokens, "most prompt tokens summed over a run's calls")
	fs.IntVar(&m.agent.MaxOutputTokens, "max-output-tokens", 4096, "most output tokens per model call")
	fs.DurationVar(&m.agent.CellTimeout, "timeout", m.agent.CellTimeout, "soft time limit per cell")
	fs.IntVar(&m.agent.OutputBudget, "output-budget", m.agent.OutputBudget, "characters of a cell's output the model reads (head and tail kept); -1: no limit")
	fs.IntVar(&m.agent.MaxRestarts, "max-restarts", m.agent.MaxRestarts, "kernel restarts a run may make after the kernel dies")
}

// check refuses budgets that cannot work and fills the agent's encoding.
func (m *modelFlags) check() error {
	if err := session.CheckEncoding(session.Encoding(m.encoding)); err != nil {
		return usagef("--encoding: %v", err)
	}
	m.agent.Encoding = session.Encoding(m.encoding)
	switch {
	case m.agent.MaxTurns < 1:
		return usagef("--max-turns %d: a run needs at least one turn", m.agent.MaxTurns)
	case m.agent.MaxPromptTokens < 1:
		return usagef("--max-prompt-tokens %d: give a positive number of tokens", m.agent.MaxPromptTokens)
	case m.agent.MaxOutputTokens < 1:
		return usagef("--max-output-tokens %d: give a positive number of tokens", m.agent.MaxOutputTokens)
	case m.agent.CellTimeout <= 0:
		return usagef("--timeout %s: give a positive duration such as 30s", m.agent.CellTimeout)
	case m.retries < 0:
		return usagef("--retries %d: give 0 (never retry) or more", m.retries)
	case m.reqTimeout <= 0:
		return usagef("--request-timeout %s: give a positive duration such as 2m", m.reqTimeout)
	case m.agent.MaxRestarts < 0:
		return usagef("--max-restarts %d: give 0 (never restart) or more", m.agent.MaxRestarts)
	case m.agent.OutputBudget == 0:
		return usagef("--output-budget 0 would show the model nothing: give a number of characters, or -1 for no limit")
	}
	if m.agent.MaxRestarts == 0 {
		m.agent.MaxRestarts = -1 // the agent's zero means its default
	}
	return nil
}

// defaultModel is the model to ask when none is named (llm.DefaultModel);
// a usage error, what says which command, when there is none.
func (m *modelFlags) defaultModel(what string) (string, error) {
	name, err := llm.DefaultModel(m.baseURL)
	if err != nil {
		return "", usagef("%s: %v", what, err)
	}
	return name, nil
}

// endpoint is the base URL the models are asked at, without credentials.
func (m *modelFlags) endpoint() string {
	base := m.baseURL
	if base == "" {
		base = llm.DefaultConfig().BaseURL
	}
	return llm.SafeURL(base)
}

// openAI is the client of model name at the endpoint; onRetry hears of
// each retry and gate (nil: none) paces its requests.
func (m *modelFlags) openAI(name string, onRetry func(llm.Retry), gate llm.Gate) (llm.Model, error) {
	cfg := llm.DefaultConfig()
	cfg.Model = name
	if m.baseURL != "" {
		cfg.BaseURL = m.baseURL
	}
	cfg.MaxOutputTokens = m.agent.MaxOutputTokens
	cfg.Timeout = m.reqTimeout
	cfg.MaxRetries = m.retries
	if m.retries == 0 {
		cfg.MaxRetries = -1 // llm's zero is its default
	}
	cfg.Encoding = session.Encoding(m.encoding)
	cfg.OnRetry = onRetry
	cfg.Gate = gate
	if m.seed >= 0 {
		seed := m.seed
		cfg.Seed = &seed
	}
	model, err := llm.NewOpenAI(cfg)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return model, nil
}
