package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchAgain: a watch the apiserver ends with an ERROR event that asks
// for it again (its watch cache behind etcd, "Too large resource version",
// retryAfterSeconds) is made again, and goes on; an ERROR event that asks
// nothing ends it. A cluster start once failed on the first.
func TestWatchAgain(t *testing.T) {
	var watches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := watches.Add(1)
		switch {
		case r.URL.Path == "/fails":
			fmt.Fprintln(w, `{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}`)
		case n == 1:
			fmt.Fprintln(w, `{"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"Timeout: Too large resource version: 248, current: 247","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge"}],"retryAfterSeconds":1},"code":504}}`)
		default:
			fmt.Fprintln(w, `{"type":"ADDED","object":{"metadata":{"name":"default"}}}`)
		}
	}))
	t.Cleanup(srv.Close)
	a := &API{Server: srv.URL, HTTP: srv.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	var seen []string
	err := a.Watch(ctx, "/sa", func(ev Event) (bool, error) {
		seen = append(seen, ev.Type)
		return ev.Type == "ADDED", nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"ADDED"}, seen, "the ERROR event is not the caller's")
	assert.EqualValues(t, 2, watches.Load(), "watched again")

	err = a.Watch(ctx, "/fails", func(Event) (bool, error) { return false, nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Expired")
}
