package clustertest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// API is a client of the cluster's apiserver, as its administrator
// (system:masters): plain REST and JSON over net/http, for what a test of
// the cluster itself needs (the backend's tests use client-go).
type API struct {
	// Server is the apiserver's URL, https://127.0.0.1:PORT.
	Server string
	// HTTP trusts the cluster's CA and presents the admin's certificate.
	HTTP *http.Client
}

// Event is one event of a watch: ADDED, MODIFIED, DELETED, BOOKMARK or
// ERROR, and the object, as JSON.
type Event struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// StatusError is an answer of the apiserver other than 2xx.
type StatusError struct {
	Method, Path string
	Code         int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Code, strings.TrimSpace(e.Body))
}

// IsNotFound reports whether err is the apiserver's 404.
func IsNotFound(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == http.StatusNotFound
}

func newAPI(server, caFile, certFile, keyFile string) (*API, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		// Never a proxy: the apiserver is on 127.0.0.1.
		Proxy: nil,
	}
	return &API{Server: server, HTTP: &http.Client{Transport: tr}}, nil
}

// Do sends a request with body (marshalled to JSON unless nil or []byte)
// and returns the answer's body; an answer other than 2xx is a
// *StatusError.
func (a *API) Do(ctx context.Context, method, path string, body any) ([]byte, error) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Server+path, r)
	if err != nil {
		return nil, err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return out, &StatusError{Method: method, Path: path, Code: resp.StatusCode, Body: string(out)}
	}
	return out, nil
}

// Watch watches the collection at path (with its query, such as a
// fieldSelector) from its current state on: the objects there now come
// first, as ADDED events, then every change. It calls until for each
// event, and returns once until says done, until returns an error, the
// apiserver ends the watch, or ctx ends. An apiserver still making its
// watch cache answers 429 with a Retry-After, or an ERROR event whose
// status has a retryAfterSeconds (a cache behind etcd: "Too large
// resource version"): the watch is tried again then, as the server asks.
func (a *API) Watch(ctx context.Context, path string, until func(Event) (done bool, err error)) error {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	path += sep + "watch=1"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.Server+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := a.HTTP.Do(req)
		if err != nil {
			return fmt.Errorf("watch %s: %w", path, err)
		}
		var wait time.Duration
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			wait = retryAfter(resp)
			resp.Body.Close()
		case http.StatusOK:
			err = readEvents(resp.Body, until)
			resp.Body.Close()
			var again *watchAgain
			if !errors.As(err, &again) {
				if err != nil && ctx.Err() != nil {
					return fmt.Errorf("watch %s: %w", path, ctx.Err())
				}
				return err
			}
			wait = again.after
		default:
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return &StatusError{Method: "WATCH", Path: path, Code: resp.StatusCode, Body: string(b)}
		}
		select { // the server's own wait, before it is asked again
		case <-ctx.Done():
			return fmt.Errorf("watch %s: %w", path, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// watchAgain is an ERROR event that asks for the watch again after a
// while.
type watchAgain struct {
	after  time.Duration
	status string
}

func (e *watchAgain) Error() string {
	return fmt.Sprintf("watch error, to try again after %s: %s", e.after, e.status)
}

// errorEvent is the error of an ERROR event with object status: a
// *watchAgain when the status names a retryAfterSeconds.
func errorEvent(status json.RawMessage) error {
	var st struct {
		Details struct {
			RetryAfterSeconds int `json:"retryAfterSeconds"`
		} `json:"details"`
	}
	if json.Unmarshal(status, &st) == nil && st.Details.RetryAfterSeconds > 0 {
		return &watchAgain{after: time.Duration(st.Details.RetryAfterSeconds) * time.Second, status: string(status)}
	}
	return fmt.Errorf("watch error: %s", status)
}

// errWatchEnded is a watch the apiserver closed before the caller was
// done.
var errWatchEnded = errors.New("the apiserver ended the watch")

func readEvents(body io.Reader, until func(Event) (bool, error)) error {
	dec := json.NewDecoder(body)
	for {
		var ev Event
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			return errWatchEnded
		} else if err != nil {
			return fmt.Errorf("read a watch event: %w", err)
		}
		if ev.Type == "ERROR" {
			return errorEvent(ev.Object)
		}
		done, err := until(ev)
		if err != nil || done {
			return err
		}
	}
}

// retryAfter is the wait a 429 asks for (its Retry-After, in seconds),
// one second when it names none.
func retryAfter(resp *http.Response) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// WaitDeleted returns once the object name of the collection at path
// (such as /api/v1/namespaces/NS/pods) is gone: at once if it is,
// else at its DELETED event, watched from the version it was read at.
func (a *API) WaitDeleted(ctx context.Context, path, name string) error {
	b, err := a.Do(ctx, http.MethodGet, path+"/"+name, nil)
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("read %s/%s: %w", path, name, err)
	}
	q := url.Values{"fieldSelector": {"metadata.name=" + name}, "resourceVersion": {obj.Metadata.ResourceVersion}}
	return a.Watch(ctx, path+"?"+q.Encode(), func(ev Event) (bool, error) { return ev.Type == "DELETED", nil })
}
