package kubeversion

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int{"1.33": 33, "v1.33.13": 33, "1.35.2-gke.1200": 35, "v1.34.0+k3s1": 34, " 1.37 ": 37} {
		v, err := Parse(in)
		if err != nil || v.Minor != want {
			t.Errorf("Parse(%q) = %v, %v; want 1.%d", in, v, err, want)
		}
	}
	for _, in := range []string{"", "1", "2.0", "1.x", "v1..2", "1.33.1.1", "one.33", "1.-3", "1.99999"} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), "want 1.MINOR") {
			t.Errorf("Parse(%q): %v, want an error", in, err)
		}
	}
}

func TestFromServer(t *testing.T) {
	if v, err := FromServer("1", "33+"); err != nil || v != (Version{33}) {
		t.Errorf("FromServer(1, 33+) = %v, %v", v, err)
	}
	for _, mm := range [][2]string{{"2", "1"}, {"1", ""}, {"1", "x"}} {
		if _, err := FromServer(mm[0], mm[1]); err == nil {
			t.Errorf("FromServer(%q, %q): no error", mm[0], mm[1])
		}
	}
}

func TestCheck(t *testing.T) {
	if err := ImageVolume.Check(Version{35}); err != nil {
		t.Error(err)
	}
	err := ImageVolume.Check(Version{33})
	if err == nil || err.Error() != "image volumes need Kubernetes 1.35 or newer; this is for 1.33" {
		t.Errorf("Check(1.33) = %v", err)
	}
	if !NativeSidecars.In(Oldest) {
		t.Errorf("the oldest supported version %s lacks native sidecars", Oldest)
	}
	if got := Needs(); got != Oldest {
		t.Errorf("Needs() = %s, want %s", got, Oldest)
	}
	if got := Needs(NativeSidecars, ImageVolume, RestartRules); got != (Version{35}) {
		t.Errorf("Needs(...) = %s, want 1.35", got)
	}
	if got := Oldest.Constraint(); got != ">=1.33.0-0" {
		t.Errorf("Constraint = %q", got)
	}
}
