package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary flag and variable values to Parse: it must never panic, and must
// either fail with a *UsageError or return a Config that keeps the invariants sidesync relies on.
func FuzzParse(f *testing.F) {
	f.Add("--timeout=5s --quit=always -- true", "PROXY=true\ninterval=1\nmaxRetries=3")
	f.Add("--admin http://[::1]:9901 --max-retries 2 cmd", "ENVOY_ADMIN_API=http://127.0.0.1:15000\nGENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q")
	f.Add("--backoff polly --interval 0 --max-retries 1 -- x", "SIDESYNC_QUIT_URL=http://localhost:1/a,http://10.0.0.1/b")
	f.Add("--no-wait=maybe --log-level=trace", "WAIT_FOR_ENVOY_TIMEOUT=1h\nQUIT_WITHOUT_ENVOY_TIMEOUT=0s\nSCUTTLE_LOGGING=false")
	f.Add("--sidecar istio,cloudsql:ready-port=9090,quit-port=9091 -- x", "SIDESYNC_SIDECARS=http:ready=http://127.0.0.1:1/r,quit=http://10.0.0.1/q\nDAPR_API_TOKEN=t")
	f.Add("--sidecar tcp:ready=tcp://127.0.0.1:5432,name=db -- x", "")
	f.Add("--admin http://u:p@127.0.0.1: --require-sidecar --disabled -- x", "PROXY=no\nENVOY_ADMIN_API=127.0.0.1:15000\nISTIO_QUIT_API=http://127.0.0.1:15020")
	f.Add("--sidecar cloudsql:port=9090,host=::1 -- x", "PROXY=true\nproxyEndpoint=http://[::1]:15000/\nGENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q")
	f.Fuzz(func(t *testing.T, args, env string) {
		var pairs []string
		for line := range strings.SplitSeq(env, "\n") {
			pairs = append(pairs, line)
		}
		cfg, err := Parse(ModeRun, strings.Fields(args), envOf(pairs...))
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) && !errors.Is(err, ErrHelp) {
				t.Fatalf("Parse returned %T %v, want a *UsageError", err, err)
			}
			if ue != nil && len(ue.Problems) == 0 {
				t.Fatal("UsageError without problems")
			}
			return
		}
		if len(cfg.Command) == 0 {
			t.Fatal("run config without a command")
		}
		if cfg.ProbeTimeout <= 0 || cfg.QuitTimeout <= 0 || cfg.QuitRequestTimeout <= 0 || cfg.Timeout < 0 {
			t.Fatalf("bad timeouts: %+v", cfg)
		}
		if cfg.Backoff == nil {
			t.Fatal("no backoff")
		}
		allowed := cfg.Disabled || strings.Contains(args, "allow-remote-quit") || strings.Contains(env, "ALLOW_REMOTE_QUIT")
		for _, sc := range cfg.Sidecars {
			if sc.Quit == nil {
				continue
			}
			for _, u := range append([]string{sc.Quit.URL}, sc.Quit.Alternates...) {
				if !allowed && !IsLoopback(u) {
					t.Fatalf("non-loopback quit URL %s accepted", u)
				}
				if !strings.HasPrefix(u, "http://") {
					t.Fatalf("quit URL %q is not http", u)
				}
			}
		}
	})
}
