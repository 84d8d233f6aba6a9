package realsidecar

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"
)

// answer is one HTTP answer, or why there was none.
type answer struct {
	status int
	body   string
	err    error
}

func (a answer) String() string {
	if a.err != nil {
		return a.err.Error()
	}
	return fmt.Sprintf("%d %q", a.status, a.body)
}

// istioClient talks to the agent and the stand-in directly: no proxy, no kept-alive
// connections, and a timeout that is a failure guard only (under a load of 20 on two cores one
// answer of the agent's, which asks Envoy first, took seconds).
var istioClient = &http.Client{
	Timeout:   exitTimeout,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// call sends one request and returns the answer.
func call(method, url string) answer {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return answer{err: err}
	}
	resp, err := istioClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: string(body), err: err}
}

// quitAgent sends POST /quitquitquit and checks the answer: 200 "OK", or the connection closed
// without an answer. The agent writes its answer and cancels its context in the same handler,
// before the answer is flushed, and then exits at once; under load the process can be gone
// before the 200 leaves (as with the Cloud SQL proxy, README.md). A client of the real agent
// must treat that as success too. It then requires exit code 0.
func quitAgent(t *testing.T, a *IstioAgent) {
	t.Helper()
	start := time.Now()
	got := call(http.MethodPost, a.QuitURL())
	switch {
	case got.err != nil && (errors.Is(got.err, io.EOF) || errors.Is(got.err, io.ErrUnexpectedEOF) || errors.Is(got.err, syscall.ECONNRESET)):
		t.Logf("POST /quitquitquit: no answer, the agent closed the connection while exiting: %v", got.err)
	case got.String() != `200 "OK"`:
		t.Errorf("POST /quitquitquit: %s, want 200 \"OK\"", got)
	}
	if code := a.Wait(t); code != 0 {
		t.Errorf("exit code after POST /quitquitquit = %d, want 0", code)
	}
	t.Logf("agent exited %v after POST /quitquitquit", time.Since(start).Round(time.Millisecond))
}

// startedAgent starts the agent and waits until the stand-in Envoy listens: from then on both
// the agent's status port (opened before Envoy starts) and Envoy's status listener answer, so
// that every probe reaches the agent and the test needs no polling for a listener.
func startedAgent(t *testing.T, opts IstioOptions) *IstioAgent {
	t.Helper()
	a := StartIstioAgent(t, opts)
	ev := a.Await(t, "started", nil)
	t.Logf("stand-in Envoy listening %v after the agent's start: %s", ev.At.Sub(a.Started()).Round(time.Millisecond), ev.Text)
	return a
}

// TestIstioAgentReadyThenQuit: the agent's /healthz/ready, through Envoy's status listener,
// answers 503 with an empty body while Envoy has no config, then while it is not LIVE, then 200
// with an empty body; one probe is one look at Envoy's stats. POST /quitquitquit answers 200
// "OK" and the agent exits 0 at once; GET answers 405.
func TestIstioAgentReadyThenQuit(t *testing.T) {
	t.Parallel()
	a := startedAgent(t, IstioOptions{ConfigAfter: 2, LiveAfter: 1})
	var got []string
	for len(got) < 10 && !slices.Contains(got, `200 ""`) {
		got = append(got, call(http.MethodGet, a.ReadyURL()).String())
	}
	ready := a.AwaitForwarded(t, len(got))
	t.Logf("agent ready %v after its start", ready.At.Sub(a.Started()).Round(time.Millisecond))
	// The agent asks Envoy with a timeout of 1 s (config) or 3 s (LIVE); a poll that timed out
	// under load is one more 503, and maybe one more poll.
	timedOut := len(a.LogLines("Client.Timeout exceeded")) > 0
	if want := []string{`503 ""`, `503 ""`, `503 ""`, `200 ""`}; !slices.Equal(got, want) && !timedOut {
		t.Fatalf("GET %s until 200: %q, want %q", a.ReadyURL(), got, want)
	}
	for _, reason := range []string{
		"Envoy proxy is NOT ready: config not received from XDS server (is Istiod running?): cds updates: 0 successful",
		"Envoy proxy is NOT ready: server is not live, current state is: INITIALIZING",
	} {
		if len(a.LogLines(reason)) == 0 {
			t.Errorf("the agent never logged %q", reason)
		}
	}
	if n := len(a.LogLines("Envoy proxy is ready")); n != 1 {
		t.Errorf("the agent logged %q %d times, want 1", "Envoy proxy is ready", n)
	}
	// Once ready, the agent answers without asking Envoy again (it caches both verdicts).
	stats := len(a.Events("stats"))
	if got := call(http.MethodGet, a.AgentReadyURL()).String(); got != `200 ""` {
		t.Errorf("GET %s: %s, want 200 with an empty body", a.AgentReadyURL(), got)
	}
	if got := call(http.MethodGet, a.ReadyURL()).String(); got != `200 ""` {
		t.Errorf("GET %s: %s, want 200 with an empty body", a.ReadyURL(), got)
	}
	a.AwaitForwarded(t, len(got)+1)
	if n := len(a.Events("stats")); n != stats || n != 5 && !timedOut {
		t.Errorf("the agent polled Envoy's stats %d times until ready (want 5: 3 for the config, 2 for LIVE), %d times in all", stats, n)
	}

	if got := call(http.MethodGet, a.QuitURL()).String(); got != `405 "Method Not Allowed\n"` {
		t.Errorf("GET /quitquitquit: %s, want 405 \"Method Not Allowed\\n\"", got)
	}
	if a.Exited() {
		t.Fatalf("the agent exited after GET /quitquitquit")
	}
	quitAgent(t, a)
	a.AwaitLog(t, "Agent already drained, exiting immediately")
	if n := len(a.Events("admin")); n != 0 {
		t.Errorf("the quit went to Envoy's admin (%d requests): it should kill Envoy, not drain it", n)
	}
}

// TestIstioAgentNeverReady: without config from istiod, or with an Envoy that never becomes
// LIVE, the agent answers 503 with an empty body for as long as it runs, and logs why.
func TestIstioAgentNeverReady(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts IstioOptions
		why  string
	}{
		{"no config", IstioOptions{ConfigAfter: Never}, "config not received from XDS server (is Istiod running?)"},
		{"never LIVE", IstioOptions{LiveAfter: Never}, "server is not live, current state is: INITIALIZING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startedAgent(t, tc.opts)
			for i := range 5 {
				if got := call(http.MethodGet, a.ReadyURL()).String(); got != `503 ""` {
					t.Fatalf("probe %d: %s, want 503 with an empty body", i+1, got)
				}
			}
			a.AwaitForwarded(t, 5)
			// One "NOT ready" line per probe, saying why; under load some say instead that the
			// agent's own look at Envoy's stats timed out (1 s for the config, 3 s for LIVE).
			notReady, why, timedOut := len(a.LogLines("Envoy proxy is NOT ready: ")),
				len(a.LogLines("Envoy proxy is NOT ready: "+tc.why)), len(a.LogLines("Client.Timeout exceeded"))
			if notReady != 5 || why == 0 || why+timedOut != 5 {
				t.Errorf("the agent logged %d \"NOT ready\" lines, %d saying %q and %d timeouts; want one per probe (5), each saying that or a timeout",
					notReady, why, tc.why, timedOut)
			}
			quitAgent(t, a)
		})
	}
}

// TestIstioAgentReadinessSticks: once ready, the agent stays ready even when Envoy goes back to
// not LIVE (/healthcheck/fail makes it DRAINING): it caches the verdict and never asks again.
func TestIstioAgentReadinessSticks(t *testing.T) {
	t.Parallel()
	a := startedAgent(t, IstioOptions{})
	if got := call(http.MethodGet, a.ReadyURL()).String(); got != `200 ""` {
		t.Fatalf("first probe: %s, want 200", got)
	}
	admin := fmt.Sprintf("http://127.0.0.1:%d", a.AdminPort)
	if got := call(http.MethodPost, admin+"/healthcheck/fail").String(); got != `200 "OK\n"` {
		t.Fatalf("POST /healthcheck/fail: %s", got)
	}
	if got := call(http.MethodGet, admin+"/ready").String(); got != `503 "DRAINING\n"` {
		t.Fatalf("Envoy's /ready after /healthcheck/fail: %s, want 503 DRAINING", got)
	}
	if got := call(http.MethodGet, a.ReadyURL()).String(); got != `200 ""` {
		t.Errorf("the agent after Envoy went DRAINING: %s, want 200 (cached)", got)
	}
}

// TestIstioAgentEnvoyDies: when Envoy dies (an OOM kill, a crash), the agent logs it and exits
// 0 at once; its status port is gone with it.
func TestIstioAgentEnvoyDies(t *testing.T) {
	t.Parallel()
	a := startedAgent(t, IstioOptions{})
	if got := call(http.MethodGet, a.ReadyURL()).String(); got != `200 ""` {
		t.Fatalf("first probe: %s, want 200", got)
	}
	a.KillEnvoy(t, syscall.SIGKILL)
	if code := a.Wait(t); code != 0 {
		t.Errorf("exit code after Envoy's death = %d, want 0", code)
	}
	a.AwaitLog(t, "Envoy exited with error: signal: killed")
	if got := call(http.MethodPost, a.QuitURL()); !errors.Is(got.err, syscall.ECONNREFUSED) {
		t.Errorf("POST /quitquitquit after the agent exited: %s, want connection refused", got)
	}
}

// TestIstioAgentSIGTERM: SIGTERM (the pod's deletion) makes the agent drain Envoy's inbound
// listeners, wait terminationDrainDuration, kill Envoy and exit 0.
func TestIstioAgentSIGTERM(t *testing.T) {
	t.Parallel()
	a := startedAgent(t, IstioOptions{TerminationDrain: 100 * time.Millisecond})
	if got := call(http.MethodGet, a.ReadyURL()).String(); got != `200 ""` {
		t.Fatalf("first probe: %s, want 200", got)
	}
	if err := a.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	drain := a.Await(t, "admin", func(ev StandInEvent) bool { return ev.Fields["path"] == "/drain_listeners" })
	if got, want := drain.Fields["method"]+" "+drain.Fields["query"], "POST inboundonly&graceful"; got != want {
		t.Errorf("drain request %q, want %q", got, want)
	}
	if code := a.Wait(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	a.AwaitLog(t, "Graceful termination period complete, terminating remaining proxies.")
}
