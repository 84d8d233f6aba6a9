package sidecar

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// envoyLike answers /ready as Envoy does: 503 INITIALIZING for the first notReady probes, then
// 200 LIVE. It counts the probes.
type envoyLike struct {
	notReady int64
	probes   atomic.Int64
}

func (e *envoyLike) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/ready" {
		http.NotFound(w, r)
		return
	}
	if e.probes.Add(1) <= e.notReady {
		w.WriteHeader(503)
		w.Write([]byte("INITIALIZING\n"))
		return
	}
	w.Write([]byte("LIVE\n"))
}

func fast() WaitOptions { return WaitOptions{Backoff: Constant{time.Millisecond}} }

func TestWaitReadyAfterNotReady(t *testing.T) {
	e := &envoyLike{notReady: 5}
	srv := httptest.NewServer(e)
	defer srv.Close()
	res, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, fast())
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if res.Probes != 6 || e.probes.Load() != 6 {
		t.Errorf("probes = %d (server saw %d), want 6", res.Probes, e.probes.Load())
	}
	if !res.Last.Ready || res.Last.StatusCode != 200 || res.Last.Body != "LIVE" {
		t.Errorf("last probe = %+v, want ready 200 LIVE", res.Last)
	}
}

// TestWaitTimeout checks that the error keeps both why the wait stopped and what the sidecar
// last said.
func TestWaitTimeout(t *testing.T) {
	srv := httptest.NewServer(&envoyLike{notReady: 1 << 62})
	defer srv.Close()
	o := fast()
	o.Timeout = 50 * time.Millisecond
	_, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, o)
	var we *WaitError
	if !errors.As(err, &we) {
		t.Fatalf("WaitReady: got %v, want a *WaitError", err)
	}
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("reason = %v, want ErrTimeout", we.Reason)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 503 || se.Body != "INITIALIZING" {
		t.Errorf("last probe error = %v, want 503 INITIALIZING", we.Last)
	}
	if we.Probes < 2 {
		t.Errorf("probes = %d, want several", we.Probes)
	}
}

// TestWaitRetriesExhausted: a retry limit of n means exactly n+1 probes, as Polly's retryCount.
func TestWaitRetriesExhausted(t *testing.T) {
	e := &envoyLike{notReady: 1 << 62}
	srv := httptest.NewServer(e)
	defer srv.Close()
	_, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, WaitOptions{Backoff: Limit(Constant{time.Millisecond}, 3)})
	if !errors.Is(err, ErrRetriesExhausted) {
		t.Fatalf("WaitReady: got %v, want ErrRetriesExhausted", err)
	}
	if got := e.probes.Load(); got != 4 {
		t.Errorf("server saw %d probes, want 4", got)
	}
}

// TestWaitCancelCause: a wait stopped by its caller reports the caller's cause (a signal, say).
func TestWaitCancelCause(t *testing.T) {
	e := &envoyLike{notReady: 1 << 62}
	probed := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.probes.Load() >= 1 { // the first probe's answer has been read: a verdict exists
			once.Do(func() { close(probed) })
		}
		e.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cause := errors.New("received SIGTERM")
	ctx, cancel := context.WithCancelCause(context.Background())
	o := WaitOptions{Backoff: Constant{time.Millisecond}} // only a cancel can end this wait
	done := make(chan error)
	go func() {
		_, err := WaitReady(ctx, Check{Kind: EnvoyAdmin, URL: srv.URL}, o)
		done <- err
	}()
	<-probed
	cancel(cause)
	select {
	case err := <-done:
		if !errors.Is(err, cause) {
			t.Errorf("WaitReady: got %v, want the cause %v", err, cause)
		}
		var se *StatusError
		if !errors.As(err, &se) {
			t.Errorf("WaitReady: %v lost the last probe's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitReady did not return after cancel")
	}
}

// TestWaitRefused: nothing listening is "not ready yet", and the error says so.
func TestWaitRefused(t *testing.T) {
	url := closedURL(t)
	o := WaitOptions{Backoff: Limit(Constant{time.Millisecond}, 2)}
	_, err := WaitReady(context.Background(), Check{Kind: HTTPStatus, URL: url + "/ready"}, o)
	if !errors.Is(err, ErrRetriesExhausted) || !httpc.Refused(err) {
		t.Errorf("WaitReady: got %v, want retries exhausted after connection refused", err)
	}
}

// TestProbeTimeout: a hung endpoint costs one probe timeout, not forever.
func TestProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	o := WaitOptions{Backoff: Limit(Constant{time.Millisecond}, 1), ProbeTimeout: 20 * time.Millisecond}
	_, err := WaitReady(context.Background(), Check{Kind: HTTPStatus, URL: srv.URL}, o)
	if !errors.Is(err, ErrRetriesExhausted) || !httpc.Timeout(err) {
		t.Errorf("WaitReady: got %v, want retries exhausted after probe timeouts", err)
	}
}

func TestProbeKinds(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/dapr/v1.0/healthz/outbound", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("/old-envoy/server_info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		w.Write([]byte("{\n \"version\": \"x\",\n \"state\": \"LIVE\",\n \"uptime_current_epoch\": \"1s\"\n}\n"))
	})
	mux.HandleFunc("/draining/ready", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		w.Write([]byte("DRAINING\n"))
	})
	mux.HandleFunc("/initializing-old/server_info", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"state": "INITIALIZING"}`))
	})
	mux.HandleFunc("/notjson/server_info", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("LIVE")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		name      string
		check     Check
		wantReady bool
		wantURL   string
	}{
		{"any 2xx is ready (Dapr's 204)", Check{URL: srv.URL + "/dapr/v1.0/healthz/outbound"}, true, "/dapr/v1.0/healthz/outbound"},
		{"envoy without /ready falls back to server_info", Check{Kind: EnvoyAdmin, URL: srv.URL + "/old-envoy/"}, true, "/old-envoy/server_info"},
		{"envoy draining", Check{Kind: EnvoyAdmin, URL: srv.URL + "/draining"}, false, "/draining/ready"},
		{"server_info not LIVE", Check{Kind: EnvoyAdmin, URL: srv.URL + "/initializing-old"}, false, "/initializing-old/server_info"},
		{"server_info not JSON", Check{Kind: EnvoyAdmin, URL: srv.URL + "/notjson"}, false, "/notjson/server_info"},
		{"404 is not ready", Check{URL: srv.URL + "/nothing"}, false, "/nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Probe(context.Background(), tt.check)
			if r.Ready != tt.wantReady || r.URL != srv.URL+tt.wantURL {
				t.Errorf("Probe = %+v, want ready %v at %s", r, tt.wantReady, tt.wantURL)
			}
			if !r.Ready && r.Err == nil {
				t.Error("not ready without an error")
			}
		})
	}
}

func TestJoinPath(t *testing.T) {
	for base, want := range map[string]string{
		"http://127.0.0.1:15000":         "http://127.0.0.1:15000/ready",
		"http://127.0.0.1:15000/":        "http://127.0.0.1:15000/ready",
		"http://[::1]:15000/admin/":      "http://[::1]:15000/admin/ready",
		"http://localhost:15000/?x=1#f":  "http://localhost:15000/ready",
		"http://127.0.0.1:15000//extra/": "http://127.0.0.1:15000//extra/ready",
	} {
		if got := joinPath(base, "ready"); got != want {
			t.Errorf("joinPath(%q) = %q, want %q", base, got, want)
		}
	}
}

// closedURL returns the URL of a loopback port where nothing listens.
func closedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func BenchmarkProbe(b *testing.B) {
	srv := httptest.NewServer(&envoyLike{})
	defer srv.Close()
	c := Check{Kind: EnvoyAdmin, URL: srv.URL}
	for b.Loop() {
		if r := Probe(context.Background(), c); !r.Ready {
			b.Fatal(r.Err)
		}
	}
}
