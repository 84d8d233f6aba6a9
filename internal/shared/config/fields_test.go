package config

import (
	"bytes"
	"flag"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/restart"
	"github.com/sidesync/sidesync/sidecar"
)

// flagRun is one parse: its flags and what they change from defaults.
type flagRun struct {
	name string
	args []string
	want func(*Config)
}

// everyFlag sets every flag to a value other than its default. --disabled cannot share a run
// with --require-sidecar (they contradict each other) and hides the sidecars, and --ready-url
// replaces what --admin's readiness check would be (its run, with a remote URL, has
// --allow-remote-ready), so each has a run of its own.
var everyFlag = []flagRun{
	{"all but --disabled and --ready-url", []string{
		"--sidecar", "istio", "--admin", "http://127.0.0.1:19000", "--quit-url", "http://10.0.0.1:1/q", "--allow-remote-quit",
		"--require-sidecar", "--no-wait", "--backoff", "polly", "--interval", "1s", "--max-interval", "15s", "--fast-first",
		"--timeout", "5s", "--max-retries", "5", "--probe-timeout", "3s", "--on-timeout", "start-anyway",
		"--quit", "never", "--quit-timeout", "30s", "--quit-request-timeout", "7s", "--quit-retries", "1",
		"--signal-group", "--subreaper", "--log-format", "json", "--log-level", "debug",
		"--pod-info", "/podinfo", "--kube-api=false", "--service-account-dir", "/sa", "--termination-log=",
		"--restart-policy", "OnFailure", "--restart-rules", `[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`,
		"--platform-commands", `{"linux/amd64": ["/app", "-v"], "linux/arm64/v8": ["/app-arm64"]}`,
		"--peers", "main, wait,,main", "--state-dir", "/state", "--container", "wait", "--peer-start-timeout", "5s",
	}, func(c *Config) {
		istio, _ := catalog.Profile("istio")
		sidecars(sidecar.Sidecar{
			Name: "envoy", Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:19000"},
			Quit: &sidecar.Call{URL: "http://10.0.0.1:1/q"},
		}, istio)(c)
		c.RequireSidecar, c.Wait = true, false
		c.BackoffPolicy = BackoffPolicy{Kind: BackoffPolly, Interval: time.Second, MaxInterval: 15 * time.Second, FastFirst: true, MaxRetries: 5}
		c.Backoff = sidecar.Limit(sidecar.Cap(sidecar.DecorrelatedJitter{Median: time.Second, FastFirst: true}, 15*time.Second), 5)
		c.Timeout, c.ProbeTimeout, c.StartAnyway = 5*time.Second, 3*time.Second, true
		c.QuitPolicy, c.QuitTimeout, c.QuitRequestTimeout, c.QuitRetries = QuitNever, 30*time.Second, 7*time.Second, 1
		c.SignalGroup, c.Subreaper, c.LogFormat, c.LogLevel = true, true, "json", slog.LevelDebug
		c.PodInfoDir, c.KubeAPI, c.ServiceAccountDir, c.TerminationLog = "/podinfo", false, "/sa", ""
		c.Restart = restart.Spec{Policy: restart.OnFailure, Rules: []restart.Rule{{Action: restart.ActionRestart,
			ExitCodes: &restart.ExitCodes{Operator: restart.OpIn, Values: []int32{42}}}}}
		c.PlatformCommands = map[string][]string{"linux/amd64": {"/app", "-v"}, "linux/arm64/v8": {"/app-arm64"}}
		c.Peers, c.StateDir, c.Container, c.PeerStartTimeout = []string{"main", "wait"}, "/state", "wait", 5*time.Second
	}},
	{"--ready-url", []string{"--ready-url", "http://10.0.0.2:15021/healthz/ready", "--allow-remote-ready"}, sidecars(sidecar.Sidecar{
		Name: "sidecar", Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://10.0.0.2:15021/healthz/ready"},
	})},
	{"--disabled", []string{"--disabled"}, disabled},
}

// TestEveryFlag compares the whole Config that every flag set gives with the one expected.
func TestEveryFlag(t *testing.T) {
	for _, tt := range everyFlag {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, tt.args, nil, with(tt.want))
		})
	}
}

// notFlags are the fields that no flag sets: the subcommand, the arguments after the flags, and
// the log messages of parsing.
var notFlags = []string{"Mode", "Command", "Notes"}

// TestEveryFieldSetByAFlag fails when a field of Config (or of a struct in it) keeps its default
// whatever the flags say, and when a flag is missing from everyFlag: a setting that is parsed but
// never reaches the Config, or a new field or flag that the tests do not cover.
func TestEveryFieldSetByAFlag(t *testing.T) {
	base, err := Parse(ModeWait, nil, envOf())
	if err != nil {
		t.Fatal(err)
	}
	var set []reflect.Value
	for _, tt := range everyFlag {
		cfg, err := Parse(ModeWait, tt.args, envOf())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		set = append(set, reflect.ValueOf(*cfg))
	}
	for _, path := range fieldPaths(reflect.TypeFor[Config](), nil) {
		if slices.Contains(notFlags, path[0].Name) {
			continue
		}
		changed := slices.ContainsFunc(set, func(v reflect.Value) bool {
			return !reflect.DeepEqual(fieldAt(v, path), fieldAt(reflect.ValueOf(*base), path))
		})
		if !changed {
			t.Errorf("Config.%s keeps its default whatever the flags say", pathName(path))
		}
	}
	newFlagSet(defaultConfig(), new(inputs)).VisitAll(func(f *flag.Flag) {
		given := func(a string) bool { return a == "--"+f.Name || strings.HasPrefix(a, "--"+f.Name+"=") }
		if !slices.ContainsFunc(everyFlag, func(r flagRun) bool { return slices.ContainsFunc(r.args, given) }) {
			t.Errorf("--%s is in no run of everyFlag", f.Name)
		}
	})
}

// fieldPaths lists the leaves of struct type t: its fields, and the fields of its struct fields.
func fieldPaths(t reflect.Type, prefix []reflect.StructField) [][]reflect.StructField {
	var out [][]reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		path := append(slices.Clone(prefix), f)
		if f.Type.Kind() == reflect.Struct {
			out = append(out, fieldPaths(f.Type, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

func fieldAt(v reflect.Value, path []reflect.StructField) any {
	for _, f := range path {
		v = v.FieldByIndex(f.Index)
	}
	return v.Interface()
}

func pathName(path []reflect.StructField) string {
	var names []string
	for _, f := range path {
		names = append(names, f.Name)
	}
	return strings.Join(names, ".")
}

// TestBackoffPolicy: the policy as given becomes exactly this Backoff.
func TestBackoffPolicy(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		in   BackoffPolicy
		want sidecar.Backoff
	}{
		{"constant", BackoffPolicy{Kind: BackoffConstant, Interval: 20 * ms, MaxRetries: NoRetryLimit}, sidecar.Constant{Delay: 20 * ms}},
		{"constant capped", BackoffPolicy{Kind: BackoffConstant, Interval: 20 * ms, MaxInterval: 5 * ms, MaxRetries: NoRetryLimit},
			sidecar.Cap(sidecar.Constant{Delay: 20 * ms}, 5*ms)},
		{"exponential limited", BackoffPolicy{Kind: BackoffExponential, Interval: 10 * ms, MaxRetries: 4},
			sidecar.Limit(sidecar.Exponential{Initial: 10 * ms, Factor: 2}, 4)},
		{"polly, the article's", BackoffPolicy{Kind: BackoffPolly, Interval: time.Second, MaxRetries: 3}, sidecar.Polly(time.Second, 3, false)},
		{"polly fast first, capped then limited", BackoffPolicy{Kind: BackoffPolly, Interval: time.Second, MaxInterval: time.Minute, FastFirst: true, MaxRetries: 0},
			sidecar.Limit(sidecar.Cap(sidecar.DecorrelatedJitter{Median: time.Second, FastFirst: true}, time.Minute), 0)},
		{"fast first is polly's only", BackoffPolicy{Kind: BackoffConstant, Interval: ms, FastFirst: true, MaxRetries: NoRetryLimit}, sidecar.Constant{Delay: ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.in.Backoff(), cmpConfig...); diff != "" {
				t.Errorf("Backoff (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHelpDefaults: --help shows each flag's default, taken from defaultConfig.
func TestHelpDefaults(t *testing.T) {
	want := map[string]string{
		"backoff": "constant", "interval": "20ms", "max-interval": "0s", "timeout": "2m0s", "probe-timeout": "1s",
		"on-timeout": "fail", "quit": "always", "quit-timeout": "10s", "quit-request-timeout": "2s", "quit-retries": "3",
		"log-format": "text", "log-level": "info", "pod-info": "/etc/podinfo",
		"service-account-dir": "/var/run/secrets/kubernetes.io/serviceaccount", "termination-log": "/dev/termination-log",
		"peer-start-timeout": "2m0s",
	}
	var b bytes.Buffer
	PrintFlags(&b)
	entry := regexp.MustCompile(`(?m)^  --([a-z-]+).*\n      .*?(?:\(default ([^)]*)\) )?\[SIDESYNC_`)
	got := make(map[string]string)
	for _, m := range entry.FindAllStringSubmatch(b.String(), -1) {
		if m[2] != "" {
			got[m[1]] = m[2]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults in --help (-want +got):\n%s\n%s", diff, b.String())
	}
}
