package config

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// TestSidecarLocationPrecedence: a flag or SIDESYNC_* variable that names a sidecar decides both
// the wait and the quit; the article's and scuttle's location variables are then ignored, while
// their behaviour variables still fill what sidesync's own settings leave unset.
func TestSidecarLocationPrecedence(t *testing.T) {
	const x, y, z = "http://127.0.0.1:19000", "http://127.0.0.1:15000", "http://127.0.0.1:15020"
	q := "http://127.0.0.1:9091/quitquitquit"
	cloudsql, _ := catalog.Profile("cloudsql")
	istio, _ := catalog.Profile("istio")
	tests := []struct {
		name string
		args []string
		env  []string
		want *Config
	}{
		{"--admin with SCUTTLE_LOGGING waits and quits on --admin", []string{"--admin", x}, []string{"SCUTTLE_LOGGING=true"}, with(envoyAt(x))},
		{"PROXY=true with SCUTTLE_LOGGING waits and quits on the article's admin", nil, []string{"PROXY=true", "SCUTTLE_LOGGING=true"}, with(envoyAt(DefaultAdmin))},
		{"PROXY=true with SCUTTLE_LOGGING and proxyEndpoint", nil, []string{"PROXY=true", "proxyEndpoint=http://127.0.0.1:9901/", "SCUTTLE_LOGGING=true"}, with(envoyAt("http://127.0.0.1:9901/"))},
		{"PROXY=true with a scuttle behaviour", nil, []string{"PROXY=true", "START_WITHOUT_ENVOY=true"}, with(func(c *Config) {
			envoyAt(DefaultAdmin)(c)
			c.Wait = false
		})},
		{"--admin beats ENVOY_ADMIN_API and ISTIO_QUIT_API", []string{"--admin", x}, []string{"ENVOY_ADMIN_API=" + y, "ISTIO_QUIT_API=" + z}, with(envoyAt(x))},
		{"SIDESYNC_ADMIN beats ENVOY_ADMIN_API", nil, []string{"SIDESYNC_ADMIN=" + x, "ENVOY_ADMIN_API=" + y}, with(envoyAt(x))},
		{"--quit-url beats ENVOY_ADMIN_API for the wait too", []string{"--quit-url", q}, []string{"ENVOY_ADMIN_API=" + y}, with(sidecars(
			sidecar.Sidecar{Name: "envoy", Quit: &sidecar.Call{URL: q}}))},
		{"--quit-url beats PROXY=true", []string{"--quit-url", q}, []string{"PROXY=true"}, with(sidecars(
			sidecar.Sidecar{Name: "envoy", Quit: &sidecar.Call{URL: q}}))},
		{"--sidecar beats ENVOY_ADMIN_API and GENERIC_QUIT_ENDPOINTS", []string{"--sidecar", "cloudsql"}, []string{"ENVOY_ADMIN_API=" + y, "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:8200/agent/v1/quit"}, with(sidecars(cloudsql))},
		{"SIDESYNC_SIDECARS beats PROXY=true and proxyEndpoint", nil, []string{"SIDESYNC_SIDECARS=istio", "PROXY=true", "proxyEndpoint=http://127.0.0.1:1/"}, with(sidecars(istio))},
		{"--disabled beats ENVOY_ADMIN_API", []string{"--disabled"}, []string{"ENVOY_ADMIN_API=" + y}, with(disabled)},
		{"own settings make contradicting contracts irrelevant", []string{"--admin", x}, []string{"PROXY=true", "ENVOY_ADMIN_API=" + y, "GENERIC_QUIT_ENDPOINTS=" + q}, with(envoyAt(x))},
		{"own settings beat PROXY=false and ENVOY_ADMIN_API", []string{"--admin", x}, []string{"PROXY=false", "ENVOY_ADMIN_API=" + y}, with(envoyAt(x))},
		{"scuttle behaviour still applies under --admin", []string{"--admin", x}, []string{"NEVER_KILL_ISTIO=true", "WAIT_FOR_ENVOY_TIMEOUT=30s", "QUIT_REQUEST_TIMEOUT=7s"}, with(func(c *Config) {
			envoyAt(x)(c)
			c.QuitPolicy, c.Timeout, c.StartAnyway, c.QuitRequestTimeout = QuitNever, 30*time.Second, true, 7*time.Second
		})},
		{"a flag beats the same scuttle behaviour", []string{"--admin", x, "--quit=always", "--timeout=5s"}, []string{"NEVER_KILL_ISTIO=true", "WAIT_FOR_ENVOY_TIMEOUT=30s"}, with(func(c *Config) {
			envoyAt(x)(c)
			c.Timeout, c.StartAnyway = 5*time.Second, true
		})},
		{"the article's behaviour still applies under --admin", []string{"--admin", x}, []string{"PROXY=true", "maxRetries=3"}, with(func(c *Config) {
			envoyAt(x)(c)
			pollyWith(time.Second, 3)(c)
			c.Timeout = 0
		})},
		{"SIDESYNC_DISABLED=false names no sidecar and beats PROXY=false", nil, []string{"SIDESYNC_DISABLED=false", "PROXY=false"}, defaults()},
		{"ISTIO_QUIT_API without ENVOY_ADMIN_API means no sidecar, as scuttle", nil, []string{"ISTIO_QUIT_API=" + z}, with(disabled)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, tt.args, tt.env, tt.want)
		})
	}
}

// TestContractContradictions: the article's and scuttle's contracts locating the sidecar
// differently is a usage error naming both variables and their values, unless sidesync's own
// settings name the sidecar.
func TestContractContradictions(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{"PROXY=true and ISTIO_QUIT_API", []string{"PROXY=true", "ISTIO_QUIT_API=http://127.0.0.1:15020"},
			[]string{`PROXY="true" (the article's contract) and ISTIO_QUIT_API="http://127.0.0.1:15020" (scuttle's) both configure the sidecar`}},
		{"PROXY=true and GENERIC_QUIT_ENDPOINTS", []string{"PROXY=true", "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:8200/agent/v1/quit"},
			[]string{`PROXY="true" (the article's contract) and GENERIC_QUIT_ENDPOINTS="http://127.0.0.1:8200/agent/v1/quit" (scuttle's) both configure the sidecar`}},
		{"PROXY=true and two scuttle locations", []string{"PROXY=true", "ENVOY_ADMIN_API=http://127.0.0.1:15000", "ISTIO_QUIT_API=http://127.0.0.1:15020"},
			[]string{`ENVOY_ADMIN_API="http://127.0.0.1:15000" (scuttle's)`, `ISTIO_QUIT_API="http://127.0.0.1:15020" (scuttle's)`}},
		{"PROXY=false and ENVOY_ADMIN_API", []string{"PROXY=false", "ENVOY_ADMIN_API=http://127.0.0.1:15000"},
			[]string{`PROXY="false" (the article's contract) and ENVOY_ADMIN_API="http://127.0.0.1:15000" (scuttle's) contradict each other`}},
		{"PROXY=no and ISTIO_QUIT_API", []string{"PROXY=no", "ISTIO_QUIT_API=http://127.0.0.1:15020"},
			[]string{`PROXY="no" (the article's contract) and ISTIO_QUIT_API="http://127.0.0.1:15020" (scuttle's) contradict each other`}},
		{"PROXY=1 and GENERIC_QUIT_ENDPOINTS", []string{"PROXY=1", "GENERIC_QUIT_ENDPOINTS=http://127.0.0.1:1/q"},
			[]string{`PROXY="1" (the article's contract) and GENERIC_QUIT_ENDPOINTS="http://127.0.0.1:1/q" (scuttle's) contradict each other`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, nil, envOf(tt.env...))
			checkProblems(t, err, tt.want)
		})
	}
}

// notesOf returns the notes of a Config that parsed without error.
func notesOf(t *testing.T, args, env []string) []Note {
	t.Helper()
	cfg, err := Parse(ModeWait, args, envOf(env...))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg.Notes
}

// TestLocationNotes: what the precedence decided is said once, with the setting that won.
func TestLocationNotes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want Note
	}{
		{"--admin over scuttle", []string{"--admin", "http://127.0.0.1:1"}, []string{"ENVOY_ADMIN_API=http://127.0.0.1:15000", "ISTIO_QUIT_API=http://127.0.0.1:15020"}, Note{slog.LevelInfo,
			"the sidecars are set by --admin, so ENVOY_ADMIN_API, ISTIO_QUIT_API are ignored for waiting and quitting (flags and SIDESYNC_* variables come before the article's and scuttle's variables)"}},
		{"SIDESYNC_SIDECARS over the article", nil, []string{"SIDESYNC_SIDECARS=istio", "PROXY=true", "proxyEndpoint=http://127.0.0.1:1/"}, Note{slog.LevelInfo,
			"the sidecars are set by SIDESYNC_SIDECARS, so PROXY, proxyEndpoint are ignored for waiting and quitting (flags and SIDESYNC_* variables come before the article's and scuttle's variables)"}},
		{"--quit-url and --disabled over PROXY=false", []string{"--quit-url", "http://127.0.0.1:1/q", "--disabled"}, []string{"PROXY=false"}, Note{slog.LevelInfo,
			"the sidecars are set by --quit-url, --disabled, so PROXY is ignored for waiting and quitting (flags and SIDESYNC_* variables come before the article's and scuttle's variables)"}},
		{"--disabled=false over PROXY=false", []string{"--disabled=false"}, []string{"PROXY=false"}, Note{slog.LevelInfo,
			`PROXY="false" is not "true" (the article's contract), which means no sidecar, but --disabled "false" wins`}},
		{"article's variables without PROXY", nil, []string{"interval=5m", "maxRetries=x"}, Note{slog.LevelDebug,
			"not using interval, maxRetries: the article's contract is in use only with PROXY=true, and these names are left to the application"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := notesOf(t, tt.args, tt.env)
			if !containsNote(got, tt.want) {
				t.Errorf("notes %v do not include %v", got, tt.want)
			}
		})
	}
}

func containsNote(notes []Note, want Note) bool {
	for _, n := range notes {
		if n == want {
			return true
		}
	}
	return false
}

// TestArticleNeedsPROXYTrue: interval, maxRetries and proxyEndpoint are common names that
// applications use for their own purposes; unless PROXY is exactly "true" they are neither
// checked nor applied, and PROXY unset leaves sidesync as if the article did not exist.
func TestArticleNeedsPROXYTrue(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want *Config
	}{
		{"interval=5m without PROXY", []string{"interval=5m"}, defaults()},
		{"interval and maxRetries without PROXY", []string{"interval=1", "maxRetries=3"}, defaults()},
		{"any proxyEndpoint without PROXY", []string{"proxyEndpoint=/api/proxy"}, defaults()},
		{"PROXY=false leaves bad values alone", []string{"PROXY=false", "interval=abc", "maxRetries=-1", "proxyEndpoint=ftp://x"}, with(disabled)},
		{"PROXY=True leaves bad values alone", []string{"PROXY=True", "interval=1.5"}, with(disabled)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, nil, tt.env, tt.want)
			if _, set := envOf(tt.env...)("PROXY"); set {
				return
			}
			cfg, err := Parse(ModeWait, nil, envOf(tt.env...))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range cfg.Notes {
				if n.Level > slog.LevelDebug {
					t.Errorf("without PROXY, a note above debug level: %v", n)
				}
			}
		})
	}
}
