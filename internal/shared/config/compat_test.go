package config

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// TestArticleContract covers PROXY, proxyEndpoint, interval and maxRetries with the meanings of
// the article's .NET job.
func TestArticleContract(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want *Config
	}{
		{"PROXY=true with endpoint", nil, []string{"PROXY=true", "proxyEndpoint=http://127.0.0.1:15000/"}, with(envoyAt("http://127.0.0.1:15000/"))},
		{"PROXY=true without endpoint uses OSM's admin", nil, []string{"PROXY=true"}, with(envoyAt("http://127.0.0.1:15000"))},
		{"interval and maxRetries give Polly's policy", nil, []string{"PROXY=true", "proxyEndpoint=http://127.0.0.1:9901/", "interval=1", "maxRetries=5"}, with(func(c *Config) {
			envoyAt("http://127.0.0.1:9901/")(c)
			pollyWith(time.Second, 5)(c)
			c.Timeout = 0
		})},
		{"interval alone keeps the default timeout", nil, []string{"PROXY=true", "interval=2"}, with(func(c *Config) {
			envoyAt(DefaultAdmin)(c)
			pollyWith(2*time.Second, -1)(c)
		})},
		{"maxRetries alone uses a 1s median", nil, []string{"PROXY=true", "maxRetries=3"}, with(func(c *Config) {
			envoyAt(DefaultAdmin)(c)
			pollyWith(time.Second, 3)(c)
			c.Timeout = 0
		})},
		{"interval=0 with retries is Polly's zero median", nil, []string{"PROXY=true", "interval=0", "maxRetries=2"}, with(func(c *Config) {
			envoyAt(DefaultAdmin)(c)
			pollyWith(0, 2)(c)
			c.Timeout = 0
		})},
		{"PROXY=false", nil, []string{"PROXY=false", "proxyEndpoint=http://127.0.0.1:15000/"}, with(disabled)},
		// Without PROXY the article's contract is not in use: these names are the application's.
		{"PROXY unset with the article's other variables", nil, []string{"proxyEndpoint=http://127.0.0.1:15000/", "interval=1"}, defaults()},
		{"PROXY=True is not true", nil, []string{"PROXY=True"}, with(disabled)},
		{"explicit settings beat PROXY=false", []string{"--admin", "http://127.0.0.1:19000"}, []string{"PROXY=false"}, with(envoyAt("http://127.0.0.1:19000"))},
		{"SIDESYNC_ beats proxyEndpoint", nil, []string{"PROXY=true", "proxyEndpoint=http://127.0.0.1:1/", "SIDESYNC_ADMIN=http://127.0.0.1:2"}, with(envoyAt("http://127.0.0.1:2"))},
		{"flags beat interval", []string{"--backoff=constant", "--interval=50ms"}, []string{"PROXY=true", "interval=1"}, with(func(c *Config) {
			envoyAt(DefaultAdmin)(c)
			probing(BackoffPolicy{Kind: BackoffConstant, Interval: 50 * time.Millisecond, MaxRetries: -1}, sidecar.Constant{Delay: 50 * time.Millisecond})(c)
		})},
		{"lowercase proxy alone changes nothing", nil, []string{"proxy=true"}, defaults()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, tt.args, tt.env, tt.want)
		})
	}
}

func disabled(c *Config) { c.Disabled, c.Detect = true, false }

// pollyWith is the article's policy: Polly's median first delay and a retry count (-1: none).
func pollyWith(median time.Duration, retries int) func(*Config) {
	var b sidecar.Backoff = sidecar.DecorrelatedJitter{Median: median}
	if retries >= 0 {
		b = sidecar.Polly(median, retries, false)
	}
	return probing(BackoffPolicy{Kind: BackoffPolly, Interval: median, MaxRetries: retries}, b)
}

// TestScuttleContract covers every scuttle variable (redboxllc and kvij), minus its bugs.
func TestScuttleContract(t *testing.T) {
	istio := "http://127.0.0.1:15000"
	agentQuit := sidecar.Call{URL: "http://127.0.0.1:15020/quitquitquit", Alternates: []string{"http://127.0.0.1:15000/quitquitquit"}}
	envoyQuitting := func(admin string, c *sidecar.Call) sidecar.Sidecar {
		return sidecar.Sidecar{Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: admin}, Quit: c}
	}
	istioSC := envoyQuitting(istio, &agentQuit)
	tests := []struct {
		name string
		env  []string
		want *Config
	}{
		{"ENVOY_ADMIN_API on 15000 quits Istio's agent, Envoy if absent", []string{"ENVOY_ADMIN_API=" + istio}, with(sidecars(istioSC))},
		{"ENVOY_ADMIN_API elsewhere quits Envoy", []string{"ENVOY_ADMIN_API=http://localhost:9901"}, with(envoyAt("http://localhost:9901"))},
		{"ISTIO_QUIT_API", []string{"ENVOY_ADMIN_API=" + istio, "ISTIO_QUIT_API=http://127.0.0.1:15020"}, with(sidecars(
			envoyQuitting(istio, &sidecar.Call{URL: "http://127.0.0.1:15020/quitquitquit"})))},
		{"GENERIC_QUIT_ENDPOINTS", []string{"ENVOY_ADMIN_API=" + istio, "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:9091/quitquitquit, http://localhost:8200/agent/v1/quit"}, with(sidecars(
			istioSC, quitOnly("127.0.0.1:9091", "http://127.0.0.1:9091/quitquitquit"), quitOnly("localhost:8200", "http://localhost:8200/agent/v1/quit")))},
		{"GENERIC_QUIT_ONLY", []string{"ENVOY_ADMIN_API=" + istio, "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:9091/quitquitquit", "GENERIC_QUIT_ONLY=true"}, with(sidecars(
			envoyQuitting(istio, nil), quitOnly("127.0.0.1:9091", "http://127.0.0.1:9091/quitquitquit")))},
		{"no ENVOY_ADMIN_API: generic quits only", []string{"GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:9091/quitquitquit"}, with(sidecars(
			quitOnly("127.0.0.1:9091", "http://127.0.0.1:9091/quitquitquit")))},
		{"no ENVOY_ADMIN_API and nothing to quit: no sidecar", []string{"SCUTTLE_LOGGING=true"}, with(disabled)},
		{"START_WITHOUT_ENVOY", []string{"ENVOY_ADMIN_API=" + istio, "START_WITHOUT_ENVOY=true"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.Wait = false
		})},
		{"WAIT_FOR_ENVOY_TIMEOUT starts anyway", []string{"ENVOY_ADMIN_API=" + istio, "WAIT_FOR_ENVOY_TIMEOUT=30s"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.Timeout, c.StartAnyway = 30*time.Second, true
		})},
		{"WAIT_FOR_ENVOY_TIMEOUT=0 waits forever", []string{"ENVOY_ADMIN_API=" + istio, "WAIT_FOR_ENVOY_TIMEOUT=0s"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.Timeout = 0
		})},
		{"QUIT_WITHOUT_ENVOY_TIMEOUT fails and wins", []string{"ENVOY_ADMIN_API=" + istio, "WAIT_FOR_ENVOY_TIMEOUT=30s", "QUIT_WITHOUT_ENVOY_TIMEOUT=10s"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.Timeout = 10 * time.Second
		})},
		{"NEVER_KILL_ISTIO", []string{"ENVOY_ADMIN_API=" + istio, "NEVER_KILL_ISTIO=true"}, with(func(c *Config) {
			sidecars(envoyQuitting(istio, nil))(c)
			c.QuitPolicy = QuitNever
		})},
		{"NEVER_KILL_ISTIO with GENERIC_QUIT_ONLY still quits generic", []string{"ENVOY_ADMIN_API=" + istio, "NEVER_KILL_ISTIO=true", "GENERIC_QUIT_ONLY=true", "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q"}, with(sidecars(
			envoyQuitting(istio, nil), quitOnly("127.0.0.1:1", "http://127.0.0.1:1/q")))},
		{"NEVER_KILL_ISTIO_ON_FAILURE", []string{"ENVOY_ADMIN_API=" + istio, "NEVER_KILL_ISTIO_ON_FAILURE=true"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.QuitPolicy = QuitOnSuccess
		})},
		{"QUIT_REQUEST_TIMEOUT", []string{"ENVOY_ADMIN_API=" + istio, "QUIT_REQUEST_TIMEOUT=7s"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.QuitRequestTimeout = 7 * time.Second
		})},
		{"SCUTTLE_LOGGING=false", []string{"ENVOY_ADMIN_API=" + istio, "SCUTTLE_LOGGING=false"}, with(func(c *Config) {
			sidecars(istioSC)(c)
			c.LogLevel = slog.LevelWarn
		})},
		{"non-loopback ENVOY_ADMIN_API waits but does not quit", []string{"ENVOY_ADMIN_API=http://10.0.0.7:15000"}, with(sidecars(
			envoyQuitting("http://10.0.0.7:15000", nil)))},
		{"ISTIO_FALLBACK_PKILL and BYPASS_SIGURG accepted", []string{"ENVOY_ADMIN_API=" + istio, "ISTIO_FALLBACK_PKILL=true", "BYPASS_SIGURG=false"}, with(sidecars(istioSC))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, nil, tt.env, tt.want)
		})
	}
}

// TestCompatErrors: invalid values of the other tools' variables are usage errors that name the
// variable (scuttle logged and ignored them).
func TestCompatErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"interval not a number", []string{"PROXY=true", "interval=1.5"}, []string{`interval="1.5" (the article's contract): must be a whole number`}},
		{"negative maxRetries", []string{"PROXY=true", "maxRetries=-1"}, []string{`maxRetries="-1"`}},
		{"maxRetries too large for Int16", []string{"PROXY=true", "maxRetries=40000"}, []string{`maxRetries="40000"`}},
		{"bad proxyEndpoint", []string{"PROXY=true", "proxyEndpoint=127.0.0.1:15000"}, []string{`proxyEndpoint="127.0.0.1:15000" (the article's contract)`}},
		{"zero interval without retries", []string{"PROXY=true", "interval=0"}, []string{`interval="0": must be more than 0`}},
		{"both contracts", []string{"PROXY=true", "ENVOY_ADMIN_API=http://127.0.0.1:15000"}, []string{"both configure the sidecar"}},
		{"scuttle bool", []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "START_WITHOUT_ENVOY=yes"}, []string{`START_WITHOUT_ENVOY="yes" (scuttle): not a boolean`}},
		{"scuttle durations", []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "WAIT_FOR_ENVOY_TIMEOUT=30", "QUIT_REQUEST_TIMEOUT=-1s"},
			[]string{`WAIT_FOR_ENVOY_TIMEOUT="30" (scuttle): not a duration`, `QUIT_REQUEST_TIMEOUT="-1s": must not be negative`}},
		{"scuttle url", []string{"ENVOY_ADMIN_API=localhost:15000"}, []string{`ENVOY_ADMIN_API="localhost:15000" (scuttle)`}},
		{"scuttle generic list", []string{"GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q,nope"}, []string{`GENERIC_QUIT_ENDPOINTS="http://127.0.0.1:1/q,nope" (scuttle): "nope"`}},
		{"scuttle remote generic", []string{"GENERIC_QUIT_ENDPOINTS=http://vault:8200/agent/v1/quit"}, []string{"GENERIC_QUIT_ENDPOINTS (scuttle): quit URL http://vault:8200/agent/v1/quit is not on a loopback address"}},
		{"scuttle remote istio", []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "ISTIO_QUIT_API=http://10.0.0.1:15020"}, []string{"ISTIO_QUIT_API (scuttle): quit URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, nil, envOf(tt.env...))
			checkProblems(t, err, tt.want)
		})
	}
}

// TestNotes checks that what sidesync does differently from the replaced tool is said once.
func TestNotes(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"PROXY off", []string{"PROXY=yes"}, `PROXY="yes" is not "true"`},
		{"pkill", []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "ISTIO_FALLBACK_PKILL=true"}, "ISTIO_FALLBACK_PKILL=true is not supported"},
		{"remote admin", []string{"ENVOY_ADMIN_API=http://10.0.0.7:15000"}, "will not be told to quit"},
		{"lowercase proxy", []string{"proxy=true"}, "proxy=\"true\" is set but PROXY is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeWait, nil, envOf(tt.env...))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var msgs []string
			for _, n := range cfg.Notes {
				msgs = append(msgs, n.Msg)
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.want) {
				t.Errorf("notes %q do not mention %q", msgs, tt.want)
			}
		})
	}
}
