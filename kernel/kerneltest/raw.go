package kerneltest

import (
	"bufio"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// RawKernel is a driver spoken to in its own protocol, so that a test can send
// what the client never would and read every field of the response.
type RawKernel struct {
	conn kernel.Conn
	r    *bufio.Reader
	id   int
}

// NewRawKernel starts a kernel over t.
func NewRawKernel(tb testing.TB, t kernel.Transport) *RawKernel {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := t.Start(ctx)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Kill(); <-conn.Done() })
	return &RawKernel{conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
}

// Do sends one request and returns its response.
func (k *RawKernel) Do(tb testing.TB, req map[string]any) map[string]any {
	tb.Helper()
	k.id++
	req["id"] = k.id
	b, err := json.Marshal(req)
	require.NoError(tb, err)
	_, err = k.conn.Write(append(b, '\n'))
	require.NoError(tb, err)
	line, err := k.r.ReadBytes('\n')
	require.NoError(tb, err, "reading the response to %v", req)
	var res map[string]any
	require.NoError(tb, json.Unmarshal(line, &res), "%s", line)
	return res
}

// Exec runs a cell.
func (k *RawKernel) Exec(tb testing.TB, code string, timeoutMS int) map[string]any {
	req := map[string]any{"op": "exec", "code": code}
	if timeoutMS > 0 {
		req["timeout_ms"] = timeoutMS
	}
	return k.Do(tb, req)
}
