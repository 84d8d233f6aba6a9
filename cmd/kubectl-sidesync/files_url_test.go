package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLintURL: -f takes http(s) URLs as kubectl does, beside files, as the process a user runs;
// an answer other than 200 is an error naming the URL and the status, exit 2, nothing on stdout.
func TestLintURL(t *testing.T) {
	var missing atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hangs.yaml", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, lintHangs) })
	mux.HandleFunc("GET /missing.yaml", func(w http.ResponseWriter, _ *http.Request) {
		missing.Add(1)
		http.NotFound(w, nil)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "warns.yaml"), lintWarns)

	r := process(t, dir, "", "lint", "-f", srv.URL+"/hangs.yaml", "-f", "warns.yaml")
	if r.code != 1 || r.stderr != "2 errors, 2 warnings in 2 objects\n" {
		t.Errorf("lint -f URL -f FILE: got %s\nwant exit 1 and the findings of both", r)
	}
	r = process(t, dir, "", "lint", "-f", srv.URL+"/missing.yaml")
	want := `kubectl sidesync lint: unable to read URL "` + srv.URL + `/missing.yaml", server reported 404 Not Found, status code=404` + "\n"
	if r.code != 2 || r.stdout != "" || r.stderr != want {
		t.Errorf("lint -f a missing URL: got %s\nwant exit 2 and %q", r, want)
	}
	if n := missing.Load(); n != 1 {
		t.Errorf("a 404 was asked for %d times, want once (kubectl retries only 5xx and failed requests)", n)
	}
}

// TestOpenURLRetries: a 5xx answer and a failed request are tried again, up to three attempts
// in all, as kubectl does; then the last error stands.
func TestOpenURLRetries(t *testing.T) {
	var calls, failFor atomic.Int64
	failFor.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) <= failFor.Load() {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "kind: Pod\n")
	}))
	defer srv.Close()

	r, closeFn, err := openURL(srv.URL, 0)
	if err != nil {
		t.Fatalf("two 503s, then 200: %v", err)
	}
	body, _ := io.ReadAll(r)
	closeFn()
	if string(body) != "kind: Pod\n" || calls.Load() != 3 {
		t.Errorf("got %q after %d requests, want the body after 3", body, calls.Load())
	}

	calls.Store(0)
	failFor.Store(10)
	if _, _, err := openURL(srv.URL, 0); err == nil || !strings.Contains(err.Error(), "status code=503") || calls.Load() != urlAttempts {
		t.Errorf("503 every time: %v after %d requests, want the 503 after %d", err, calls.Load(), urlAttempts)
	}

	srv.Close() // refused: a failed request, tried again
	if _, _, err := openURL(srv.URL, 0); err == nil || !strings.Contains(err.Error(), "reading "+srv.URL) {
		t.Errorf("a refused connection: %v", err)
	}
}
