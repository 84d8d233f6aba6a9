package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/realsidecar"
)

// These tests run sidesync's istio profile against Istio's real pilot-agent, built from the Go
// module proxy by .ci/build-istio.sh, with a stand-in Envoy (internal/testing/realsidecar/envoystandin)
// that answers the agent's stats polls as Envoy's admin does. They wait on events only: the
// stand-in's event lines, the agent's log, sidesync's log and the command's output.

// TestRealIstioAgent: sidesync waits while the agent answers 503 (no config from istiod yet,
// then Envoy not LIVE), runs the command once it answers 200, and quits it with POST
// /quitquitquit (200 "OK"); the agent then exits 0.
func TestRealIstioAgent(t *testing.T) {
	t.Parallel()
	a := realsidecar.StartIstioAgent(t, realsidecar.IstioOptions{ConfigAfter: 2, LiveAfter: 1})
	marker := filepath.Join(t.TempDir(), "ran")
	r := sidesyncIstio(t, "--sidecar", istioSpec(a), "--", bin.testcmd, "touch", marker)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the command did not run")
	}
	if code := a.Wait(t); code != 0 {
		t.Errorf("the agent exited %d after the quit, want 0", code)
	}
	// Three 503s, one per failing look at Envoy's stats (two without config, one INITIALIZING),
	// then 200: the agent's verdicts depend on the count of its polls only. Should sidesync's
	// probe time out under load, the next one overlaps it and the order of the answers may
	// change, or there are more 200s, but not more 503s; only a poll of the agent's that timed
	// out itself (1 s for the config, 3 s for LIVE) adds one.
	answers := agentAnswers(a)
	n503, n200 := countOf(answers, "503"), countOf(answers, "200")
	if n503+n200 != len(answers) || n200 == 0 || n503 < 3 || n503 > 3 && len(a.LogLines("Client.Timeout exceeded")) == 0 {
		t.Errorf("the agent answered sidesync's probes %q, want three 503s and then 200", answers)
	}
	ready := a.Await(t, "status", func(ev realsidecar.StandInEvent) bool { return ev.Fields["status"] == "200" })
	t.Logf("the agent answered 200 %v after its start; answers %q", ready.At.Sub(a.Started()).Round(time.Millisecond), answers)
	mustContain(t, r.stderr,
		"sidecar not ready yet sidecar=istio url="+a.ReadyURL()+" reason=\"503 Service Unavailable\"",
		"sidecar ready sidecar=istio url="+a.ReadyURL(),
		"quit=ok")
	mustQuitAgent(t, r.stderr, a)
}

// TestRealIstioAgentNeverReady: an agent whose Envoy never becomes LIVE answers 503 to every
// probe; after --max-retries sidesync gives up, and either exits 69 without running the
// command or, with --on-timeout start-anyway, runs it. Either way the agent is told to quit
// and exits 0.
func TestRealIstioAgentNeverReady(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		onTimeout string
		code      int
		ran       bool
		log       string
	}{
		{"fail", exitUnavailable, false, "a sidecar never became ready; not starting the command"},
		{"start-anyway", 0, true, "starting the command without the sidecars"},
	} {
		t.Run(tc.onTimeout, func(t *testing.T) {
			t.Parallel()
			a := startedIstioAgent(t, realsidecar.IstioOptions{LiveAfter: realsidecar.Never})
			marker := filepath.Join(t.TempDir(), "ran")
			r := sidesyncIstio(t, "--sidecar", istioSpec(a), "--max-retries", "3", "--on-timeout", tc.onTimeout,
				"--", bin.testcmd, "touch", marker)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			if _, err := os.Stat(marker); (err == nil) != tc.ran {
				t.Errorf("the command ran: %v, want %v", err == nil, tc.ran)
			}
			if code := a.Wait(t); code != 0 {
				t.Errorf("the agent exited %d after the quit, want 0", code)
			}
			if got, want := agentAnswers(a), repeat("503", 4); !slices.Equal(got, want) {
				t.Errorf("the agent answered sidesync's probes %q, want %q (the first probe and 3 retries)", got, want)
			}
			mustContain(t, r.stderr,
				"sidecar not ready yet sidecar=istio url="+a.ReadyURL()+" reason=\"503 Service Unavailable\"",
				tc.log, "quit=ok")
			mustQuitAgent(t, r.stderr, a)
			// One "NOT ready" line per probe; under load some say that the agent's own look at
			// Envoy's stats timed out (1 s for the config, 3 s for LIVE).
			notReady := len(a.LogLines("Envoy proxy is NOT ready: "))
			notLive := len(a.LogLines("Envoy proxy is NOT ready: server is not live, current state is: INITIALIZING"))
			if timedOut := len(a.LogLines("Client.Timeout exceeded")); notReady != 4 || notLive == 0 || notLive+timedOut != 4 {
				t.Errorf("the agent logged %d \"NOT ready\" lines, %d of them INITIALIZING and %d timeouts; want 4, one per probe", notReady, notLive, timedOut)
			}
		})
	}
}

// TestRealIstioAgentGoneBeforeQuit: the agent goes away while the command runs: its Envoy
// crashes (the agent then exits 0 by itself), it is killed, or someone else quits it. The
// command's exit code still passes through; sidesync's quit finds nothing listening, retries,
// and reports the quit failed without changing the exit code.
func TestRealIstioAgentGoneBeforeQuit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kill func(*testing.T, *realsidecar.IstioAgent)
		code int    // the agent's exit code
		log  string // what the agent logged about it
	}{
		{"envoy crashes", func(t *testing.T, a *realsidecar.IstioAgent) { a.KillEnvoy(t, syscall.SIGKILL) },
			0, "Envoy exited with error: signal: killed"},
		{"agent killed", func(t *testing.T, a *realsidecar.IstioAgent) {
			if err := a.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}, -1, ""},
		{"quit by someone else", func(t *testing.T, a *realsidecar.IstioAgent) {
			if got, err := istioSend(http.MethodPost, a.QuitURL()); err != nil && !closedAfterSend(err) || err == nil && got != `200 "OK"` {
				t.Fatalf("POST %s: %s %v", a.QuitURL(), got, err)
			}
		}, 0, "handling /quitquitquit, notifying pilot-agent to exit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := startedIstioAgent(t, realsidecar.IstioOptions{})
			r := startSidesync(t, nil, "--sidecar", istioSpec(a), "--", bin.testcmd, "block")
			// Runs before startSidesync's cleanup, which waits for sidesync: a test that fails
			// early must still end the command, which holds sidesync's stderr open.
			t.Cleanup(func() { r.stdin.Close() })
			if l := next(t, r.stdout, "the command's started line"); l != "started" {
				t.Fatalf("testcmd said %q", l)
			}
			tc.kill(t, a)
			if code := a.Wait(t); code != tc.code {
				t.Errorf("the agent exited %d, want %d", code, tc.code)
			}
			if tc.log != "" {
				a.AwaitLog(t, tc.log)
			}
			r.stdin.Close()
			if code := r.exit(); code != 0 {
				t.Errorf("sidesync exited %d, want the command's 0; stderr:\n%s", code, r.stderr)
			}
			log := r.stderr.String()
			mustContain(t, log,
				"sidecar ready sidecar=istio url="+a.ReadyURL(),
				"sidecar quit failed sidecar=istio url="+a.QuitURL(),
				"failed after 4 attempts", "connection refused",
				"quit=failed")
		})
	}
}

// TestRealIstioAgentCommandFails: the command's exit code passes through, and the agent is
// still told to quit (--quit always, the default) and exits 0.
func TestRealIstioAgentCommandFails(t *testing.T) {
	t.Parallel()
	a := startedIstioAgent(t, realsidecar.IstioOptions{})
	r := sidesyncIstio(t, "--sidecar", istioSpec(a), "--", bin.testcmd, "exit", "3")
	if r.code != 3 {
		t.Errorf("exit %d, want the command's 3; stderr:\n%s", r.code, r.stderr)
	}
	if code := a.Wait(t); code != 0 {
		t.Errorf("the agent exited %d after the quit, want 0", code)
	}
	mustContain(t, r.stderr, "quit=ok")
	mustQuitAgent(t, r.stderr, a)
}

// TestRealIstioAgentQuitOnSuccess: with --quit on-success the agent is told to quit only after
// the command exited 0; after a failure it keeps running, ready.
func TestRealIstioAgentQuitOnSuccess(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 3} {
		t.Run(fmt.Sprintf("exit %d", code), func(t *testing.T) {
			t.Parallel()
			a := startedIstioAgent(t, realsidecar.IstioOptions{})
			r := sidesyncIstio(t, "--sidecar", istioSpec(a), "--quit", "on-success", "--", bin.testcmd, "exit", fmt.Sprint(code))
			if r.code != code {
				t.Errorf("exit %d, want the command's %d; stderr:\n%s", r.code, code, r.stderr)
			}
			if code == 0 {
				if got := a.Wait(t); got != 0 {
					t.Errorf("the agent exited %d after the quit, want 0", got)
				}
				mustContain(t, r.stderr, "quit=ok")
				mustQuitAgent(t, r.stderr, a)
				return
			}
			mustContain(t, r.stderr, "not telling the sidecars to quit: the command did not succeed", `quit="skipped (on-success)"`)
			// The agent is still there and ready: a quit would have ended it.
			if got := istioGet(t, a.ReadyURL()); got != `200 ""` {
				t.Errorf("GET %s after sidesync: %s, want 200", a.ReadyURL(), got)
			}
			if a.Exited() {
				t.Errorf("the agent exited")
			}
			if lines := a.LogLines("/quitquitquit"); len(lines) != 0 {
				t.Errorf("the agent got a quit: %q", lines)
			}
		})
	}
}

// TestRealIstioAgentQuitRefused: the agent refuses a quit sent with GET (405) or from an
// address other than loopback (403), and keeps running; sidesync reports the quit failed, with
// the profile's hint for the 403.
func TestRealIstioAgentQuitRefused(t *testing.T) {
	t.Parallel()
	t.Run("GET", func(t *testing.T) {
		t.Parallel()
		a := startedIstioAgent(t, realsidecar.IstioOptions{})
		r := sidesyncIstio(t, "--sidecar", istioSpec(a)+",method=GET", "--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Errorf("exit %d, want the command's 0; stderr:\n%s", r.code, r.stderr)
		}
		mustContain(t, r.stderr, "sidecar quit failed sidecar=istio url="+a.QuitURL(), "405 Method Not Allowed: Method Not Allowed", "quit=failed")
		if got := istioGet(t, a.ReadyURL()); got != `200 ""` || a.Exited() {
			t.Errorf("the agent after a GET quit: %s (exited: %v), want still running and ready", got, a.Exited())
		}
	})
	t.Run("not from loopback", func(t *testing.T) {
		t.Parallel()
		ip := nonLoopbackIP(t)
		a := startedIstioAgent(t, realsidecar.IstioOptions{})
		quit := fmt.Sprintf("http://%s/quitquitquit", net.JoinHostPort(ip, fmt.Sprint(a.StatusPort)))
		r := sidesyncIstio(t, "--sidecar", fmt.Sprintf("istio:ready-port=%d,quit=%s", a.ReadyPort, quit), "--allow-remote-quit",
			"--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Errorf("exit %d, want the command's 0; stderr:\n%s", r.code, r.stderr)
		}
		mustContain(t, r.stderr, "sidecar quit failed sidecar=istio url="+quit,
			"403 Forbidden: Only requests from localhost are allowed",
			"Istio's agent accepts this call only from localhost", "quit=failed")
		if got := istioGet(t, a.ReadyURL()); got != `200 ""` || a.Exited() {
			t.Errorf("the agent after a quit from %s: %s (exited: %v), want still running and ready", ip, got, a.Exited())
		}
	})
}

// TestRealIstioAgentQuitBeforeEnvoy: "sidesync quit", as a rescue's container runs it, reaches
// the agent after it opened its status port and before it set up Envoy (held there by the test:
// realsidecar.IstioOptions.HoldEnvoy). The agent's quit handler then panics, closes the
// connection with no answer and runs on (docs/SIDECARS.md 3.3; a rescue on the test node met
// it). sidesync asks again, the agent takes the quit once it has set Envoy up, and exits 0.
// Taking the closed connection as a quit, as sidesync did, left the agent running for good.
func TestRealIstioAgentQuitBeforeEnvoy(t *testing.T) {
	t.Parallel()
	a := realsidecar.StartIstioAgent(t, realsidecar.IstioOptions{HoldEnvoy: true})
	a.AwaitStatusPort(t)
	r := startSidesync(t, nil, "quit", "--sidecar", istioSpec(a), "--quit-timeout", "30s")
	a.AwaitLog(t, "http: panic serving")
	r.stderr.await(t, "closed the connection with no answer; asking again")
	if a.Exited() {
		t.Fatal("the agent exited after a quit it lost")
	}
	a.ReleaseEnvoy(t)
	if code := r.exitWithin(quitBound); code != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", code, r.stderr)
	}
	if code := a.Wait(t); code != 0 {
		t.Errorf("the agent exited %d after the quit, want 0", code)
	}
	stderr := r.stderr.String()
	mustQuitAgent(t, stderr, a)
	t.Logf("quits the agent lost before it set up Envoy: %d; stderr:\n%s", len(a.LogLines("http: panic serving")), stderr)
}
