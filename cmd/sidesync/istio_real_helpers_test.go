package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/realsidecar"
)

// Helpers of istio_real_test.go.

// istioGuard bounds one sidesync run against the real agent. It is a failure guard only, and
// longer than the package's guard: under a load of 20 on two cores the agent alone took 10 s
// to answer its first 200 (measured; about 0.35 s on an idle machine).
const istioGuard = 60 * time.Second

// sidesyncIstio is sidesync (main_test.go) with istioGuard: it runs sidesync and waits for it.
func sidesyncIstio(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), istioGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.sidesync, args...)
	cmd.Env = testEnv(nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A stray grandchild holding the pipes must not hang the test. Under a load of 20 the
	// copying goroutines of this process can lag sidesync's exit by more than a second (seen
	// once with 1 s), hence 10 s.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sidesync %q did not finish within %v; stderr:\n%s", args, istioGuard, stderr.String())
	}
	var ee *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		t.Errorf("sidesync %q exited %d, but something held its output open %v longer", args, cmd.ProcessState.ExitCode(), cmd.WaitDelay)
		code = cmd.ProcessState.ExitCode()
	case err != nil:
		t.Fatalf("sidesync %q: %v", args, err)
	}
	if strings.Contains(stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("data race in sidesync %q:\n%s", args, stderr.String())
	}
	return result{code, stdout.String(), stderr.String()}
}

// startedIstioAgent starts the agent and waits until its Envoy listens, for the tests whose
// point is not the wait: every probe then reaches the agent, and the agent's start (seconds
// under load) is not part of sidesync's run.
func startedIstioAgent(t *testing.T, opts realsidecar.IstioOptions) *realsidecar.IstioAgent {
	t.Helper()
	a := realsidecar.StartIstioAgent(t, opts)
	a.Await(t, "started", nil)
	return a
}

// istioSpec moves the istio profile's ports to the agent's: readiness through Envoy's status
// listener (15021), the quit to the agent's status port (15020).
func istioSpec(a *realsidecar.IstioAgent) string {
	return fmt.Sprintf("istio:ready-port=%d,quit-port=%d", a.ReadyPort, a.StatusPort)
}

// agentAnswers returns the statuses that the agent gave, through the stand-in's status
// listener, to every readiness probe, in order. The agent must have exited (Wait), so that all
// of its output has been read.
func agentAnswers(a *realsidecar.IstioAgent) []string {
	var got []string
	for _, ev := range a.Events("status") {
		got = append(got, ev.Fields["status"])
	}
	return got
}

// countOf counts the elements of list equal to s.
func countOf(list []string, s string) int {
	n := 0
	for _, e := range list {
		if e == s {
			n++
		}
	}
	return n
}

// repeat is n copies of s.
func repeat(s string, n int) []string { return slices.Repeat([]string{s}, n) }

// mustQuitAgent checks that sidesync's quit reached the agent: 200, or the connection closed
// right after the request. The agent cancels its context in the handler that answers, before
// the answer is flushed, and exits at once, so under load the 200 is sometimes lost (as with
// the Cloud SQL proxy, internal/testing/realsidecar/README.md); sidesync counts that as success. The
// agent must have exited (Wait), and it must have logged the quit.
func mustQuitAgent(t *testing.T, stderr string, a *realsidecar.IstioAgent) {
	t.Helper()
	switch {
	case strings.Contains(stderr, "sidecar quit sidecar=istio url="+a.QuitURL()+" status=200"):
	case strings.Contains(stderr, "sidecar quit: it closed the connection after the request sidecar=istio url="+a.QuitURL()):
		t.Logf("the agent exited before its 200 reached sidesync")
	default:
		t.Errorf("no successful quit logged:\n%s", stderr)
	}
	// A quit whose connection closed with no answer is asked again (docs/FAULTS.md): an agent
	// that was exiting may then take it a second time.
	n := len(a.LogLines("handling /quitquitquit, notifying pilot-agent to exit"))
	if askedAgain := strings.Contains(stderr, "closed the connection with no answer; asking again"); n != 1 && !(askedAgain && n > 1) {
		t.Errorf("the agent logged the quit %d times, want once (asked again: %v)", n, askedAgain)
	}
}

// istioGet sends one GET straight to the agent or the stand-in, outside sidesync, and returns
// the answer as `STATUS "BODY"`.
func istioGet(t *testing.T, url string) string {
	t.Helper()
	got, err := istioSend(http.MethodGet, url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return got
}

func istioSend(method, url string) (string, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{Timeout: istioGuard, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %q", resp.StatusCode, body), err
}

// closedAfterSend reports an error of a request that the server took and then closed the
// connection on without answering.
func closedAfterSend(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
