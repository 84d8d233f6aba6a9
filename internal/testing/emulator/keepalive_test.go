package emulator

import (
	"io"
	"net/http"
	"testing"
)

// TestSidecarKeepAliveClient: a client that keeps its connection open gets
// every answer on it as a fresh connection would, through a state change
// and up to the quit; the request events (one peer, so one connection)
// all come before the exit event.
func TestSidecarKeepAliveClient(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyAfterProbes: 2})
	client := &http.Client{Timeout: guard, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	base := "http://" + sc.Addr()
	for _, want := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/ready", 503, "INITIALIZING\n"},
		{"GET", "/ready", 503, "INITIALIZING\n"},
		{"GET", "/ready", 200, "LIVE\n"},
		{"GET", "/quitquitquit", 405, "Method GET not allowed, POST required."},
		{"POST", "/quitquitquit", 200, "OK\n"},
	} {
		req, _ := http.NewRequest(want.method, base+want.path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", want.method, want.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != want.status || string(body) != want.body || resp.Close {
			t.Errorf("%s %s = %d %q close=%v (%v), want %d %q on a kept connection",
				want.method, want.path, resp.StatusCode, body, resp.Close, err, want.status, want.body)
		}
	}
	waitDone(t, sc)
	evs, _ := rec.snapshot()
	requests, peer := 0, ""
	for _, ev := range evs {
		switch ev.Name {
		case "request":
			if requests++; peer == "" {
				peer = ev.Get("peer")
			}
			if ev.Get("peer") != peer {
				t.Errorf("request from %s, want all from %s (one connection)", ev.Get("peer"), peer)
			}
		case "exit":
			if requests != 5 {
				t.Errorf("exit after %d request events, want 5:\n%s", requests, rec.text())
			}
		}
	}
	checkEventLines(t, rec)
}
