package lint

import (
	"flag"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/gendoc"
)

var update = flag.Bool("update", false, "rewrite README.md's generated table of lint rules")

// TestREADMERules: the README's table of lint rules is Rules rendered from the table (go generate
// ./internal/cluster/lint), so that a rule added or changed shows there.
func TestREADMERules(t *testing.T) {
	var b strings.Builder
	b.WriteString("<!-- generated from internal/cluster/lint by `go generate ./internal/cluster/lint`: edit its rule table (rules.go) -->\n")
	b.WriteString("| rule | severity | finds |\n| --- | --- | --- |\n")
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.Rule] {
			t.Errorf("rule %s documented twice", r.Rule)
		}
		seen[r.Rule] = true
		if r.Short == "" || len(r.Short) > 45 || strings.ContainsAny(r.Short, "`*\n") {
			t.Errorf("rule %s: short %q: empty, over 45 bytes or not plain text", r.Rule, r.Short)
		}
		b.WriteString("| `" + r.Rule + "` | " + r.Severity + " | " + r.Finds + " |\n")
	}
	gendoc.Check(t, "../../../README.md", "lint-rules", b.String()+"\n", "go generate ./internal/cluster/lint", *update)
}
