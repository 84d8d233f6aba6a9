//go:build linux

package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Do sends method path (e.g. "/api/v1/namespaces") to the apiserver as Admin and returns the
// status code. A nil body sends none; a string, []byte or json.RawMessage is sent as JSON text;
// anything else is marshalled to JSON. PATCH bodies are sent as a JSON merge patch. If out is not
// nil the response body, whatever the status, is decoded into it as JSON (or, for *[]byte, stored
// as is). A transport or decoding error fails the test.
func (c *Cluster) Do(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	return c.DoAs(t, c.AdminToken, method, path, body, out)
}

// DoAs is Do with the given bearer token ("" sends none).
func (c *Cluster) DoAs(t testing.TB, token, method, path string, body, out any) int {
	t.Helper()
	code, data, _, err := c.roundTrip(context.Background(), token, method, path, body)
	if err != nil {
		t.Fatalf("kubetest: %s %s: %v", method, path, err)
	}
	switch o := out.(type) {
	case nil:
	case *[]byte:
		*o = data
	default:
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("kubetest: %s %s: %d, decoding %.200q: %v", method, path, code, data, err)
		}
	}
	return code
}

// Create POSTs obj (as for Do's body) to path as Admin, fails the test unless the answer is 2xx,
// and returns the created object.
func (c *Cluster) Create(t testing.TB, path string, obj any) map[string]any {
	t.Helper()
	var raw []byte
	code := c.Do(t, http.MethodPost, path, obj, &raw)
	if code/100 != 2 {
		t.Fatalf("kubetest: POST %s: %d: %s", path, code, bytes.TrimSpace(raw))
	}
	var created map[string]any
	if err := json.Unmarshal(raw, &created); err != nil {
		t.Fatalf("kubetest: POST %s: decoding %.200q: %v", path, raw, err)
	}
	return created
}

// Post POSTs obj (as for Do's body) to path as Admin, for a caller without a test (TestMain),
// and returns an error unless the answer is 2xx; a 409 (it exists) is an APIError with that Code.
func (c *Cluster) Post(ctx context.Context, path string, obj any) error {
	code, data, _, err := c.roundTrip(ctx, c.AdminToken, http.MethodPost, path, obj)
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	if code/100 != 2 {
		return &APIError{Code: code, Message: fmt.Sprintf("POST %s: %d: %s", path, code, bytes.TrimSpace(data))}
	}
	return nil
}

// APIError is an answer of the API server that is not 2xx.
type APIError struct {
	Code    int
	Message string
}

func (e *APIError) Error() string { return e.Message }

// Apply POSTs rawJSON to path as Admin (a create, e.g. of a Pod at
// /api/v1/namespaces/NS/pods) and fails the test unless the answer is 2xx.
func (c *Cluster) Apply(t testing.TB, path string, rawJSON string) {
	t.Helper()
	c.Create(t, path, rawJSON)
}

// WaitForStatus repeats method path with token (no body) until the apiserver answers want, and
// fails the test if it has not within 30 s. Use it where the apiserver is eventually consistent,
// such as a new RoleBinding reaching RBAC's cache.
func (c *Cluster) WaitForStatus(t testing.TB, token, method, path string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := c.status(method, path, token)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubetest: %s %s: still %d after 30s, want %d", method, path, got, want)
		}
		time.Sleep(pollInterval) // polling a condition, bounded by deadline
	}
}

// status returns the status code of method path with token, or -1 on a transport error. Each
// try is bounded, so that a stuck connection cannot outlast the caller's deadline by much.
func (c *Cluster) status(method, path, token string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	code, _, _, err := c.roundTrip(ctx, token, method, path, nil)
	if err != nil {
		return -1
	}
	return code
}

// Response is a whole answer of the apiserver.
type Response struct {
	Code int
	Body []byte
	// Warnings are the texts of its Warning headers (RFC 7234 form "299 - \"text\""), as
	// kubectl shows them: Pod Security's "would violate PodSecurity", unknown fields, deprecations.
	Warnings []string
}

// Send sends method path to the apiserver as Admin, with body as for Do, and returns the whole
// answer, its warnings included. A transport error fails the test.
func (c *Cluster) Send(t testing.TB, method, path string, body any) Response {
	t.Helper()
	code, data, h, err := c.roundTrip(context.Background(), c.AdminToken, method, path, body)
	if err != nil {
		t.Fatalf("kubetest: %s %s: %v", method, path, err)
	}
	var warnings []string
	for _, w := range h.Values("Warning") {
		warnings = append(warnings, warningText(w))
	}
	return Response{Code: code, Body: data, Warnings: warnings}
}

// warningText returns the text of a Warning header: 299 - "text" gives text.
func warningText(h string) string {
	rest, ok := strings.CutPrefix(h, "299 - ")
	if !ok {
		return h
	}
	if text, err := strconv.Unquote(rest); err == nil {
		return text
	}
	return rest
}

// roundTrip sends one request and reads the whole answer. The client's own timeout bounds it too.
func (c *Cluster) roundTrip(ctx context.Context, token, method, path string, body any) (int, []byte, http.Header, error) {
	r, err := requestBody(body)
	if err != nil {
		return 0, nil, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, r)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType(method))
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header, err
}

// requestBody returns body as a request body, as Do describes: nil for none, JSON text as is,
// and anything else marshalled to JSON.
func requestBody(body any) (io.Reader, error) {
	var data []byte
	switch b := body.(type) {
	case nil:
		return nil, nil
	case string:
		data = []byte(b)
	case []byte:
		data = b
	case json.RawMessage:
		data = b
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	return bytes.NewReader(data), nil
}

// contentType returns the media type of a request body: a JSON merge patch for PATCH, which
// the apiserver needs to tell it from its other patch types, and plain JSON otherwise.
func contentType(method string) string {
	if method == http.MethodPatch {
		return "application/merge-patch+json"
	}
	return "application/json"
}
