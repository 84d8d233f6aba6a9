package catalog

import (
	"strconv"
	"strings"
)

// The catalog's predicates each have two renderings side by side: Go, which detection, inject
// and lint run, and CEL (the Common Expression Language), which the admission policies run in the
// API server (internal/cluster/admission, internal/cluster/rescue). The CEL is written with
// strings and strconv only and never called in the pod binary, so the linker drops it there.
// cel_test.go evaluates both renderings over the corpus, the examples and synthetic pods, with
// the API server's own CEL environment, and checks that they agree.

// CELPod names, in CEL, what a rendering reads of the pod besides its containers: its
// annotations and its labels, each a map of strings that is always there (the policies bind them
// to variables, with {} for a pod that has none).
type CELPod struct {
	Annotations, Labels string
}

// CELString is s as a CEL string literal: Go's double-quoted escapes are a subset of CEL's. It
// and CELList are how every CEL rendering of the project writes its constants.
func CELString(s string) string { return strconv.Quote(s) }

// CELList is words as a CEL list of strings.
func CELList(words []string) string {
	qs := make([]string, len(words))
	for i, w := range words {
		qs[i] = CELString(w)
	}
	return "[" + strings.Join(qs, ", ") + "]"
}

// celOr and celAnd join CEL conditions; none is false for celOr and true for celAnd.
func celOr(conds []string) string {
	if len(conds) == 0 {
		return "false"
	}
	return "(" + strings.Join(conds, " || ") + ")"
}

func celAnd(conds []string) string {
	if len(conds) == 0 {
		return "true"
	}
	return "(" + strings.Join(conds, " && ") + ")"
}

// quoteMeta escapes the characters of RE2's syntax in s, as regexp.QuoteMeta does, for the
// regular expressions CEL's matches() and find() take: the catalog does not link regexp, which
// the pod binary must not carry.
func quoteMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// urlPort is the port written in a URL of the catalog ("http://127.0.0.1:9901/ready" is 9901),
// or 0 when it names none. The rows write every port (TestRows).
func urlPort(raw string) int {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return 0
	}
	host, _, _ := strings.Cut(rest, "/")
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.HasSuffix(host, "]") {
		return 0
	}
	n, err := strconv.Atoi(host[i+1:])
	if err != nil {
		return 0
	}
	return n
}
