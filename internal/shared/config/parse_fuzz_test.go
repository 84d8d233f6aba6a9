package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary flag and variable values to Parse: it must never panic, and must
// either fail with a *UsageError (sidesync's exit 2) whose every problem names the flag or
// variable at fault, or return a Config that keeps the invariants sidesync relies on. The same
// input parses to the same Config, or the same problems, every time.
func FuzzParse(f *testing.F) {
	f.Add(uint8(0), "--timeout=5s --quit=always -- true", "PROXY=true\ninterval=1\nmaxRetries=3")
	f.Add(uint8(0), "--admin http://[::1]:9901 --max-retries 2 cmd", "ENVOY_ADMIN_API=http://127.0.0.1:15000\nGENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q")
	f.Add(uint8(0), "--backoff polly --interval 0 --max-retries 1 -- x", "SIDESYNC_QUIT_URL=http://localhost:1/a,http://10.0.0.1/b")
	f.Add(uint8(0), "--no-wait=maybe --log-level=trace", "WAIT_FOR_ENVOY_TIMEOUT=1h\nQUIT_WITHOUT_ENVOY_TIMEOUT=0s\nSCUTTLE_LOGGING=false")
	f.Add(uint8(0), "--sidecar istio,cloudsql:ready-port=9090,quit-port=9091 -- x", "SIDESYNC_SIDECARS=http:ready=http://127.0.0.1:1/r,quit=http://10.0.0.1/q\nDAPR_API_TOKEN=t")
	f.Add(uint8(0), "--sidecar tcp:ready=tcp://127.0.0.1:5432,name=db -- x", "")
	f.Add(uint8(0), "--admin http://u:p@127.0.0.1: --require-sidecar --disabled -- x", "PROXY=no\nENVOY_ADMIN_API=127.0.0.1:15000\nISTIO_QUIT_API=http://127.0.0.1:15020")
	f.Add(uint8(0), "--sidecar cloudsql:port=9090,host=::1 -- x", "PROXY=true\nproxyEndpoint=http://[::1]:15000/\nGENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q")
	// From the table tests: urls_test.go, sidecars_test.go, kube_values_test.go, compat_test.go.
	f.Add(uint8(0), "--sidecar tcp:ready=tcp://127.0.0.1:99999 -- x", "SIDESYNC_SIDECARS=tcp:ready=tcp://db:0")
	f.Add(uint8(0), "--sidecar tcp:ready=http:127.0.0.1:5432 -- x", "SIDESYNC_ADMIN=localhost:15000")
	f.Add(uint8(0), "--ready-url localhost:15021/healthz/ready -- x", "SIDESYNC_READY_URL=http://127.0.0.1:65536/")
	f.Add(uint8(0), "--sidecar istio:host=127.0.0.1:80 -- x", "ENVOY_ADMIN_API=http://127.0.0.1:15000\nISTIO_QUIT_API=127.0.0.1:15020")
	f.Add(uint8(0), "--sidecar http:method=put,status=204,ready=http://127.0.0.1:8080/health,quit=http://127.0.0.1:8080/quit,name=app -- x", "")
	f.Add(uint8(0), "--sidecar envoy:ready=http://127.0.0.1:19000,quit=http://127.0.0.1:19000/quitquitquit -- x", "")
	f.Add(uint8(0), "--sidecar linkerd:quit=none,native=true,startup-probe=true -- x", "")
	f.Add(uint8(0), `--restart-policy=OnFailure --restart-rules=[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}] -- x`, "")
	f.Add(uint8(0), `--platform-commands={"linux/amd64":["/app"],"linux/arm64/v8":["/app-arm64"]}`, "SIDESYNC_RESTART_POLICY=never")
	f.Add(uint8(0), "", `SIDESYNC_PLATFORM_COMMANDS={"linux/amd64":["/app"]}`+"\nSIDESYNC_RESTART_RULES=[]")
	f.Add(uint8(1), "--timeout 1s", "SIDESYNC_SIDECAR=istio")
	f.Add(uint8(2), "--quit-retries 3 --quit-timeout 2s extra", "")
	f.Add(uint8(3), "--on-timeout start-anyway --allow-remote-quit --quit-url http://10.0.0.1/q", "")
	f.Add(uint8(0), "-h", "")
	f.Add(uint8(0), "--unknown -x --timeout", "START_WITHOUT_ENVOY=true\nNEVER_KILL_ISTIO=true\nKILL_ISTIO_WITH_CURL=true")
	f.Fuzz(func(t *testing.T, modeByte uint8, args, env string) {
		mode := []Mode{ModeRun, ModeWait, ModeQuit, ModeCheck}[int(modeByte)%4]
		pairs := strings.Split(env, "\n")
		argv := strings.Fields(args)
		cfg, err := Parse(mode, argv, envOf(pairs...))
		again, errAgain := Parse(mode, argv, envOf(pairs...))
		if !reflect.DeepEqual(cfg, again) || !reflect.DeepEqual(err, errAgain) {
			t.Fatalf("Parse is not deterministic:\n%#v, %v\n%#v, %v", cfg, err, again, errAgain)
		}
		if err != nil {
			checkUsageError(t, err, argv, pairs)
			return
		}
		checkFuzzedConfig(t, cfg, mode, args, env)
	})
}

// checkUsageError checks that err is sidesync's exit 2 (a *UsageError, or the help) and that every
// problem names what is at fault: a flag ("--timeout"), a variable that was set, or the command.
func checkUsageError(t *testing.T, err error, argv, pairs []string) {
	t.Helper()
	if errors.Is(err, ErrHelp) {
		return
	}
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("Parse returned %T %v, want a *UsageError (exit 2)", err, err)
	}
	if len(ue.Problems) == 0 {
		t.Fatal("UsageError without problems")
	}
	for _, p := range ue.Problems {
		if !namesSource(p.Error(), argv, pairs) {
			t.Errorf("problem %q names no flag or variable", p)
		}
	}
}

// namesSource reports whether a problem names a flag, a variable that was set, or the command.
func namesSource(msg string, argv, pairs []string) bool {
	if strings.Contains(msg, "--") || strings.Contains(msg, "unexpected arguments for sidesync") {
		return true
	}
	for _, p := range pairs {
		if name, _, _ := strings.Cut(p, "="); name != "" && strings.Contains(msg, name) {
			return true
		}
	}
	for _, a := range argv {
		if strings.HasPrefix(a, "-") && strings.Contains(msg, a) {
			return true
		}
	}
	return false
}

// checkFuzzedConfig checks the invariants of a Config that Parse accepted.
func checkFuzzedConfig(t *testing.T, cfg *Config, mode Mode, args, env string) {
	t.Helper()
	if cfg.Mode != mode {
		t.Fatalf("Mode = %q, want %q", cfg.Mode, mode)
	}
	if mode == ModeRun && len(cfg.Command) == 0 && cfg.PlatformCommands == nil {
		t.Fatal("run config without a command")
	}
	if mode != ModeRun && len(cfg.Command) > 0 {
		t.Fatalf("%s config with a command %q", mode, cfg.Command)
	}
	if cfg.ProbeTimeout <= 0 || cfg.QuitTimeout <= 0 || cfg.QuitRequestTimeout <= 0 || cfg.Timeout < 0 {
		t.Fatalf("bad timeouts: %+v", cfg)
	}
	if cfg.Backoff == nil {
		t.Fatal("no backoff")
	}
	if cfg.Detect && len(cfg.Sidecars) > 0 {
		t.Fatalf("Detect with sidecars configured: %+v", cfg.Sidecars)
	}
	for _, cmd := range cfg.PlatformCommands {
		if len(cmd) == 0 || cmd[0] == "" {
			t.Fatalf("platform command without a program: %q", cfg.PlatformCommands)
		}
	}
	allowed := cfg.Disabled || strings.Contains(args, "allow-remote-quit") || strings.Contains(env, "ALLOW_REMOTE_QUIT")
	// --allow-remote-quit allows remote readiness too; scuttle's ENVOY_ADMIN_API keeps its meaning
	// (waited for wherever it points).
	readyAllowed := allowed || strings.Contains(args, "allow-remote-ready") || strings.Contains(env, "ALLOW_REMOTE_READY") ||
		strings.Contains(env, "ENVOY_ADMIN_API")
	for _, sc := range cfg.Sidecars {
		if sc.Ready != nil && !readyAllowed && !IsLoopback(sc.Ready.URL) {
			t.Fatalf("non-loopback readiness URL %s accepted", sc.Ready.URL)
		}
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
}
