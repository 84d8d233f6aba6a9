package emulator

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The behaviours added for the fault matrix (docs/FAULTS.md): slow, garbage, endless, redirect,
// and the 403 and 405 refusals of a quit. Each is checked on the wire, with its event, and for a
// shutdown route whether the sidecar quits.

// TestBehaviourSlow: "slow" answers as the sidecar does, only later; a shutdown route then
// quits. The delay is set far above what the test waits for an early answer, so the test needs
// no clock: it only checks that no answer came before the event of the request, and that one
// came once the (short) delay of the second sidecar passed.
func TestBehaviourSlow(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyBehaviour: BehaviourSlow, SlowBy: time.Hour})
	c, err := net.Dial("tcp", sc.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
	rec.wait(t, "request", "path", "/ready", "status", "200")
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) // nothing may be there yet
	if n, _ := c.Read(make([]byte, 1)); n != 0 {
		t.Fatal("a slow answer came at once")
	}
	// Close cuts the delay short: a slow handler never holds up the sidecar's exit.
	closed := make(chan struct{})
	go func() { sc.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(guard):
		t.Fatal("Close waited for the slow answer")
	}

	sc2, rec2 := startEnvoy(t, Options{QuitBehaviour: BehaviourSlow, SlowBy: 10 * time.Millisecond})
	if res := call(t, "POST", "http://"+sc2.Addr()+"/quitquitquit"); res.status != 200 || res.body != "OK\n" {
		t.Errorf("slow quit = %d %q, want 200 OK", res.status, res.body)
	}
	rec2.wait(t, "quit")
	waitDone(t, sc2)
}

// TestBehaviourGarbage: "garbage" writes bytes that are no HTTP and closes; as a quit it counts
// as taken (the sidecar went away).
func TestBehaviourGarbage(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyBehaviour: BehaviourGarbage, QuitBehaviour: BehaviourGarbage})
	if got := raw(t, sc.Addr(), "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n"); got != garbageBytes {
		t.Errorf("got %q, want the garbage bytes", got)
	}
	rec.wait(t, "request", "path", "/ready", "status", "garbage")
	if _, err := try("GET", "http://"+sc.Addr()+"/ready", guard); err == nil || !strings.Contains(err.Error(), "malformed HTTP") {
		t.Errorf("net/http read the garbage without an error: %v", err)
	}
	raw(t, sc.Addr(), "POST /quitquitquit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	rec.wait(t, "quit")
	waitDone(t, sc)
}

// TestBehaviourEndless: "endless" answers 200 and a body without end, until the client leaves;
// the server's Close ends it too.
func TestBehaviourEndless(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyBehaviour: BehaviourEndless, QuitBehaviour: BehaviourEndless})
	for _, target := range []string{"GET /ready", "POST /quitquitquit"} {
		c, err := net.Dial("tcp", sc.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(guard))
		io.WriteString(c, target+" HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.ContentLength != -1 {
			t.Errorf("%s: status %d, length %d; want 200 and no length", target, resp.StatusCode, resp.ContentLength)
		}
		// Far more than any client's cap, and still not the end.
		if n, err := io.CopyN(io.Discard, resp.Body, 1<<20); n != 1<<20 || err != nil {
			t.Errorf("%s: read %d bytes of the body: %v", target, n, err)
		}
		c.Close()
	}
	rec.wait(t, "request", "path", "/ready", "status", "endless")
	rec.wait(t, "quit") // the endless quit ended when the client left
	waitDone(t, sc)

	sc2, _ := startEnvoy(t, Options{ReadyBehaviour: BehaviourEndless})
	c, err := net.Dial("tcp", sc2.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	sc2.Close() // returns although the client never stops reading
}

// TestBehaviourRedirect: "redirect" answers 302 to a path no route serves, so that a client that
// follows it shows up as a request for that path; the sidecar does not quit.
func TestBehaviourRedirect(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyBehaviour: BehaviourRedirect, QuitBehaviour: BehaviourRedirect})
	noFollow := &http.Client{Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ method, path string }{{"GET", "/ready"}, {"POST", "/quitquitquit"}} {
		req, _ := http.NewRequest(tc.method, "http://"+sc.Addr()+tc.path, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 302 || resp.Header.Get("Location") != redirectTarget {
			t.Errorf("%s %s: %d, Location %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"))
		}
		rec.wait(t, "request", "path", tc.path, "status", "302")
	}
	// A client that follows it is seen.
	if res := call(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 404 {
		t.Errorf("followed: %d, want Envoy's 404 for an unknown path", res.status)
	}
	rec.wait(t, "request", "path", redirectTarget, "status", "404")
	if rec.has("quit") {
		t.Error("a redirected quit quit")
	}
}

// TestBehaviourQuitRefusals: 403, 404 and 405 on the shutdown route answer so and keep the
// sidecar up.
func TestBehaviourQuitRefusals(t *testing.T) {
	for _, tc := range []struct {
		b    Behaviour
		code int
		body string
	}{{Behaviour403, 403, "forbidden\n"}, {Behaviour404, 404, "not found\n"}, {Behaviour405, 405, "method not allowed\n"}} {
		t.Run(string(tc.b), func(t *testing.T) {
			sc, rec := startEnvoy(t, Options{QuitBehaviour: tc.b})
			if res := call(t, "POST", "http://"+sc.Addr()+"/quitquitquit"); res.status != tc.code || res.body != tc.body {
				t.Errorf("= %d %q, want %d %q", res.status, res.body, tc.code, tc.body)
			}
			rec.wait(t, "request", "path", "/quitquitquit", "status", itoa(tc.code))
			if rec.has("quit") {
				t.Error("a refused quit quit")
			}
		})
	}
}

// TestBehaviourDefaultsUnchanged: with no knob, every profile still answers as the protocol
// reference says: the new behaviours are opt-in only.
func TestBehaviourDefaultsUnchanged(t *testing.T) {
	if o := (Options{}).withDefaults(); o.ReadyBehaviour != BehaviourOK || o.QuitBehaviour != BehaviourOK || o.SlowBy != DefaultSlowBy {
		t.Errorf("defaults %+v", o)
	}
	sc, _ := startEnvoy(t, Options{})
	if res := call(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 200 || res.body != "LIVE\n" {
		t.Errorf("/ready = %d %q", res.status, res.body)
	}
}

// TestQuitWhileStopping: a shutdown request read after the sidecar began to stop (SIGTERM first,
// as when the kubelet stops every container of a deleted pod at once) is neither taken nor
// answered: the connection closes unanswered, no quit event is written and the exit code stays
// SIGTERM's 0. On the wire that window is a race, so the test calls the wrapped route's handler
// itself, after Close; the handler a profile gives (which would answer 200) must not even run.
func TestQuitWhileStopping(t *testing.T) {
	sc, rec := startEnvoy(t, Options{})
	ran := false
	h := sc.wrap(&Route{Role: RoleShutdown}, func(*Request) Reply {
		ran = true
		return Reply{Outcome: Answer, Response: Response{Status: 200, Body: []byte("OK\n")}}
	})
	sc.Close()
	reply := h(&Request{Method: "POST", Path: "/quitquitquit"})
	if reply.Outcome != Drop || ran {
		t.Errorf("quit while stopping: outcome %s, profile handler ran %v; want %s and not run", reply.Outcome, ran, Drop)
	}
	if rec.has("quit") {
		t.Errorf("a quit event after the sidecar stopped:\n%s", rec.text())
	}
	if code := sc.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want SIGTERM's 0", code)
	}
}

// TestQuitLost: the first QuitLost shutdown requests close the connection with no answer and
// change nothing, as Istio's pilot-agent before its Envoy has started; the next one quits.
func TestQuitLost(t *testing.T) {
	sc, rec := startEnvoy(t, Options{QuitLost: 2})
	const quit = "POST /quitquitquit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
	for i := range 2 {
		if got := raw(t, sc.Addr(), quit); got != "" {
			t.Errorf("lost quit %d answered %q, want nothing", i+1, got)
		}
	}
	if n := len(eventsNamed(rec, "quit-lost")); n != 2 || rec.has("quit") {
		t.Fatalf("%d quit-lost events and quit %v, want 2 and no quit", n, rec.has("quit"))
	}
	if res := call(t, "POST", "http://"+sc.Addr()+"/quitquitquit"); res.status != 200 || res.body != "OK\n" {
		t.Errorf("third quit = %d %q, want 200 OK", res.status, res.body)
	}
	rec.wait(t, "quit")
	waitDone(t, sc)
}
