package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// connCounter counts a test server's connections and tells when they have all closed.
type connCounter struct {
	mu     sync.Mutex
	opened int
	open   int
	idle   chan struct{} // closed when open drops to zero after a connection
}

func countConns(srv *httptest.Server) *connCounter {
	cc := &connCounter{idle: make(chan struct{})}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		switch s {
		case http.StateNew:
			cc.opened++
			cc.open++
		case http.StateClosed, http.StateHijacked:
			if cc.open--; cc.open == 0 {
				close(cc.idle)
				cc.idle = make(chan struct{})
			}
		}
	}
	return cc
}

func (cc *connCounter) counts() (opened, open int, idle <-chan struct{}) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.opened, cc.open, cc.idle
}

// TestWaitReadyOneConnection: a wait sends all its probes over one connection, and closes it
// when it ends.
func TestWaitReadyOneConnection(t *testing.T) {
	e := &envoyLike{notReady: 20}
	srv := httptest.NewUnstartedServer(e)
	cc := countConns(srv)
	srv.Start()
	defer srv.Close()
	res, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, fast())
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	opened, open, idle := cc.counts()
	if res.Probes != 21 || opened != 1 {
		t.Errorf("%d probes over %d connections, want 21 over 1", res.Probes, opened)
	}
	if open > 0 {
		select {
		case <-idle:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection stayed open after WaitReady returned")
		}
	}
}

// flakyKeepAlive answers /ready with 503 for the first notReady requests, then 200; it closes
// each connection after every second answer without saying so, as an idle timeout would, and
// counts the requests it answered.
func flakyKeepAlive(t *testing.T, notReady int64) (string, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var requests, accepted atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for range 2 {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					answer := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nLIVE\n"
					if requests.Add(1) <= notReady {
						answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 13\r\n\r\nINITIALIZING\n"
					}
					io.WriteString(c, answer)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &requests, &accepted
}

// TestWaitReadyReconnects: a sidecar that closes idle connections costs neither a failed probe
// nor a probe sent twice.
func TestWaitReadyReconnects(t *testing.T) {
	url, requests, accepted := flakyKeepAlive(t, 9)
	var logs strings.Builder
	o := fast()
	o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := WaitReady(context.Background(), Check{Kind: HTTPStatus, URL: url + "/ready"}, o)
	if err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	if res.Probes != 10 || requests.Load() != 10 {
		t.Errorf("%d probes, %d requests answered; want 10 and 10", res.Probes, requests.Load())
	}
	if got, want := accepted.Load(), int64(5); got != want {
		t.Errorf("%d connections, want %d", got, want)
	}
	if strings.Contains(logs.String(), "EOF") || strings.Contains(logs.String(), "reset") {
		t.Errorf("a probe failed on a closed connection:\n%s", logs.String())
	}
}

// TestProbeTimeoutKeptConnection: the probe timeout applies to each probe on a kept connection,
// and the probe after a timeout gets a new connection.
func TestProbeTimeoutKeptConnection(t *testing.T) {
	var n atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			<-release // the second probe hangs
		}
		w.WriteHeader(503)
		w.Write([]byte("INITIALIZING\n"))
	}))
	cc := countConns(srv)
	srv.Start()
	defer srv.Close()
	defer close(release)
	w := newWaiter(Check{Kind: HTTPStatus, URL: srv.URL}, WaitOptions{ProbeTimeout: 50 * time.Millisecond})
	defer w.close()
	ctx := context.Background()
	var errs []error
	for range 3 {
		w.probe(ctx)
		errs = append(errs, w.last.Err)
	}
	var se *StatusError
	if !errors.As(errs[0], &se) || !httpc.Timeout(errs[1]) || !errors.As(errs[2], &se) {
		t.Errorf("probe errors = %v, want 503, a timeout, 503", errs)
	}
	if opened, _, _ := cc.counts(); opened != 2 {
		t.Errorf("%d connections, want 2", opened)
	}
}

// TestWaitLogsChanges: a long wait logs each new kind of answer once, however often it comes.
func TestWaitLogsChanges(t *testing.T) {
	bodies := []string{"INITIALIZING", "INITIALIZING", "INITIALIZING", "PRE_INITIALIZING", "PRE_INITIALIZING", "INITIALIZING", "LIVE"}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := bodies[min(int(n.Add(1)), len(bodies))-1]
		if body != "LIVE" {
			w.WriteHeader(503)
		}
		w.Write([]byte(body + "\n"))
	}))
	defer srv.Close()
	var logs strings.Builder
	o := fast()
	o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, o)
	if err != nil || res.Probes != len(bodies) || res.Last.Body != "LIVE" {
		t.Fatalf("WaitReady = %+v, %v; want ready after %d probes", res, err, len(bodies))
	}
	var got []string
	for line := range strings.Lines(logs.String()) {
		_, reason, _ := strings.Cut(line, "reason=")
		got = append(got, strings.TrimSpace(reason))
	}
	want := []string{`"503 Service Unavailable: INITIALIZING"`, `"503 Service Unavailable: PRE_INITIALIZING"`, `"503 Service Unavailable: INITIALIZING"`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged reasons:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWaitServerInfo: an Envoy without /ready is asked /server_info, whose changing answers
// are read afresh.
func TestWaitServerInfo(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/server_info" {
			http.NotFound(w, r)
			return
		}
		state := "INITIALIZING"
		if n.Add(1) > 3 {
			state = "LIVE"
		}
		w.Write([]byte(`{"version": "x", "state": "` + state + `", "uptime_current_epoch": "1s"}`))
	}))
	defer srv.Close()
	res, err := WaitReady(context.Background(), Check{Kind: EnvoyAdmin, URL: srv.URL}, fast())
	if err != nil || res.Probes != 4 || res.Last.Body != "LIVE" || !strings.HasSuffix(res.Last.URL, "/server_info") {
		t.Errorf("WaitReady = %+v, %v; want LIVE from /server_info at the 4th probe", res, err)
	}
}

// TestQuitFreshConnections: every quit attempt is a request on a connection of its own, which
// it asks the sidecar to close.
func TestQuitFreshConnections(t *testing.T) {
	var kept atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.Close {
			kept.Add(1)
		}
		w.WriteHeader(503)
	}))
	cc := countConns(srv)
	srv.Start()
	defer srv.Close()
	_, err := Quit(context.Background(), EnvoyQuit(srv.URL), quickRetries())
	var qe *QuitError
	if !errors.As(err, &qe) || qe.Attempts != 4 {
		t.Fatalf("Quit: %v, want 4 failed attempts", err)
	}
	if opened, _, _ := cc.counts(); opened != 4 || kept.Load() != 0 {
		t.Errorf("4 attempts over %d connections, %d without Connection: close; want 4 and 0", opened, kept.Load())
	}
}

// TestProbeAllocations: a probe that gets the same answer as the one before allocates nothing,
// ready or not, and from an Envoy without /ready too, so that a long wait does not grow memory.
func TestProbeAllocations(t *testing.T) {
	notFound := []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	const state = `{"version": "1.2.3", "state": "INITIALIZING"}`
	info := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(state)) + "\r\n\r\n" + state)
	oldEnvoy, _ := routingServer(t, func(head []byte) []byte {
		if bytes.HasPrefix(head, []byte("GET /ready ")) {
			return notFound
		}
		return info
	})
	live, _ := keepAliveServer(t, answerLive)
	initializing, _ := keepAliveServer(t, answerInit)
	for _, url := range []string{live, initializing, oldEnvoy} {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		w := newWaiter(Check{Kind: EnvoyAdmin, URL: url}, WaitOptions{Logger: log})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		allocs := testing.AllocsPerRun(100, func() { w.probe(ctx) })
		if r := w.last; r.StatusCode == 0 || r.Body != "LIVE" && r.Body != "INITIALIZING" {
			t.Fatalf("probe = %+v, want an answer", r)
		}
		if allocs != 0 {
			t.Errorf("a probe of %s allocated %v times, want 0", w.last.URL, allocs)
		}
		cancel()
		w.close()
	}
}

// TestProbeAllocationsLoopbackConnect: while nothing listens yet, a probe is a refused connect
// every 20 ms for as long as the sidecar takes to start; it must not allocate, or the heap grows
// with the wait (10 MiB after a minute, measured). A TCP check that a loopback port accepts
// allocates nothing either.
func TestProbeAllocationsLoopbackConnect(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := l.Addr().String() // never accepted: the kernel completes the connections alone
	defer l.Close()
	closed := closedAddr(t)
	tests := []struct {
		name  string
		check Check
		ready bool
	}{
		{"envoy, refused", Check{Kind: EnvoyAdmin, URL: "http://" + closed}, false},
		{"http, refused", Check{Kind: HTTPStatus, URL: "http://" + closed + "/ready"}, false},
		{"tcp, refused", Check{Kind: TCP, URL: "tcp://" + closed}, false},
		{"tcp, accepted", Check{Kind: TCP, URL: "tcp://" + open}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWaiter(tt.check, WaitOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer w.close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			allocs := testing.AllocsPerRun(100, func() { w.probe(ctx) })
			if r := w.last; r.Ready != tt.ready || !tt.ready && !httpc.Refused(r.Err) && !errors.Is(r.Err, syscall.ECONNREFUSED) {
				t.Fatalf("probe = %+v, want ready %v (or refused)", r, tt.ready)
			}
			if allocs != 0 {
				t.Errorf("a probe allocated %v times, want 0", allocs)
			}
		})
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
