package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no URL", "sidecar ready waited=1s", "sidecar ready waited=1s"},
		{"URL without userinfo", "url=http://127.0.0.1:15000/ready", "url=http://127.0.0.1:15000/ready"},
		{"user and password", "url=http://user:pw@127.0.0.1:15000/ready", "url=http://xxxxx@127.0.0.1:15000/ready"},
		{"user only", "GET http://tok3n@localhost:9901/ready: dial", "GET http://xxxxx@localhost:9901/ready: dial"},
		{"at sign in the password", "http://u:p@ss@127.0.0.1/", "http://xxxxx@127.0.0.1/"},
		{"quoted", `--admin "http://u:secret@127.0.0.1:99999": port`, `--admin "http://xxxxx@127.0.0.1:99999": port`},
		{"two in a list", "http://a:b@h1/q,http://c:d@h2/q", "http://xxxxx@h1/q,http://xxxxx@h2/q"},
		{"two in a line", "x=http://a:b@h1/ y=tcp://c:d@h2:1", "x=http://xxxxx@h1/ y=tcp://xxxxx@h2:1"},
		{"upper-case scheme", "HTTP://A:B@H/", "HTTP://xxxxx@H/"},
		{"mail address is not a URL", "ask admin@example.com", "ask admin@example.com"},
		{"JSON string", `{"url":"http://u:p@h/"}`, `{"url":"http://xxxxx@h/"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStringEdges(t *testing.T) {
	tests := []struct{ in, want string }{
		{"://u:p@h", "://u:p@h"}, // no scheme: not a URL
		{"x ://u:p@h", "x ://u:p@h"},
		{"1http://u:p@h", "1http://xxxxx@h"}, // the scheme is "http" after a digit-led word; still a URL
		{"http://u:p@", "http://xxxxx@"},
		{"http://h/ then a@b", "http://h/ then a@b"},
		{"http://u:p@h\thttp://x@y", "http://xxxxx@h\thttp://xxxxx@y"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("url=http://user:pw@127.0.0.1:15000/ready")
	f.Add("http://a:b@h1/q,http://c:d@h2/q")
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if String(got) != got {
			t.Errorf("String is not idempotent on %q: %q then %q", s, got, String(got))
		}
		if !strings.Contains(s, "@") && got != s {
			t.Errorf("String(%q) = %q changed a string without @", s, got)
		}
	})
}
