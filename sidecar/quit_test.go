package sidecar

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// quitServer answers POST /quitquitquit with status code and body, counting requests.
func quitServer(t *testing.T, code int, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Method != "POST" {
			w.WriteHeader(405)
			w.Write([]byte("Method " + r.Method + " not allowed, POST required."))
			return
		}
		w.WriteHeader(code)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func quickRetries() QuitOptions {
	return QuitOptions{Backoff: Limit(Constant{time.Millisecond}, 3), RequestTimeout: time.Second}
}

func TestQuitOK(t *testing.T) {
	srv, n := quitServer(t, 200, "OK\n")
	res, err := Quit(context.Background(), EnvoyQuit(srv.URL+"/"), quickRetries())
	if err != nil {
		t.Fatalf("Quit: %v", err)
	}
	if res.StatusCode != 200 || res.Body != "OK" || res.Attempts != 1 || n.Load() != 1 || res.URL != srv.URL+"/quitquitquit" {
		t.Errorf("Quit = %+v after %d requests, want one 200 OK", res, n.Load())
	}
}

func TestQuitStatusErrors(t *testing.T) {
	tests := []struct {
		name         string
		code         int
		method       string
		wantAttempts int
	}{
		{"405 is final (GET to Envoy)", 200, "GET", 1},
		{"403 is final (not from loopback)", 403, "", 1},
		{"404 is final (linkerd shutdown disabled)", 404, "", 1},
		{"500 is retried", 500, "", 4},
		{"503 is retried", 503, "", 4},
		{"429 is retried", 429, "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, n := quitServer(t, tt.code, "nope\n")
			c := Call{URL: srv.URL + "/quitquitquit", Method: tt.method}
			_, err := Quit(context.Background(), c, quickRetries())
			var qe *QuitError
			var se *StatusError
			if !errors.As(err, &qe) || !errors.As(err, &se) {
				t.Fatalf("Quit: got %v, want a *QuitError with a *StatusError", err)
			}
			if qe.Attempts != tt.wantAttempts || int(n.Load()) != tt.wantAttempts {
				t.Errorf("attempts = %d (server saw %d), want %d", qe.Attempts, n.Load(), tt.wantAttempts)
			}
		})
	}
}

// rawServer accepts connections and hands each to handle after reading the request head.
func rawServer(t *testing.T, handle func(c *net.TCPConn)) string {
	t.Helper()
	return rawServerOn(t, nil, handle)
}

// rawServerOn is rawServer that first hands its listener to listening, when not nil.
func rawServerOn(t *testing.T, listening func(net.Listener), handle func(c *net.TCPConn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if listening != nil {
		listening(l)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				c.Read(buf) // the whole small request arrives in one segment on loopback
				handle(c.(*net.TCPConn))
			}()
		}
	}()
	return "http://" + l.Addr().String()
}

// TestQuitClosedAfterRequest: a connection closed right after the request with no answer (reset
// or plain close) is a quit once the sidecar is seen gone; one whose handler failed and that runs
// on (Istio's pilot-agent before its Envoy has started) is asked again until it answers, and a
// sidecar that never does fails the quit within Timeout, saying so.
func TestQuitClosedAfterRequest(t *testing.T) {
	closes := map[string]func(*net.TCPConn){
		"reset": func(c *net.TCPConn) { c.SetLinger(0); c.Close() },
		"eof":   func(c *net.TCPConn) { c.Close() },
	}
	for name, closeConn := range closes {
		t.Run(name+"/gone", func(t *testing.T) {
			var l net.Listener
			url := rawServerOn(t, func(ln net.Listener) { l = ln }, func(c *net.TCPConn) {
				l.Close() // the sidecar goes away: the next connection is refused
				closeConn(c)
			})
			res, err := Quit(context.Background(), EnvoyQuit(url), quickRetries())
			if err != nil || !res.Closed || res.Attempts != 2 {
				t.Errorf("Quit = %+v, %v; want success with Closed on the second attempt (refused)", res, err)
			}
		})
		t.Run(name+"/handler failed twice", func(t *testing.T) {
			var n atomic.Int32
			url := rawServer(t, func(c *net.TCPConn) {
				if n.Add(1) <= 2 {
					closeConn(c)
					return
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nOK"))
				c.Close()
			})
			o := quickRetries()
			o.Backoff = Limit(Constant{time.Millisecond}, 0) // asking again spends no retry
			res, err := Quit(context.Background(), EnvoyQuit(url), o)
			if err != nil || res.Closed || res.StatusCode != 200 || res.Attempts != 3 {
				t.Errorf("Quit = %+v, %v; want 200 on the third attempt", res, err)
			}
		})
		t.Run(name+"/runs on", func(t *testing.T) {
			url := rawServer(t, closeConn)
			o := quickRetries()
			o.Timeout = 300 * time.Millisecond
			res, err := Quit(context.Background(), EnvoyQuit(url), o)
			var qe *QuitError
			if !errors.As(err, &qe) || !errors.Is(err, errUnanswered) || res.Closed || qe.Attempts < 2 ||
				!strings.Contains(err.Error(), "still listens: it did not take the quit") {
				t.Errorf("Quit = %+v, %v; want a QuitError: closed with no answer, still listening", res, err)
			}
		})
	}
}

// TestQuitHang: a sidecar that never answers costs a bounded time.
func TestQuitHang(t *testing.T) {
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	url := rawServer(t, func(c *net.TCPConn) { <-hold; c.Close() })
	o := QuitOptions{Backoff: Limit(Constant{time.Millisecond}, 2), RequestTimeout: 20 * time.Millisecond}
	start := time.Now()
	_, err := Quit(context.Background(), EnvoyQuit(url), o)
	var qe *QuitError
	if !errors.As(err, &qe) || !httpc.Timeout(err) || qe.Attempts != 3 {
		t.Fatalf("Quit: got %v, want a timeout after 3 attempts", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Quit took %v", time.Since(start))
	}
}

// TestQuitOverallTimeout: the whole call is bounded even if retries would go on.
func TestQuitOverallTimeout(t *testing.T) {
	url := closedURL(t)
	o := QuitOptions{Backoff: Constant{time.Millisecond}, Timeout: 50 * time.Millisecond}
	_, err := Quit(context.Background(), EnvoyQuit(url), o)
	var qe *QuitError
	if !errors.As(err, &qe) || !httpc.Refused(err) || qe.Attempts < 2 {
		t.Errorf("Quit: got %v, want refused after several attempts", err)
	}
}

func TestQuitAlternates(t *testing.T) {
	srv, n := quitServer(t, 200, "OK\n")
	c := Call{URL: closedURL(t) + "/quitquitquit", Alternates: []string{srv.URL + "/quitquitquit"}}
	res, err := Quit(context.Background(), c, quickRetries())
	if err != nil || res.URL != srv.URL+"/quitquitquit" || n.Load() != 1 || res.Attempts != 1 {
		t.Errorf("Quit = %+v, %v; want the alternate to take it at once", res, err)
	}
}

// TestQuitGoneAfterSend: refused after an earlier attempt delivered the request means the
// sidecar quit.
func TestQuitGoneAfterSend(t *testing.T) {
	var l net.Listener
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 4096)
		c.Read(buf)
		l.Close() // the sidecar stops listening...
		c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 9\r\n\r\ndraining\n"))
		c.Close()
	}()
	res, err := Quit(context.Background(), EnvoyQuit(url), quickRetries())
	if err != nil || !res.Closed || res.Attempts != 2 {
		t.Errorf("Quit = %+v, %v; want success on the second attempt", res, err)
	}
}

// TestQuitRefusedMeansGone: with RefusedMeansGone (the pod is being deleted), a refused quit is
// a sidecar already gone: success at once, one attempt, no retry; only once the URL and every
// alternate refused. Without it, a refusal is retried and fails.
func TestQuitRefusedMeansGone(t *testing.T) {
	o := quickRetries()
	o.RefusedMeansGone = true
	res, err := Quit(context.Background(), Call{URL: closedURL(t) + "/quitquitquit", Alternates: []string{closedURL(t) + "/quitquitquit"}}, o)
	if err != nil || !res.Gone || res.Closed || res.Attempts != 1 {
		t.Errorf("Quit = %+v, %v; want gone after one attempt", res, err)
	}
	srv, n := quitServer(t, 200, "OK\n")
	res, err = Quit(context.Background(), Call{URL: closedURL(t) + "/quitquitquit", Alternates: []string{srv.URL + "/quitquitquit"}}, o)
	if err != nil || res.Gone || res.StatusCode != 200 || n.Load() != 1 {
		t.Errorf("Quit = %+v, %v; want the alternate to take it", res, err)
	}
	if res, err := Quit(context.Background(), EnvoyQuit(closedURL(t)), quickRetries()); err == nil || res.Gone || res.Attempts != 4 {
		t.Errorf("without the option: Quit = %+v, %v; want refused after 4 attempts", res, err)
	}
}

// TestQuitHeaders: headers are sent, and secret ones never appear in errors.
func TestQuitHeaders(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("dapr-api-token")
		w.WriteHeader(401)
		w.Write([]byte("invalid api token\n"))
	}))
	defer srv.Close()
	c := Call{URL: srv.URL + "/v1.0/shutdown", Header: []Header{{Name: "dapr-api-token", Value: "s3cret"}}}
	_, err := Quit(context.Background(), c, quickRetries())
	if tok := <-got; tok != "s3cret" {
		t.Errorf("server got token %q", tok)
	}
	if err == nil || contains(err.Error(), "s3cret") {
		t.Errorf("Quit error %v: want a failure that does not show the token", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// msgHandler is a slog handler that reports, once, a record whose message contains want.
type msgHandler struct {
	want string
	seen chan struct{}
	once *sync.Once
}

func (h msgHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h msgHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h msgHandler) WithGroup(string) slog.Handler            { return h }
func (h msgHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}

// TestQuitNotStarted: with NotStartedFor, a sidecar that refuses every connection is given that
// long to start listening, and the quit reaches it once it does; the retries are not spent on
// it. Without the option (the test above), the same refusals fail after 4 attempts.
func TestQuitNotStarted(t *testing.T) {
	url := closedURL(t)
	h := msgHandler{want: "nothing listens yet", seen: make(chan struct{}), once: &sync.Once{}}
	o := quickRetries()
	o.NotStartedFor = time.Minute
	o.Logger = slog.New(h)
	type result struct {
		res QuitResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Quit(context.Background(), EnvoyQuit(url), o)
		done <- result{res, err}
	}()
	select {
	case <-h.seen: // refused at least once: now the sidecar starts
	case r := <-done:
		t.Fatalf("Quit = %+v, %v: gave up before the sidecar started", r.res, r.err)
	}
	l, err := net.Listen("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Skipf("another program took the port the test had freed (%v): run it again", err)
	}
	var n atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte("OK\n"))
	})}
	go srv.Serve(l)
	defer srv.Close()
	r := <-done
	if r.err != nil || r.res.StatusCode != 200 || n.Load() != 1 || r.res.Attempts < 2 {
		t.Errorf("Quit = %+v, %v (%d requests); want 200 from the sidecar once it listened", r.res, r.err, n.Load())
	}

	// It gives up once NotStartedFor has passed, and only then spends its retries.
	o = quickRetries()
	o.NotStartedFor = 300 * time.Millisecond
	start := time.Now()
	res, err := Quit(context.Background(), EnvoyQuit(closedURL(t)), o)
	if err == nil || !httpc.Refused(err) || res.Attempts < 5 || time.Since(start) < o.NotStartedFor {
		t.Errorf("Quit = %+v, %v after %s; want refused, after NotStartedFor and then the retries", res, err, time.Since(start))
	}
}

// TestQuitBackoff: the quit's retry policy, exactly, for a few retry counts; the default is the
// policy with DefaultQuitRetries.
func TestQuitBackoff(t *testing.T) {
	ms := time.Millisecond
	noRand := func() float64 { t.Fatal("the quit policy called rand"); return 0 }
	tests := []struct {
		name string
		b    Backoff
		want []time.Duration
	}{
		{"no retries", QuitBackoff(0), nil},
		{"negative retries", QuitBackoff(-1), nil},
		{"one retry", QuitBackoff(1), []time.Duration{100 * ms}},
		{"the default", DefaultQuitBackoff(), []time.Duration{100 * ms, 200 * ms, 400 * ms}},
		{"capped at a second", QuitBackoff(7), []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := take(tt.b, noRand, 100) // more than any policy here allows: the sequence must end
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}
