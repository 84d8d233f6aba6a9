package catalog

import (
	"slices"
	"testing"
)

// TestRows: each row says how the sidecar is found or why it cannot be; a row that an
// orchestrator stops is found by its container and has no endpoints; no two rows claim the same
// mark or container name; every setting names exactly one place.
func TestRows(t *testing.T) {
	marks, names := map[string]string{}, map[string]string{}
	for _, e := range Entries() {
		detectable := len(e.Marks) > 0 || len(e.Containers) > 0
		switch {
		case e.Name == "" || e.Title == "" && !e.Generic() && e.Undetectable == "":
			t.Errorf("%q: a row needs a name and a title", e.Name)
		case e.Undetectable != "" && (detectable || len(e.Requests) > 0 || e.Container != "" || e.Reads != ""):
			t.Errorf("%s is undetectable, yet its row says how to detect it", e.Name)
		case e.Undetectable == "" && !detectable:
			t.Errorf("%s has neither a mark nor a container that reveals it: fill them in, or say why in Undetectable", e.Name)
		case len(e.Marks) == 0 && len(e.Requests) == 0 && e.Container != "":
			t.Errorf("%s has no mark, so its Container is never read", e.Name)
		case !e.IsProfile() && (e.Sidecar.Ready != nil || e.Sidecar.Quit != nil || len(e.Marks) > 0):
			t.Errorf("%s is stopped by its orchestrator, yet has endpoints or marks", e.Name)
		case e.IsProfile() && e.Sidecar.Name != e.Name:
			t.Errorf("%s: its profile is called %q", e.Name, e.Sidecar.Name)
		}
		for _, m := range e.Marks {
			if other, dup := marks[m.String()]; dup {
				t.Errorf("%s and %s share the mark %s", other, e.Name, m)
			}
			marks[m.String()] = e.Name
		}
		for _, c := range e.Containers {
			if other, dup := names[c.Name]; dup && c.Name != "" && c.Image == "" {
				t.Errorf("%s and %s are both revealed by a container named %s", other, e.Name, c.Name)
			}
			if c.Image == "" {
				names[c.Name] = e.Name
			}
		}
		for _, src := range slices.Concat(e.ReadyPort, e.QuitPort, switchSources(e.ReadySwitch), switchSources(e.QuitSwitch)) {
			if n := btoi(src.Annotation != "") + btoi(src.Flag != "") + btoi(src.Env != ""); n != 1 {
				t.Errorf("%s: the setting %+v names %d places, want 1", e.Name, src, n)
			}
		}
		for _, sw := range []*Switch{e.ReadySwitch, e.QuitSwitch} {
			if sw != nil && (sw.Rule == "" || sw.What == "" || sw.Fix == "" || len(sw.On) == 0 || len(sw.Unavailable) > 0 && sw.UnavailableFix == "") {
				t.Errorf("%s: a switch needs what it switches, its settings and its fix: %+v", e.Name, sw)
			}
		}
		for _, q := range e.Quitters {
			if q.Program == "" || len(q.Flags) == 0 {
				t.Errorf("%s: a quitter needs its program and the flags that make it quit: %+v", e.Name, q)
			}
		}
		if e.EnvoyAdminPort != 0 && e.Sidecar.Quit == nil {
			t.Errorf("%s: an Envoy admin port beside a quit endpoint, yet no quit call", e.Name)
		}
		for _, u := range endpointURLs(e) {
			if urlPort(u) == 0 {
				t.Errorf("%s: %s names no port, which the policies' CEL compares with", e.Name, u)
			}
		}
		if n := e.Native; len(n.Marks) > 0 && n.Honoured == "" {
			t.Errorf("%s: say which releases of its injector honour %s (Native.Honoured)", e.Name, n.Marks[0].YAML())
		}
		if cv := e.Convert; cv != nil && (cv.ProbePath == "" && cv.NoProbe == "" || cv.ProbePath != "" && e.Sidecar.Ready == nil || len(cv.Unprobed) > 0 && cv.UnprobedWhy == "") {
			t.Errorf("%s: a conversion needs a probe on its readiness check's port, or says why it has none: %+v", e.Name, cv)
		}
		if n := e.Native; n.ByDefault == Maybe && n.Why == "" {
			t.Errorf("%s: say why it may be native or not (Native.Why)", e.Name)
		}
		if got, ok := Lookup(e.Name); !ok || got.Name != e.Name {
			t.Errorf("Lookup(%q) = %q, %v", e.Name, got.Name, ok)
		}
	}
}

// endpointURLs are the URLs of a row's profile.
func endpointURLs(e Entry) []string {
	var out []string
	if e.Sidecar.Ready != nil && e.Sidecar.Ready.URL != "" {
		out = append(out, e.Sidecar.Ready.URL)
	}
	if e.Sidecar.Quit != nil && e.Sidecar.Quit.URL != "" {
		out = append(out, e.Sidecar.Quit.URL)
	}
	return out
}

func switchSources(s *Switch) []Source {
	if s == nil {
		return nil
	}
	return s.On
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProfileNames: every row is a profile but those an orchestrator stops, and a profile's
// value is a fresh copy each time.
func TestProfileNames(t *testing.T) {
	want := []string{"envoy", "osm", "istio", "linkerd", "consul", "kuma", "dapr", "cloudsql", "vault", "appmesh", "http", "tcp"}
	if got := ProfileNames(); !slices.Equal(got, want) {
		t.Errorf("ProfileNames() = %q, want %q", got, want)
	}
	if IsProfile("airflow-xcom") || !IsProfile("istio") {
		t.Error("IsProfile is wrong about airflow-xcom or istio")
	}
	a, _ := Profile("istio")
	a.Ready.URL = "http://127.0.0.1:1/changed"
	if b, _ := Profile("istio"); b.Ready.URL == a.Ready.URL {
		t.Error("a change to one profile value shows in the next")
	}
}

func TestFlagValue(t *testing.T) {
	tests := []struct {
		args    []string
		name    string
		boolean bool
		want    string
		set     bool
	}{
		{[]string{"--http-port", "9190"}, "http-port", false, "9190", true},
		{[]string{"--http-port=9190"}, "http-port", false, "9190", true},
		{[]string{"-http-port", "9190"}, "http-port", false, "9190", true},
		{[]string{"--http-port", "--quitquitquit"}, "http-port", false, "", true},
		{[]string{"--quitquitquit", "p:r:i"}, "quitquitquit", true, "", true},
		{[]string{"--quitquitquit=false"}, "quitquitquit", true, "false", true},
		{[]string{"p:r:i"}, "quitquitquit", true, "", false},
		{[]string{"--", "--quitquitquit"}, "quitquitquit", true, "", false},
		{[]string{"--quitquitquit-not"}, "quitquitquit", true, "", false},
	}
	for _, tt := range tests {
		got, set := FlagValue(tt.args, tt.name, tt.boolean)
		if got != tt.want || set != tt.set {
			t.Errorf("FlagValue(%q, %q) = %q, %v; want %q, %v", tt.args, tt.name, got, set, tt.want, tt.set)
		}
	}
}
