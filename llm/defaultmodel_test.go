package llm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultModel(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string // CTXCODE_MODEL, OPENAI_API_KEY, OPENAI_BASE_URL
		baseURL string            // --base-url
		want    string
		wantErr string
	}{
		{"nothing configured", nil, "", "", "no model is configured"},
		{"a key: OpenAI's default", map[string]string{"OPENAI_API_KEY": "k"}, "", DefaultModelName, ""},
		{"CTXCODE_MODEL wins", map[string]string{"CTXCODE_MODEL": "m1"}, "http://localhost:11434/v1", "m1", ""},
		{"OpenAI named, slash and all", map[string]string{"OPENAI_API_KEY": "k"}, OpenAIBaseURL + "/", DefaultModelName, ""},
		{"a local server from the flag", nil, "http://localhost:11434/v1", "", "name the model to ask at http://localhost:11434/v1 with --model NAME"},
		{"a local server from the environment", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, "", "", "at http://127.0.0.1:8000/v1"},
		{"the flag over the environment", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, OpenAIBaseURL, DefaultModelName, ""},
		{"credentials in the URL are not shown", nil, "http://user:secret@host/v1", "", "name the model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"CTXCODE_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
				t.Setenv(k, tt.env[k])
			}
			got, err := DefaultModel(tt.baseURL)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
