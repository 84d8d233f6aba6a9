package lint

import (
	"slices"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/testing/corpus"
)

// rulesOf are the rules a row of the table stands for: its own, or those the catalog names
// for its kind of switch.
func rulesOf(r rule) []string {
	if r.switchOf == nil {
		return []string{r.id}
	}
	var ids []string
	for _, e := range catalog.Entries() {
		if s := r.switchOf(&e); s != nil {
			ids = append(ids, s.Rule)
		}
	}
	return ids
}

// TestTable: every row names its rules one way (a Rule constant or the catalog's switches) and
// has a check, and each check reports only its own row's rules, over every object of the corpus,
// so that Lint's findings come rule by rule in the order of the table.
func TestTable(t *testing.T) {
	for i, r := range table {
		if (r.id == "") == (r.switchOf == nil) || r.check == nil || len(rulesOf(r)) == 0 {
			t.Errorf("row %d (%q): wants either an id or switchOf, a check, and at least one rule", i, r.id)
		}
	}
	manifests, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, m := range manifests {
		objs, err := Decode(m.Data)
		if err != nil {
			continue // a manifest lint refuses has no pod to check; the corpus goldens keep the error
		}
		for _, o := range objs {
			if o.Unsupported != "" {
				continue // only notServed looks at it
			}
			p := newPod(o)
			for _, r := range table {
				for _, f := range r.check(p) {
					found[f.Rule] = true
					if !slices.Contains(rulesOf(r), f.Rule) {
						t.Errorf("%s, %s: the check of %v reports %s", m.Name, o.ID(), rulesOf(r), f.Rule)
					}
				}
			}
		}
	}
	if len(found) < 5 {
		t.Errorf("the corpus gives findings of %d rules only (%v): too few to tell the checks apart", len(found), found)
	}
}
