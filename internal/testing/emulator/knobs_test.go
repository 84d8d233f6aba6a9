package emulator

import (
	"testing"
	"time"
)

// knobRoute is a profile's readiness or shutdown route for the knob tests.
type knobRoute struct {
	profile, listener, method, target string
}

// TestProfileReadyBehaviour: --ready-behaviour overrides the readiness
// routes of every profile.
func TestProfileReadyBehaviour(t *testing.T) {
	for _, kr := range []knobRoute{
		{"istio", "status", "GET", "/healthz/ready"},
		{"istio", "envoy-status", "GET", "/healthz/ready"},
		{"linkerd", "admin", "GET", "/ready"},
		{"consul", "admin", "GET", "/ready"},
		{"consul", "lifecycle", "GET", "/graceful_startup"},
		{"dapr", "http", "GET", "/v1.0/healthz"},
		{"dapr", "public", "GET", "/v1.0/healthz/outbound"},
		{"cloudsql", "http", "GET", "/startup"},
		{"cloudsql", "http", "GET", "/readiness"},
	} {
		for _, b := range []Behaviour{Behaviour500, BehaviourEOF} {
			t.Run(kr.profile+" "+kr.target+" "+string(b), func(t *testing.T) {
				sc, rec := startProfile(t, kr.profile, Options{ReadyBehaviour: b})
				res, err := try(kr.method, "http://"+sc.AddrOf(kr.listener)+kr.target, guard)
				checkBehaviour(t, b, res, err)
				rec.wait(t, "request", "path", kr.target, "status", eventStatus(b))
			})
		}
	}
}

// TestProfileQuitBehaviour: --quit-behaviour overrides every shutdown
// route: 500 keeps the sidecar up, eof accepts the quit.
func TestProfileQuitBehaviour(t *testing.T) {
	for _, kr := range []knobRoute{
		{"istio", "status", "POST", "/quitquitquit"},
		{"linkerd", "admin", "POST", "/shutdown"},
		{"consul", "lifecycle", "POST", "/graceful_shutdown"},
		{"dapr", "http", "POST", "/v1.0/shutdown"},
		{"cloudsql", "admin", "POST", "/quitquitquit"},
		{"vault", "admin", "POST", "/agent/v1/quit"},
	} {
		for _, b := range []Behaviour{Behaviour500, BehaviourEOF} {
			t.Run(kr.profile+" "+string(b), func(t *testing.T) {
				sc, rec := startProfile(t, kr.profile, Options{QuitBehaviour: b, ExitCode: 4})
				res, err := try(kr.method, "http://"+sc.AddrOf(kr.listener)+kr.target, guard)
				checkBehaviour(t, b, res, err)
				rec.wait(t, "request", "path", kr.target, "status", eventStatus(b))
				if b == Behaviour500 {
					if rec.has("quit") {
						t.Errorf("500 quit:\n%s", rec.text())
					}
					return
				}
				waitDone(t, sc)
				if sc.ExitCode() != 4 {
					t.Errorf("exit code %d", sc.ExitCode())
				}
			})
		}
	}
}

// TestProfileRefusalsBeatKnobs: a refusal of the real sidecar stays a
// refusal, and no quit, whatever --quit-behaviour says.
func TestProfileRefusalsBeatKnobs(t *testing.T) {
	for _, tc := range []struct {
		knobRoute
		opts   Options
		status int
	}{
		{knobRoute{"istio", "status", "GET", "/quitquitquit"}, Options{}, 405},
		{knobRoute{"linkerd", "admin", "GET", "/shutdown"}, Options{}, 405},
		{knobRoute{"linkerd", "admin", "POST", "/shutdown"}, Options{ShutdownDisabled: true}, 404},
		{knobRoute{"vault", "admin", "GET", "/agent/v1/quit"}, Options{}, 405},
		{knobRoute{"vault", "admin", "POST", "/agent/v1/quit"}, Options{ShutdownDisabled: true}, 404},
		{knobRoute{"cloudsql", "admin", "PUT", "/quitquitquit"}, Options{}, 400},
		{knobRoute{"dapr", "http", "POST", "/v1.0/shutdown"}, Options{APIToken: "t"}, 401},
		{knobRoute{"dapr", "http", "GET", "/v1.0/shutdown"}, Options{}, 404},
	} {
		t.Run(tc.profile+" "+tc.method+" "+tc.target, func(t *testing.T) {
			tc.opts.QuitBehaviour = BehaviourReset
			sc, rec := startProfile(t, tc.profile, tc.opts)
			if res := send(t, tc.method, "http://"+sc.AddrOf(tc.listener)+tc.target); res.status != tc.status {
				t.Errorf("= %d %q, want %d", res.status, res.body, tc.status)
			}
			if rec.has("quit") {
				t.Errorf("a refused request quit:\n%s", rec.text())
			}
		})
	}
}

// TestProfileReadyAfter: the non-Envoy profiles follow the state clock
// through the generic states.
func TestProfileReadyAfter(t *testing.T) {
	sc, rec := startProfile(t, "cloudsql", Options{ReadyAfter: 200 * time.Millisecond})
	for _, state := range []string{stateStarting, stateInitializing, stateReady} {
		rec.wait(t, "state", "state", state)
	}
	if res := send(t, "GET", "http://"+sc.Addr()+"/startup"); res.status != 200 || res.body != "ok" {
		t.Errorf("/startup once READY = %d %q", res.status, res.body)
	}
}

// TestReadyAfterProbes: the sidecar turns ready after answering N readiness requests, however
// long the client took between them.
func TestReadyAfterProbes(t *testing.T) {
	sc, _ := startEnvoy(t, Options{ReadyAfterProbes: 3})
	for i := range 3 {
		if res := send(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 503 {
			t.Fatalf("probe %d: %d %q, want 503", i+1, res.status, res.body)
		}
	}
	if res := send(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 200 || res.body != "LIVE\n" {
		t.Errorf("probe 4: %d %q, want 200 LIVE", res.status, res.body)
	}
	for _, bad := range []Options{{ReadyAfterProbes: -1}, {ReadyAfterProbes: 1, NeverReady: true}, {ReadyAfterProbes: 1, ReadyAfter: time.Second}} {
		if err := bad.withDefaults().validate(); err == nil {
			t.Errorf("%+v: validate accepted it", bad)
		}
	}
}
