package archtest

import (
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/gendoc"
)

// wingRule is one of the rules on imports between the wings, ARCHITECTURE.md's and this test's:
// the document's list is rendered from wingRules. Packages are named by go list's patterns
// inside the module: "internal/pod/..." is internal/pod and every package under it. _test.go
// files are bound by none: a test may import what it tests, and the test helpers.
type wingRule struct {
	of string // the packages the rule is about
	// importedOnlyBy, for a rule on who imports them: the only packages that may.
	importedOnlyBy []string
	// importsNothingOf, for a rule on what they import: the packages they may not.
	importsNothingOf []string
}

// wingRules keep each wing's code out of the binaries it has no place in: pod code out of the
// cluster programs (and their Kubernetes libraries out of the pod binary), test helpers out of
// every shipped binary.
var wingRules = []wingRule{
	{of: "internal/pod/...", importedOnlyBy: []string{"cmd/sidesync", "sidecar/...", "internal/pod/...", "internal/testing/..."}},
	{of: "internal/cluster/...", importedOnlyBy: []string{"cmd/kubectl-sidesync", "cmd/sidesync-injector", "cmd/sidesync-rescuer", "cmd/sidesync-image",
		"internal/cluster/...", "internal/testing/..."}},
	{of: "internal/shared/...", importsNothingOf: []string{"internal/pod/...", "internal/cluster/..."}},
	{of: "internal/testing/...", importedOnlyBy: []string{"bench", "cmd/sidesync-emulator", "internal/testing/..."}},
	{of: "cmd/sidesync", importsNothingOf: []string{"internal/cluster/...", "internal/testing/..."}},
}

// match reports whether the package at path (inside the module) matches the pattern.
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	for _, p := range patterns {
		if match(p, path) {
			return true
		}
	}
	return false
}

// breaks reports whether the import breaks the rule.
func (r wingRule) breaks(e edge) bool {
	if e.test {
		return false
	}
	if r.importedOnlyBy != nil {
		return match(r.of, e.to) && !matchAny(r.importedOnlyBy, e.from)
	}
	return match(r.of, e.from) && matchAny(r.importsNothingOf, e.to)
}

// String is the rule as ARCHITECTURE.md states it.
func (r wingRule) String() string {
	if r.importedOnlyBy != nil {
		return code(r.of) + " is imported only by " + list(append(codes(r.importedOnlyBy), "tests (`_test.go` files)"), "and")
	}
	return code(r.of) + " imports nothing of " + list(codes(r.importsNothingOf), "or") + " (its tests may)"
}

func code(s string) string { return "`" + s + "`" }

func codes(items []string) []string {
	var out []string
	for _, s := range items {
		out = append(out, code(s))
	}
	return out
}

// list is "a, b and c" (with "and"), or "a".
func list(items []string, and string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + and + " " + items[len(items)-1]
}

// TestWings: no import of the module's code breaks a rule on the wings, each rule is about
// packages that exist (a rule left behind by a move would hold for nothing), and ARCHITECTURE.md
// states the rules as wingRules has them.
func TestWings(t *testing.T) {
	g := load(t)
	for _, r := range wingRules {
		for _, pattern := range slices.Concat([]string{r.of}, r.importedOnlyBy, r.importsNothingOf) {
			if !g.matchesAPackage(pattern) {
				t.Errorf("the rule %q names %s, which matches no package of the module", r, pattern)
			}
		}
	}
	for _, e := range g.edges() {
		for _, r := range wingRules {
			if r.breaks(e) {
				t.Errorf("%s imports %s, which breaks the rule: %s (ARCHITECTURE.md, \"The wings\")", e.from, e.to, r)
			}
		}
	}
	var b strings.Builder
	b.WriteString("<!-- generated from internal/testing/archtest's wingRules by `" + regenerate + "` -->\n")
	for _, r := range wingRules {
		b.WriteString("- " + r.String() + ".\n")
	}
	gendoc.Check(t, root+"/ARCHITECTURE.md", "wings", b.String(), regenerate, *update)
}

func (g *graph) matchesAPackage(pattern string) bool {
	for _, p := range g.pkgs {
		if match(pattern, p.path) {
			return true
		}
	}
	return false
}
