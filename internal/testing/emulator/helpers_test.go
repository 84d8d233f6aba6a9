package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// guard bounds every wait in these tests; it only fires when a test fails.
const guard = 10 * time.Second

// recorder is an io.Writer for event lines that lets a test wait for an
// event instead of sleeping.
type recorder struct {
	mu      sync.Mutex
	partial string
	lines   []string
	events  []Event
	bad     []string
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{})}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial += string(p)
	for {
		line, rest, ok := strings.Cut(r.partial, "\n")
		if !ok {
			break
		}
		r.partial = rest
		r.lines = append(r.lines, line)
		if ev, err := ParseEvent(line); err != nil {
			r.bad = append(r.bad, line)
		} else {
			r.events = append(r.events, ev)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	return len(p), nil
}

func (r *recorder) snapshot() ([]Event, chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events, r.changed
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// matches reports whether ev is called name and has every key=value in kv.
func matches(ev Event, name string, kv ...string) bool {
	if ev.Name != name {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if ev.Get(kv[i]) != kv[i+1] {
			return false
		}
	}
	return true
}

// wait returns the first event (ever written) called name with the given
// key=value pairs, waiting for it if need be.
func (r *recorder) wait(t *testing.T, name string, kv ...string) Event {
	t.Helper()
	timeout := time.NewTimer(guard)
	defer timeout.Stop()
	for i := 0; ; {
		evs, changed := r.snapshot()
		for ; i < len(evs); i++ {
			if matches(evs[i], name, kv...) {
				return evs[i]
			}
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("no event %s %v within %v; events:\n%s", name, kv, guard, r.text())
		}
	}
}

// has reports whether such an event has been written already.
func (r *recorder) has(name string, kv ...string) bool {
	evs, _ := r.snapshot()
	for _, ev := range evs {
		if matches(ev, name, kv...) {
			return true
		}
	}
	return false
}

// startEnvoy starts an in-process Envoy emulator that is closed when the
// test ends.
func startEnvoy(t *testing.T, opts Options) (*Sidecar, *recorder) {
	t.Helper()
	rec := newRecorder()
	opts.Events = rec
	sc := NewEnvoy(opts)
	if err := sc.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc, rec
}

// waitDone waits until the sidecar has stopped.
func waitDone(t *testing.T, sc *Sidecar) {
	t.Helper()
	select {
	case <-sc.Done():
	case <-time.After(guard):
		t.Fatalf("sidecar did not stop within %v", guard)
	}
}

// result is what a net/http client got.
type result struct {
	status int
	header http.Header
	body   string
}

// newClient returns a net/http client that uses a fresh connection for
// every request and no proxy.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
}

// try sends one request with net/http.
func try(method, url string, timeout time.Duration) (result, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return result{}, err
	}
	resp, err := newClient(timeout).Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(body)}, err
}

// call sends one request and fails the test if no answer arrives.
func call(t *testing.T, method, url string) result {
	t.Helper()
	res, err := try(method, url, guard)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return res
}

// raw sends bytes and FIN on a fresh connection and returns everything
// the server writes until it closes the connection.
func raw(t *testing.T, addr, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.(*net.TCPConn).CloseWrite() // the request is complete: send FIN
	out, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, out)
	}
	return string(out)
}

// refused reports whether a connection to addr is refused, i.e. nothing
// listens there.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return false
}

// mustListen listens on an ephemeral loopback port.
func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func itoa(n int) string { return strconv.Itoa(n) }
