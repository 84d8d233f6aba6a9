package lint

import (
	"fmt"

	"github.com/sidesync/sidesync/internal/shared/catalog"
)

//go:generate go test -run TestREADMERules -update

// RuleDoc is what the documentation says of a rule: a row of the README's table of rules.
type RuleDoc struct {
	Rule     string
	Severity string // "error", "warning", "error or warning", "info"
	Finds    string // what it finds, one line of Markdown
	// Short is the finding in a few words, for the webhook's warnings at a Job's creation,
	// which kubectl prints one per line (at most 45 bytes, plain text).
	Short string
}

// ShortOf is the Short of a rule, "" for an unknown one.
func ShortOf(rule string) string {
	for _, r := range Rules() {
		if r.Rule == rule {
			return r.Short
		}
	}
	return ""
}

// Rules documents every rule, in the order of lint's table, except that the rules of the
// catalog's switches are listed together, sidecar by sidecar in the catalog's order, where the
// first of them runs: a reader finds all of a sidecar's switches in one place.
func Rules() []RuleDoc {
	var docs []RuleDoc
	switches := false
	for _, r := range table {
		switch {
		case r.switchOf == nil:
			docs = append(docs, RuleDoc{r.id, r.severity, r.finds, r.short})
		case !switches:
			docs = append(docs, switchDocs()...)
			switches = true
		}
	}
	return docs
}

// switchDocs documents the rules of the catalog's switches: for each sidecar, one rule per row
// of switches in the table whose switch it has.
func switchDocs() []RuleDoc {
	var docs []RuleDoc
	for _, e := range catalog.Entries() {
		for _, r := range table {
			if r.switchOf == nil {
				continue
			}
			s := r.switchOf(&e)
			if s == nil {
				continue
			}
			d := RuleDoc{s.Rule, r.severity, fmt.Sprintf(r.finds, e.Title, s.What), r.short}
			if r.ifMaybeNative != "" && e.Native.ByDefault == catalog.Maybe {
				d.Severity, d.Finds = d.Severity+" or warning", d.Finds+r.ifMaybeNative
			}
			docs = append(docs, d)
		}
	}
	return docs
}
