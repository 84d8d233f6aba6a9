package config

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/sidecar"
)

// TestPlatformCommandsTakeTheCommandsPlace: with platform commands, the wrapper needs no command
// after "--"; with one there, they are ignored, and a DEBUG note says so.
func TestPlatformCommandsTakeTheCommandsPlace(t *testing.T) {
	env := envOf(`SIDESYNC_PLATFORM_COMMANDS={"linux/amd64": ["/app"], "linux/arm/v7": ["/app-arm", "-x"]}`)
	cfg, err := Parse(ModeRun, []string{"--disabled", "--"}, env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := map[string][]string{"linux/amd64": {"/app"}, "linux/arm/v7": {"/app-arm", "-x"}}
	if diff := cmp.Diff(want, cfg.PlatformCommands); diff != "" || len(cfg.Command) != 0 || len(cfg.Notes) != 0 {
		t.Errorf("platform commands (-want +got):\n%s\ncommand %q, notes %v", diff, cfg.Command, cfg.Notes)
	}
	cfg, err = Parse(ModeRun, []string{"--disabled", "--", "true"}, env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	wantNote := Note{Level: slog.LevelDebug, Msg: "SIDESYNC_PLATFORM_COMMANDS is ignored: a command follows --"}
	if diff := cmp.Diff([]Note{wantNote}, cfg.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

// TestParseSidecars: the annotation's syntax is --sidecar's; valid entries are kept beside
// the problems of the others, and each keeps its profile even when renamed.
func TestParseSidecars(t *testing.T) {
	moved := profile(t, "cloudsql").WithPorts(9190, 9191)
	moved.Native, moved.StartupProbe = true, true
	db := sidecar.Sidecar{Name: "db", Ready: &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://127.0.0.1:5432"}}
	got, err := ParseSidecars("istio, cloudsql:ready-port=9190,quit-port=9191,native=true,startup-probe=true,tcp:ready=tcp://127.0.0.1:5432,name=db", envOf())
	want := []ParsedSidecar{{"istio", profile(t, "istio")}, {"cloudsql", moved}, {"tcp", db}}
	if diff := cmp.Diff(want, got); diff != "" || err != nil {
		t.Errorf("ParseSidecars (-want +got):\n%s\nerr %v", diff, err)
	}

	got, err = ParseSidecars("port=1,bogus,linkerd:native=maybe,dapr,http:quit=http://10.0.0.1/quit,kuma:port,tcp:ready=tcp://db.example:5432", envOf())
	if diff := cmp.Diff([]ParsedSidecar{{"dapr", profile(t, "dapr")}}, got); diff != "" {
		t.Errorf("valid entries (-want +got):\n%s", diff)
	}
	for _, problem := range []string{`"port=1": a setting before any sidecar name`, `unknown sidecar "bogus"`,
		`linkerd: native="maybe": not a boolean`, "http: quit URL http://10.0.0.1/quit is not on a loopback address", `"port": settings are KEY=VALUE`,
		"tcp: readiness URL tcp://db.example:5432 is not on a loopback address"} {
		if err == nil || !strings.Contains(err.Error(), problem) {
			t.Errorf("error %v does not mention %q", err, problem)
		}
	}
}

// TestParsePlatformCommands: the parser that the wrapper and `kubectl sidesync inject` share
// refuses keys that are not lower-case os/arch[/variant] and empty commands.
func TestParsePlatformCommands(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string][]string
		wantErr  string
	}{
		{"two platforms", `{"linux/amd64":["/app"],"linux/arm64/v8":["/app-arm64","-x"]}`,
			map[string][]string{"linux/amd64": {"/app"}, "linux/arm64/v8": {"/app-arm64", "-x"}}, ""},
		{"upper-case architecture", `{"linux/AMD64":["/app"]}`, nil, `"linux/AMD64" is not a platform`},
		{"dash in a variant", `{"linux/arm64/v8-x":["/app"]}`, nil, `"linux/arm64/v8-x" is not a platform`},
		{"four parts", `{"linux/arm/v7/x":["/app"]}`, nil, `"linux/arm/v7/x" is not a platform`},
		{"null command", `{"linux/amd64":null}`, nil, `"linux/amd64": the command is empty`},
		{"empty program", `{"linux/amd64":[""]}`, nil, `"linux/amd64": the command is empty`},
		{"null", `null`, nil, "not a JSON object"},
		{"trailing data", `{"linux/amd64":["/app"]} {}`, nil, "something follows the object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePlatformCommands(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePlatformCommands(%s) (-want +got):\n%s", tt.in, diff)
			}
			if (tt.wantErr == "") != (err == nil) || !strings.Contains(fmt.Sprint(err), tt.wantErr) {
				t.Errorf("ParsePlatformCommands(%s): error %v, want one saying %q", tt.in, err, tt.wantErr)
			}
		})
	}
}

// TestParsePlatformCommandsSameMessage: with several bad platforms, the message names the same
// one every time.
func TestParsePlatformCommandsSameMessage(t *testing.T) {
	const in = `{"linux/s390x":1,"linux/amd64":2,"linux/arm64":3}`
	_, want := ParsePlatformCommands(in)
	if want == nil || !strings.Contains(want.Error(), `"linux/amd64"`) {
		t.Fatalf("ParsePlatformCommands(%s) = %v, want the error to name linux/amd64", in, want)
	}
	for range 50 {
		if _, err := ParsePlatformCommands(in); err.Error() != want.Error() {
			t.Fatalf("ParsePlatformCommands(%s):\n%v\nthen\n%v", in, want, err)
		}
	}
}
