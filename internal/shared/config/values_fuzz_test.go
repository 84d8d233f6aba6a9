package config

import (
	"flag"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/redact"
)

// fuzzFlagNames are the flags FuzzFlagValue drives, in a fixed order so that a corpus entry's
// index keeps its meaning.
func fuzzFlagNames() []string {
	var names []string
	newFlagSet(defaultConfig(), new(inputs)).VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// FuzzFlagValue sets one flag's value (every flag.Value type of values.go and kube_values.go:
// durations, counts, booleans, choices, URLs, URL lists, --sidecar, restart policy, restart
// rules, platform commands) from arbitrary text. It must not panic, and a value that is
// accepted is a fixed point of String: String's text is accepted by a fresh flag and gives the
// same String (--sidecar's String lists the profiles only, so it is checked for acceptance).
func FuzzFlagValue(f *testing.F) {
	names := fuzzFlagNames()
	seeds := map[string][]string{
		"timeout":           {"5s", "0", "1.5h", "-1s", "5", " 250ms ", "9223372036854775807ns", "1e3s"},
		"max-retries":       {"3", "-1", "0", "99999999999999999999", " 7 "},
		"no-wait":           {"true", "F", "maybe", "1"},
		"backoff":           {"Polly", "exponential", "linear"},
		"on-timeout":        {"start-anyway", "FAIL", "never"},
		"log-level":         {"WARN", "trace"},
		"admin":             {"http://127.0.0.1:15000", "http://[::1]:9901/", "HTTP://u:p@localhost:1/x?y#z", "127.0.0.1:9901", "http://127.0.0.1:", "http://:1", "http://[::1", "http://a b/"},
		"quit-url":          {"http://127.0.0.1:1/a,http://10.0.0.1/b", "http://x/,,", "http://127.0.0.1:1/a,127.0.0.1:2/b"},
		"sidecar":           {"istio", "istio,cloudsql:ready-port=9190,quit-port=9191", "port=1", "nope", "http:ready"},
		"restart-policy":    {"OnFailure", "always", " never ", "", "Sometimes"},
		"restart-rules":     {`[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`, "[]", "null", `[{"action":"Restart"}]`, `[] []`, `[{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":[0,1]}}]`},
		"platform-commands": {`{"linux/amd64":["/app"],"linux/arm64/v8":["/app-arm64","--serve"]}`, "null", "{}", `{"linux":["/x"]}`, `{"linux/amd64":[]}`, `{"linux/amd64":[""]}`},
		"termination-log":   {"", "/dev/termination-log"},
	}
	for i, name := range names {
		for _, s := range seeds[name] {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		name := names[int(which)%len(names)]
		fs := newFlagSet(defaultConfig(), new(inputs))
		v := fs.Lookup(name).Value
		if err := v.Set(value); err != nil {
			if err.Error() == "" {
				t.Fatalf("--%s %q: empty error", name, value)
			}
			return
		}
		s := v.String()
		fresh := newFlagSet(defaultConfig(), new(inputs)).Lookup(name).Value
		if err := fresh.Set(s); err != nil {
			t.Fatalf("--%s %q is accepted, but its String %q is not: %v", name, value, s, err)
		}
		if got := fresh.String(); got != s && name != flagSidecar {
			t.Fatalf("--%s %q: String %q, which reads back as %q", name, value, s, got)
		}
	})
}

// FuzzAddress drives the address parsers behind the URL flags and the tcp:// readiness check:
// parseURL, parseTCP, suggestHTTP, IsLoopback, maskUserinfo. None may panic; an accepted URL's
// String is accepted again and is a fixed point (as the Config keeps it); a canonical tcp://
// address re-reads as itself; a suggested fix is itself accepted; a masked value keeps no
// password of an address without a scheme.
func FuzzAddress(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:15000", "http://[::1]:9901/ready", "HTTP://u:p@localhost:1/x?y#z", "http://127.0.0.1:",
		"http://127.0.0.1:abc", "http://:15000", "127.0.0.1:9901", "http:127.0.0.1:9901", "localhost:15021/healthz/ready",
		"http://127.0.0.1:65536/", "ftp://x", "tcp://127.0.0.1:5432", "tcp://[::1]:5432", "tcp://db:0", "tcp://me@127.0.0.1:5432",
		"tcp://127.0.0.1:5432/db", "tcp://127.0.0.1", "http://[fe80::1%25eth0]:1/", "http://a%20b/", "user:pw@127.0.0.1:9901",
		"http://127.0.0.2/quit", "http://[::ffff:127.0.0.1]/", "http://LOCALHOST./",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		IsLoopback(s)
		if u, err := parseURL(s); err == nil {
			again, err := parseURL(u.String())
			if err != nil {
				t.Fatalf("parseURL(%q) = %q, which parseURL refuses: %v", s, u, err)
			}
			if again.String() != u.String() {
				t.Fatalf("parseURL(%q) = %q, which reads back as %q", s, u, again)
			}
			if IsLoopback(u.String()) != IsLoopback(again.String()) {
				t.Fatalf("IsLoopback differs for %q and %q", u, again)
			}
		}
		if addr, err := parseTCP(s); err == nil {
			if again, err := parseTCP(addr); err != nil || again != addr {
				t.Fatalf("parseTCP(%q) = %q, which reads back as %q, %v", s, addr, again, err)
			}
		}
		if fix, ok := suggestHTTP(s); ok {
			if _, err := parseURL(fix); err != nil {
				t.Fatalf("suggestHTTP(%q) = %q, which parseURL refuses: %v", s, fix, err)
			}
		}
		checkMasked(t, s)
	})
}

// checkMasked checks that maskUserinfo leaves no password of a scheme-less user:password@
// address in the text, in a value of one address.
func checkMasked(t *testing.T, s string) {
	t.Helper()
	out := maskUserinfo(s)
	if strings.ContainsAny(s, ", \t\"'") || strings.Contains(s, "://") {
		return
	}
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return
	}
	if want := redact.Mask + s[at:]; out != want {
		t.Fatalf("maskUserinfo(%q) = %q, want %q", s, out, want)
	}
}
