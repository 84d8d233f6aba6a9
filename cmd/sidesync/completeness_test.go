package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/testing/emulator"
)

// withoutEmulator lists the profiles that have no emulator of their own, and why. Every other
// profile must have one.
func withoutEmulator() map[string]string {
	return map[string]string{
		"http": "generic: any HTTP server that answers its URLs is one (its case points it at an emulated Envoy)",
		"tcp":  "generic: any listening port is one (its case points it at an emulated Envoy)",
	}
}

// TestProfilesComplete: a profile of the catalog (internal/shared/catalog) is complete only with the
// places outside its row that know about it: its documentation (notes, and a row in each of the
// README's generated tables), its emulator (internal/testing/emulator, Profiles) unless withoutEmulator
// says why not, and its end-to-end case (profileCases). Everything else about a sidecar is in
// its catalog row.
func TestProfilesComplete(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	profileRows, detectionRows := section(t, string(readme), "profiles"), section(t, string(readme), "detection")
	cases, exempt := profileCases(), withoutEmulator()
	names := catalog.ProfileNames()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if e, ok := catalog.Lookup(name); !ok || e.Notes == "" {
				t.Errorf("no notes: give the row of %s in internal/shared/catalog its notes", name)
			}
			row := "\n| `" + name + "` |"
			if !strings.Contains(profileRows, row) || !strings.Contains(detectionRows, row) {
				t.Errorf("README.md lacks a row for %s: run go generate ./internal/shared/catalog", name)
			}
			_, hasEmulator := emulator.LookupProfile(name)
			switch why, ok := exempt[name]; {
			case ok && hasEmulator:
				t.Errorf("%s has an emulator now, yet withoutEmulator says %q: remove it from there", name, why)
			case !ok && !hasEmulator:
				t.Errorf("no emulator: add a %s profile to internal/testing/emulator (Profiles), or say in withoutEmulator why it needs none", name)
			}
			if _, ok := cases[name]; !ok {
				t.Errorf("no end-to-end case: add %s to profileCases in cmd/sidesync/profiles_test.go", name)
			}
		})
	}
	for name := range cases {
		if !slices.Contains(names, name) {
			t.Errorf("profileCases has a case for %s, which is no profile", name)
		}
	}
	for name := range exempt {
		if !slices.Contains(names, name) {
			t.Errorf("withoutEmulator names %s, which is no profile", name)
		}
	}
}

// section is the part of the README between the markers of a generated table.
func section(t *testing.T, readme, name string) string {
	t.Helper()
	_, rest, ok1 := strings.Cut(readme, "<!-- "+name+":begin -->")
	s, _, ok2 := strings.Cut(rest, "<!-- "+name+":end -->")
	if !ok1 || !ok2 {
		t.Fatalf("README.md lacks the markers of its generated %s table", name)
	}
	return s
}
