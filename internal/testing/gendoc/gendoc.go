// Package gendoc keeps generated parts of documents in step with the data they come from: the
// text between the markers "<!-- NAME:begin -->" and "<!-- NAME:end -->", each on a line of its
// own. Tests use it to fail when a document is stale, and to rewrite it with -update.
package gendoc

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares the part of the file at path between the markers of name with want; with
// update it writes want there instead. regenerate is the command that does that, for the
// failure message.
func Check(t testing.TB, path, name, want, regenerate string, update bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	before, rest, ok1 := strings.Cut(string(data), begin)
	got, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers %q and %q around the generated %s", path, begin, end, name)
	}
	if update {
		if got != want {
			if err := os.WriteFile(path, []byte(before+begin+want+end+after), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if diff := cmp.Diff(strings.Split(got, "\n"), strings.Split(want, "\n")); diff != "" {
		t.Errorf("%s's %s part is out of date (-%s +generated):\n%s\nregenerate it with: %s", path, name, path, diff, regenerate)
	}
}
