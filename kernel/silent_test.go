package kernel

import (
	"bufio"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDriverSilentBeforeFirstRequest: the driver writes nothing on its
// protocol output before it has read a request. A Kubernetes attach (the
// sandbox's Kube transport) starts only once the container runs, so what
// the driver wrote before would be lost; here, over a pipe connected from
// the start, the first line out is the answer to the first request.
func TestDriverSilentBeforeFirstRequest(t *testing.T) {
	for _, f := range flavours(t) {
		t.Run(f.name, func(t *testing.T) {
			tr, err := NewLocalPython(f.python, f.noIPython, LocalConfig{})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			conn, err := tr.Start(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			_, err = conn.Write([]byte(`{"id":41,"op":"ping"}` + "\n"))
			require.NoError(t, err)
			line, err := bufio.NewReader(conn).ReadBytes('\n')
			require.NoError(t, err)
			var first Result
			require.NoError(t, json.Unmarshal(line, &first), "the first bytes out: %q", line)
			assert.Equal(t, int64(41), first.ID, "the first line out answers the first request: %q", line)
			assert.Equal(t, StatusOK, first.Status)
		})
	}
}
