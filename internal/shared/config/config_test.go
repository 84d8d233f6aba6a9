package config

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/sidesync/sidesync/sidecar"
)

// envOf turns "K=V" pairs into a lookup function like os.LookupEnv.
func envOf(pairs ...string) func(string) (string, bool) {
	m := make(map[string]string)
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		m[k] = v
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// defaults is the Config of "sidesync wait" with nothing set, written out in full: the values
// that README.md documents.
func defaults() *Config {
	return &Config{
		Mode:               ModeWait,
		Wait:               true,
		Detect:             true,
		PodInfoDir:         "/etc/podinfo",
		KubeAPI:            true,
		ServiceAccountDir:  "/var/run/secrets/kubernetes.io/serviceaccount",
		BackoffPolicy:      BackoffPolicy{Kind: BackoffConstant, Interval: 20 * time.Millisecond, MaxRetries: -1},
		Backoff:            sidecar.Constant{Delay: 20 * time.Millisecond},
		Timeout:            2 * time.Minute,
		ProbeTimeout:       time.Second,
		QuitPolicy:         QuitAlways,
		QuitTimeout:        10 * time.Second,
		QuitRequestTimeout: 2 * time.Second,
		QuitRetries:        3,
		PeerStartTimeout:   2 * time.Minute,
		LogFormat:          "text",
		LogLevel:           slog.LevelInfo,
		TerminationLog:     "/dev/termination-log",
	}
}

// with is defaults changed by f.
func with(f func(*Config)) *Config {
	c := defaults()
	f(c)
	return c
}

// probing sets the expected backoff policy and the Backoff built from it.
func probing(bp BackoffPolicy, b sidecar.Backoff) func(*Config) {
	return func(c *Config) { c.BackoffPolicy, c.Backoff = bp, b }
}

// cmpConfig compares whole Configs. Backoff holds sidecar's wrapper types, compared by value
// like the rest; Notes are checked by tests of their own.
var cmpConfig = []cmp.Option{
	cmp.AllowUnexported(sidecar.Limit(sidecar.Constant{}, 1), sidecar.Cap(sidecar.Constant{}, 1)),
	cmpopts.IgnoreFields(Config{}, "Notes"),
}

// envoy is the sidecar of --admin.
func envoy(admin string) sidecar.Sidecar {
	q := sidecar.EnvoyQuit(admin)
	return sidecar.Sidecar{Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: admin}, Quit: &q}
}

func envoyAt(admin string) func(*Config) {
	return func(c *Config) {
		c.Detect, c.Sidecars = false, []sidecar.Sidecar{envoy(admin)}
	}
}

// sidecars sets the expected sidecars.
func sidecars(scs ...sidecar.Sidecar) func(*Config) {
	return func(c *Config) { c.Detect, c.Sidecars = false, scs }
}

func quitOnly(name, url string) sidecar.Sidecar {
	return sidecar.Sidecar{Name: name, Quit: &sidecar.Call{URL: url}}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want *Config
	}{
		{"defaults", nil, nil, defaults()},
		{"admin flag", []string{"--admin", "http://localhost:9901"}, nil, with(envoyAt("http://localhost:9901"))},
		{"admin flag with =", []string{"--admin=http://[::1]:9901/"}, nil, with(envoyAt("http://[::1]:9901/"))},
		{"SIDESYNC_ADMIN", nil, []string{"SIDESYNC_ADMIN=http://127.0.0.1:19000"}, with(envoyAt("http://127.0.0.1:19000"))},
		{"flag beats SIDESYNC_ variable", []string{"--timeout=5s"}, []string{"SIDESYNC_TIMEOUT=9s"}, with(func(c *Config) { c.Timeout = 5 * time.Second })},
		{"empty variable is unset", nil, []string{"SIDESYNC_TIMEOUT="}, defaults()},
		{"ready and quit URLs", []string{"--ready-url", "http://127.0.0.1:15021/healthz/ready", "--quit-url", "http://127.0.0.1:15020/quitquitquit", "--quit-url=http://localhost:9091/quitquitquit"}, nil, with(sidecars(
			sidecar.Sidecar{Name: "sidecar", Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:15021/healthz/ready"}, Quit: &sidecar.Call{URL: "http://127.0.0.1:15020/quitquitquit"}},
			quitOnly("localhost:9091", "http://localhost:9091/quitquitquit")))},
		{"quit URL list variable", nil, []string{"SIDESYNC_QUIT_URL=http://127.0.0.1:1/a, http://127.0.0.1:2/b"}, with(sidecars(
			sidecar.Sidecar{Name: "envoy", Quit: &sidecar.Call{URL: "http://127.0.0.1:1/a"}},
			quitOnly("127.0.0.1:2", "http://127.0.0.1:2/b")))},
		{"max retries alone lifts the default timeout", []string{"--max-retries", "5"}, nil, with(func(c *Config) {
			probing(BackoffPolicy{Kind: BackoffConstant, Interval: 20 * time.Millisecond, MaxRetries: 5}, sidecar.Limit(sidecar.Constant{Delay: 20 * time.Millisecond}, 5))(c)
			c.Timeout = 0
		})},
		{"timeout and retries", []string{"--max-retries=5", "--timeout=1m"}, nil, with(func(c *Config) {
			probing(BackoffPolicy{Kind: BackoffConstant, Interval: 20 * time.Millisecond, MaxRetries: 5}, sidecar.Limit(sidecar.Constant{Delay: 20 * time.Millisecond}, 5))(c)
			c.Timeout = time.Minute
		})},
		{"timeout 0 waits forever", []string{"--timeout", "0"}, nil, with(func(c *Config) { c.Timeout = 0 })},
		{"polly", []string{"--backoff", "polly", "--interval", "1s", "--max-interval", "15s"}, nil, with(probing(
			BackoffPolicy{Kind: BackoffPolly, Interval: time.Second, MaxInterval: 15 * time.Second, MaxRetries: -1},
			sidecar.Cap(sidecar.DecorrelatedJitter{Median: time.Second}, 15*time.Second)))},
		{"exponential", []string{"--backoff=exponential", "--interval=10ms"}, nil, with(probing(
			BackoffPolicy{Kind: BackoffExponential, Interval: 10 * time.Millisecond, MaxRetries: -1},
			sidecar.Exponential{Initial: 10 * time.Millisecond, Factor: 2}))},
		{"policies", []string{"--on-timeout", "start-anyway", "--quit", "on-success", "--log-level", "debug"}, nil, with(func(c *Config) {
			c.StartAnyway, c.QuitPolicy, c.LogLevel = true, QuitOnSuccess, slog.LevelDebug
		})},
		{"bool flag forms", []string{"--no-wait", "--disabled=false"}, nil, with(func(c *Config) { c.Wait = false })},
		{"bool variable", nil, []string{"SIDESYNC_DISABLED=TRUE"}, with(func(c *Config) { c.Disabled, c.Detect = true, false })},
		{"remote quit allowed", []string{"--admin", "http://10.0.0.5:15000", "--allow-remote-quit"}, nil, with(envoyAt("http://10.0.0.5:15000"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, tt.args, tt.env, tt.want)
		})
	}
}

// TestParseCommand checks where the flags end and the command begins.
func TestParseCommand(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"after --", []string{"--timeout", "1s", "--", "python", "job.py", "--timeout", "3"}, []string{"python", "job.py", "--timeout", "3"}},
		{"first non-flag", []string{"--no-wait", "python", "-u", "job.py"}, []string{"python", "-u", "job.py"}},
		{"no flags", []string{"--", "true"}, []string{"true"}},
		{"dash is a command", []string{"-"}, []string{"-"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeRun, tt.args, envOf())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, cfg.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageErrors checks that every bad value is reported, naming its flag or variable, all at
// once.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		mode Mode
		args []string
		env  []string
		want []string // substrings, one per expected problem
	}{
		{"bad duration flag", ModeWait, []string{"--timeout", "5x"}, nil, []string{`--timeout "5x": not a duration`}},
		{"duration without unit", ModeWait, []string{"--timeout=30"}, nil, []string{`--timeout "30": not a duration`}},
		{"negative duration", ModeWait, []string{"--probe-timeout=-1s"}, nil, []string{`--probe-timeout "-1s": must not be negative`}},
		{"zero probe timeout", ModeWait, []string{"--probe-timeout=0"}, nil, []string{`--probe-timeout "0s": must be more than 0`}},
		{"negative count", ModeWait, []string{"--max-retries", "-3"}, nil, []string{`--max-retries "-3": must not be negative`}},
		{"not a count", ModeWait, []string{"--quit-retries", "many"}, nil, []string{`--quit-retries "many": not a whole number`}},
		{"unknown policy", ModeWait, []string{"--quit", "sometimes"}, nil, []string{`--quit "sometimes": must be one of always, on-success, never`}},
		{"unknown backoff", ModeWait, []string{"--backoff=fibonacci"}, nil, []string{`--backoff "fibonacci": must be one of`}},
		{"bad url scheme", ModeWait, []string{"--admin", "https://127.0.0.1:15000"}, nil, []string{`--admin "https://127.0.0.1:15000": must be an http:// URL`}},
		{"url without host", ModeWait, []string{"--ready-url", "http:///ready"}, nil, []string{`has no host`}},
		{"bad port", ModeWait, []string{"--admin", "http://127.0.0.1:99999"}, nil, []string{`port "99999" is not in 1-65535`}},
		{"not a boolean", ModeWait, []string{"--no-wait=maybe"}, nil, []string{`--no-wait "maybe": not a boolean`}},
		{"unknown flag", ModeWait, []string{"--tiemout=1s"}, nil, []string{"unknown flag --tiemout"}},
		{"missing value", ModeWait, []string{"--timeout"}, nil, []string{"flag --timeout needs a value"}},
		{"bad variable", ModeWait, nil, []string{"SIDESYNC_TIMEOUT=soon"}, []string{`SIDESYNC_TIMEOUT="soon": not a duration`}},
		{"bad bool variable", ModeWait, nil, []string{"SIDESYNC_NO_WAIT=yes"}, []string{`SIDESYNC_NO_WAIT="yes": not a boolean`}},
		{"zero interval", ModeWait, []string{"--interval", "0"}, nil, []string{`--interval "0": must be more than 0`}},
		{"remote quit refused", ModeWait, []string{"--admin", "http://10.1.2.3:15000"}, nil, []string{
			"--admin: readiness URL http://10.1.2.3:15000 is not on a loopback address; waiting for a sidecar of another machine is refused unless --allow-remote-ready (SIDESYNC_ALLOW_REMOTE_READY=true) is given",
			"--admin: quit URL http://10.1.2.3:15000/quitquitquit is not on a loopback address"}},
		{"remote quit refused even when disabled", ModeWait, []string{"--admin", "http://10.0.0.5:15000", "--disabled"}, nil, []string{
			"--admin: readiness URL http://10.0.0.5:15000 is not on a loopback address",
			"--admin: quit URL http://10.0.0.5:15000/quitquitquit is not on a loopback address"}},
		{"remote quit refused, remote readiness allowed", ModeWait, []string{"--admin", "http://10.1.2.3:15000", "--allow-remote-ready"}, nil, []string{
			"--admin: quit URL http://10.1.2.3:15000/quitquitquit is not on a loopback address"}},
		{"remote readiness refused", ModeWait, []string{"--ready-url", "http://db.example:8080/health"}, nil, []string{
			"--ready-url: readiness URL http://db.example:8080/health is not on a loopback address"}},
		{"remote tcp check refused", ModeWait, nil, []string{"SIDESYNC_SIDECARS=tcp:ready=tcp://10.9.8.7:5432"}, []string{
			"SIDESYNC_SIDECARS: tcp: readiness URL tcp://10.9.8.7:5432 is not on a loopback address"}},
		{"remote host= refused", ModeWait, []string{"--sidecar", "linkerd:host=10.0.0.9"}, nil, []string{
			"--sidecar: linkerd: readiness URL http://10.0.0.9:4191/ready is not on a loopback address",
			"--sidecar: linkerd: quit URL http://10.0.0.9:4191/shutdown is not on a loopback address"}},
		{"article's remote proxyEndpoint refused", ModeWait, nil, []string{"PROXY=true", "proxyEndpoint=http://10.0.0.3:15000/"}, []string{
			"proxyEndpoint: readiness URL http://10.0.0.3:15000/ is not on a loopback address",
			"proxyEndpoint: quit URL http://10.0.0.3:15000/quitquitquit is not on a loopback address"}},
		{"remote quit url refused", ModeWait, nil, []string{"SIDESYNC_QUIT_URL=http://vault.svc:8200/agent/v1/quit"}, []string{"SIDESYNC_QUIT_URL: quit URL http://vault.svc:8200/agent/v1/quit is not on a loopback address"}},
		{"no command", ModeRun, []string{"--timeout=1s"}, nil, []string{"no command given"}},
		{"command for wait", ModeWait, []string{"--", "true"}, nil, []string{"unexpected arguments for sidesync wait"}},
		{"unknown restart policy", ModeWait, []string{"--restart-policy", "Sometimes"}, nil, []string{`--restart-policy "Sometimes": must be Never, OnFailure or Always`}},
		{"bad restart policy variable", ModeWait, nil, []string{"SIDESYNC_RESTART_POLICY=on-failure"}, []string{`SIDESYNC_RESTART_POLICY="on-failure": must be Never`}},
		{"restart rules not JSON", ModeWait, nil, []string{"SIDESYNC_RESTART_RULES=restart on 42"}, []string{`SIDESYNC_RESTART_RULES="restart on 42": not a JSON list of restartPolicyRules`}},
		{"unknown restart action", ModeWait, []string{"--restart-rules", `[{"action":"Recreate","exitCodes":{"operator":"In","values":[1]}}]`}, nil, []string{`--restart-rules "[{\"action\":\"Recreate\",\"exitCodes\":{\"operator\":\"In\",\"values\":[1]}}]": rule 0: action "Recreate": must be Restart or RestartAllContainers`}},
		{"unknown restart operator", ModeWait, nil, []string{`SIDESYNC_RESTART_RULES=[{"action":"Restart","exitCodes":{"operator":"Is","values":[1]}}]`}, []string{`SIDESYNC_RESTART_RULES="[{\"action\":\"Restart\",\"exitCodes\":{\"operator\":\"Is\",\"values\":[1]}}]": rule 0: exitCodes operator "Is": must be In or NotIn`}},
		{"restart values not whole numbers", ModeWait, []string{"--restart-rules", `[{"action":"Restart","exitCodes":{"operator":"In","values":["1"]}}]`}, nil, []string{`--restart-rules "[{\"action\":\"Restart\",\"exitCodes\":{\"operator\":\"In\",\"values\":[\"1\"]}}]": not a JSON list of restartPolicyRules`}},
		{"platform commands not JSON", ModeRun, []string{"--", "true"}, []string{"SIDESYNC_PLATFORM_COMMANDS=/app"}, []string{`SIDESYNC_PLATFORM_COMMANDS="/app": not a JSON object from platform to command`}},
		{"platform commands of strings", ModeRun, []string{"--platform-commands", `{"linux/amd64": "/app"}`}, nil, []string{`--platform-commands "{\"linux/amd64\": \"/app\"}": not a JSON object from platform to command`, "no command given"}},
		{"platform commands, not a platform", ModeRun, []string{"--", "true"}, []string{`SIDESYNC_PLATFORM_COMMANDS={"amd64": ["/app"]}`}, []string{`"amd64" is not a platform`}},
		{"platform commands, empty command", ModeRun, []string{"--", "true"}, []string{`SIDESYNC_PLATFORM_COMMANDS={"linux/amd64": []}`}, []string{`"linux/amd64": the command is empty`}},
		{"platform commands null, and so no command", ModeRun, nil, []string{`SIDESYNC_PLATFORM_COMMANDS=null`}, []string{`SIDESYNC_PLATFORM_COMMANDS="null": not a JSON object`, "no command given"}},
		{"platform commands checked for wait too", ModeWait, nil, []string{`SIDESYNC_PLATFORM_COMMANDS={"linux/amd64": ["/app"]} x`}, []string{`something follows the object`}},
		{"all problems at once", ModeRun, []string{"--timeout=x", "--quit=y", "--max-retries=-1"}, []string{"SIDESYNC_PROBE_TIMEOUT=z"},
			[]string{"--timeout", "--quit", "--max-retries", "SIDESYNC_PROBE_TIMEOUT", "no command given"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.mode, tt.args, envOf(tt.env...))
			checkProblems(t, err, tt.want)
		})
	}
}

// checkConfig parses args and env as "sidesync wait" and compares the whole result with want.
func checkConfig(t *testing.T, args, env []string, want *Config) {
	t.Helper()
	cfg, err := Parse(ModeWait, args, envOf(env...))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff(want, cfg, cmpConfig...); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// checkProblems fails unless err is a *UsageError with one problem per entry of want, each
// entry found in the message.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	var ue *UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("Parse: got %v, want a *UsageError", err)
	}
	if len(ue.Problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%v", len(ue.Problems), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		if _, err := Parse(ModeRun, []string{arg}, envOf()); !errors.Is(err, ErrHelp) {
			t.Errorf("Parse(%s) = %v, want ErrHelp", arg, err)
		}
	}
}

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"quit-url": "SIDESYNC_QUIT_URL", "timeout": "SIDESYNC_TIMEOUT", "allow-remote-quit": "SIDESYNC_ALLOW_REMOTE_QUIT"} {
		if got := EnvName(flag); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:15000": true, "http://127.9.8.7/": true, "http://[::1]:1": true, "http://localhost:9091": true,
		"http://LOCALHOST": true, "http://10.0.0.1": false, "http://example.com": false, "http://[::ffff:127.0.0.1]:1": true,
		"http://0.0.0.0:1": false, "http://localhost.example.com": false,
	} {
		if got := IsLoopback(u); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", u, got, want)
		}
	}
}
