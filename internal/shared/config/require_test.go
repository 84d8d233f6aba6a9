package config

import (
	"bytes"
	"strings"
	"testing"
)

// TestRequireSidecar: the flag, its variable, its help, and its conflict with --disabled.
func TestRequireSidecar(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"--require-sidecar"}, nil, true},
		{"variable", nil, []string{"SIDESYNC_REQUIRE_SIDECAR=true"}, true},
		{"flag beats variable", []string{"--require-sidecar=false"}, []string{"SIDESYNC_REQUIRE_SIDECAR=true"}, false},
		{"false with --disabled", []string{"--require-sidecar=false", "--disabled"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := cfg.RequireSidecar; got != tt.want {
				t.Errorf("RequireSidecar: got %v, want %v", got, tt.want)
			}
		})
	}
	var b bytes.Buffer
	PrintFlags(&b)
	want := "  --require-sidecar\n      fail (exit 69, without running the command) when sidecar detection could not look (API refused, TLS failure, timeout) or found nothing; without it sidesync warns and runs the command [SIDESYNC_REQUIRE_SIDECAR]\n"
	if got := b.String(); !strings.Contains(got, want) {
		t.Errorf("--help lacks\n%s\ngot:\n%s", want, got)
	}
}

func TestRequireSidecarConflicts(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"--disabled", []string{"--require-sidecar", "--disabled"}, nil, "--require-sidecar and --disabled contradict each other: --require-sidecar fails when no sidecar is found, and --disabled means no sidecar; drop one"},
		{"variables", nil, []string{"SIDESYNC_REQUIRE_SIDECAR=1", "SIDESYNC_DISABLED=true"}, "SIDESYNC_REQUIRE_SIDECAR and SIDESYNC_DISABLED contradict each other"},
		{"PROXY=false", []string{"--require-sidecar"}, []string{"PROXY=false"}, `--require-sidecar and PROXY="false" contradict each other`},
		{"scuttle without ENVOY_ADMIN_API", []string{"--require-sidecar"}, []string{"SCUTTLE_LOGGING=true"}, "--require-sidecar and scuttle's variables without ENVOY_ADMIN_API contradict each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			checkProblems(t, err, []string{tt.want})
		})
	}
}
