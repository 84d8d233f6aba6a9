package config

import (
	"errors"
	"strings"
	"testing"
)

// TestNoCredentialsInMessages: no problem and no note shows a URL's user or password, whether
// the value is echoed, suggested back corrected, or named in a note.
func TestNoCredentialsInMessages(t *testing.T) {
	const secret = "s3cret"
	tests := []struct {
		name    string
		args    []string
		env     []string
		problem bool // a usage error is expected; otherwise the notes are checked
	}{
		{"bad port", []string{"--admin", "http://user:s3cret@127.0.0.1:99999"}, nil, true},
		{"empty port, suggested back", []string{"--admin", "http://user:s3cret@127.0.0.1:"}, nil, true},
		{"bare address, suggested back", []string{"--admin", "user:s3cret@127.0.0.1:9901"}, nil, true},
		{"remote quit", []string{"--admin", "http://user:s3cret@10.0.0.1:15000"}, nil, true},
		{"spec value", []string{"--sidecar", "http:ready=user:s3cret@127.0.0.1:1/x"}, nil, true},
		{"tcp with a user", []string{"--sidecar", "tcp:ready=tcp://user:s3cret@127.0.0.1:1"}, nil, true},
		{"list", nil, []string{"SIDESYNC_QUIT_URL=http://u:s3cret@127.0.0.1:1/a,u:s3cret@127.0.0.1:2/b"}, true},
		{"contradiction", nil, []string{"PROXY=true", "ENVOY_ADMIN_API=http://u:s3cret@127.0.0.1:15000"}, true},
		{"scuttle remote quit", nil, []string{"GENERIC_QUIT_ENDPOINTS=http://u:s3cret@10.0.0.1:1/q"}, true},
		{"ENVOY_ADMIN_API not loopback", nil, []string{"ENVOY_ADMIN_API=http://u:s3cret@10.0.0.1:15000"}, false},
		{"ignored location", []string{"--admin", "http://u:s3cret@127.0.0.1:1"}, []string{"ENVOY_ADMIN_API=http://u:s3cret@127.0.0.1:15000"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(ModeWait, tt.args, envOf(tt.env...))
			var ue *UsageError
			if got := errors.As(err, &ue); got != tt.problem {
				t.Fatalf("Parse: got %v, want a usage error: %v", err, tt.problem)
			}
			var text []string
			if ue != nil {
				for _, p := range ue.Problems {
					text = append(text, p.Error())
				}
			} else {
				for _, n := range cfg.Notes {
					text = append(text, n.Msg)
				}
			}
			all := strings.Join(text, "\n")
			if all == "" || strings.Contains(all, secret) {
				t.Errorf("messages show the password (or say nothing):\n%s", all)
			}
		})
	}
}

// TestCredentialsKept: the Config keeps the user and password; the HTTP layer needs them.
func TestCredentialsKept(t *testing.T) {
	cfg, err := Parse(ModeWait, []string{"--admin", "http://u:s3cret@127.0.0.1:15000"}, envOf())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := cfg.Sidecars[0].Ready.URL; got != "http://u:s3cret@127.0.0.1:15000" {
		t.Errorf("ready URL: got %q, want the userinfo kept", got)
	}
}
