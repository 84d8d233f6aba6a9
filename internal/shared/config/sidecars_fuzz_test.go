package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// FuzzParseSidecars reads arbitrary --sidecar lists (the sidesync.io/sidecars annotation's
// syntax) with ParseSidecars. It must not panic and must be deterministic; every sidecar it
// returns is a known profile with a loopback http:// quit URL and valid check URLs; and the
// --sidecar flag agrees with it: a value the flag accepts gives the same profiles, in order.
// (The round trip through detect.Spec, the writer of this syntax, is FuzzSpec in detect.)
func FuzzParseSidecars(f *testing.F) {
	for _, s := range []string{
		"istio", "istio,cloudsql:ready-port=9190,quit-port=9191", "cloudsql:ready-port=9190,quit-port=9191,native=true",
		"linkerd:native=true,startup-probe=true", "cloudsql:ready=none", "tcp:ready=tcp://127.0.0.1:5432,name=db",
		"tcp:ready=tcp://[::1]:5432", "http:ready=http://localhost/health", "http:quit=http://[::1]:1/q",
		"http:method=put,status=204,ready=http://127.0.0.1:8080/health,quit=http://127.0.0.1:8080/quit,name=app",
		"envoy:ready=http://127.0.0.1:19000,quit=http://127.0.0.1:19000/quitquitquit", "linkerd:quit=none",
		"istio:prot=1", "http:ready=ftp://x", "istio:native=maybe", "istio:host=10.0.0.3", "istio:host=::1",
		"port=1,istio", "cloudsql:port=9090", "consul:port=1", "dapr", " Istio , linkerd:port=4192 ", "nope:x=y",
		"http:ready=127.0.0.1:8080/health", "tcp:ready=http:127.0.0.1:5432", "istio:host=127.0.0.1:80",
		"envoy:ready=http://127.0.0.1:1/", "vault:quit-port=8200", "istio:name=a b", "http:ready=http://u:p@127.0.0.1/",
	} {
		f.Add(s)
	}
	env := func(name string) (string, bool) {
		if name == "DAPR_API_TOKEN" {
			return "token", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, value string) {
		parsed, err := ParseSidecars(value, env)
		again, errAgain := ParseSidecars(value, env)
		if !reflect.DeepEqual(parsed, again) || !reflect.DeepEqual(err, errAgain) {
			t.Fatalf("ParseSidecars(%q) is not deterministic", value)
		}
		for _, p := range parsed {
			checkParsedSidecar(t, value, p)
		}
		var specs []spec
		if (specValue{&specs}).Set(value) != nil {
			return
		}
		if len(specs) < len(parsed) {
			t.Fatalf("--sidecar %q: %d specs, ParseSidecars found %d sidecars", value, len(specs), len(parsed))
		}
		if err == nil {
			for i, p := range parsed {
				if specs[i].profile != p.Profile {
					t.Fatalf("--sidecar %q: spec %d is %s, ParseSidecars says %s", value, i, specs[i].profile, p.Profile)
				}
			}
		}
	})
}

func checkParsedSidecar(t *testing.T, value string, p ParsedSidecar) {
	t.Helper()
	if !catalog.IsProfile(p.Profile) {
		t.Fatalf("ParseSidecars(%q): unknown profile %q", value, p.Profile)
	}
	sc := p.Sidecar
	if sc.Name == "" || strings.ContainsAny(sc.Name, " \t=,:") {
		t.Fatalf("ParseSidecars(%q): name %q", value, sc.Name)
	}
	if sc.Quit != nil {
		if !IsLoopback(sc.Quit.URL) || !strings.HasPrefix(sc.Quit.URL, "http://") {
			t.Fatalf("ParseSidecars(%q): quit URL %q", value, sc.Quit.URL)
		}
		if sc.Quit.Method != "" && strings.ContainsAny(sc.Quit.Method, " \t\r\n") {
			t.Fatalf("ParseSidecars(%q): method %q", value, sc.Quit.Method)
		}
	}
	if sc.Ready == nil {
		return
	}
	switch sc.Ready.Kind {
	case sidecar.TCP:
		if addr, err := parseTCP(sc.Ready.URL); err != nil || addr != sc.Ready.URL {
			t.Fatalf("ParseSidecars(%q): tcp check %q reads as %q, %v", value, sc.Ready.URL, addr, err)
		}
	default:
		if _, err := parseURL(sc.Ready.URL); err != nil {
			t.Fatalf("ParseSidecars(%q): check URL %q: %v", value, sc.Ready.URL, err)
		}
	}
}
