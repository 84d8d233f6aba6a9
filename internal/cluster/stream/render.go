package stream

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// render makes a new node tree for v (as decoded returns it): mappings with their keys sorted,
// numbers with their exact text, every string written so that it reads back as itself.
func render(v any) *yaml3.Node {
	switch v := v.(type) {
	case map[string]any:
		n := &yaml3.Node{Kind: yaml3.MappingNode, Tag: "!!map", Content: make([]*yaml3.Node, 0, 2*len(v))}
		for _, k := range slices.Sorted(mapKeys(v)) {
			n.Content = append(n.Content, stringNode(k), render(v[k]))
		}
		return n
	case []any:
		n := &yaml3.Node{Kind: yaml3.SequenceNode, Tag: "!!seq", Content: make([]*yaml3.Node, 0, len(v))}
		for _, x := range v {
			n.Content = append(n.Content, render(x))
		}
		return n
	case string:
		return stringNode(v)
	case json.Number:
		// Untagged and plain: the encoder writes the text as it is, and Read takes a plain
		// JSON number for itself (exactNumbers).
		return &yaml3.Node{Kind: yaml3.ScalarNode, Value: string(v)}
	case bool:
		return &yaml3.Node{Kind: yaml3.ScalarNode, Value: strconv.FormatBool(v)}
	}
	return &yaml3.Node{Kind: yaml3.ScalarNode, Value: "null"}
}

// mapKeys is the keys of m, for slices.Sorted.
func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// stringNode is a scalar node for s that every YAML reader reads back as the string s.
// Double quotes where a plain s would be something else (a boolean, a number, null, a date) and
// where s holds a character that only an escape keeps; a literal block for lines; otherwise
// plain, which the encoder turns into single quotes where YAML's syntax needs it (": ", a
// leading "-", spaces at the ends).
func stringNode(s string) *yaml3.Node {
	n := &yaml3.Node{Kind: yaml3.ScalarNode, Tag: "!!str", Value: s}
	switch {
	case strings.ContainsFunc(s, escapeOnly):
		n.Style = yaml3.DoubleQuotedStyle
	case strings.Contains(s, "\n"):
		n.Style = yaml3.LiteralStyle
	case ambiguous(s):
		n.Style = yaml3.DoubleQuotedStyle
	}
	return n
}

// escapeOnly reports whether r must be written as an escape in a double-quoted string: YAML
// readers refuse it in their input (control characters; DEL, the C1 controls, U+FFFE and U+FFFF
// are outside YAML 1.1's printable set), or read it as a line break, which they fold into a
// space inside a quoted string or a block (CR, NEL, U+2028, U+2029: a value "\x85" came back
// as " "; found by FuzzRead), or drop it (a byte order mark).
func escapeOnly(r rune) bool {
	return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff
}

// ambiguous reports whether the plain scalar s would read as something other than the string s,
// to YAML 1.1 (sigs.k8s.io/yaml, kubectl) or YAML 1.2 readers, or to Read (a JSON number).
func ambiguous(s string) bool {
	switch strings.ToLower(s) {
	case "", "<<", "~", "null", "y", "yes", "n", "no", "true", "false", "on", "off":
		return true
	}
	return numberLike(s)
}

// numberLike reports whether s, plain, reads as a number or a date to some YAML reader: the
// integers of YAML 1.1 and 1.2 (0x1F, 0o17, 017, 0b101, 1_000, +5), their floats (1., .5, 1e3,
// .inf, .NaN), YAML 1.1's base 60 (1:20) and timestamps (2024-01-01).
func numberLike(s string) bool {
	t := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(t, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(t, 0, 64); err == nil {
		return true
	}
	return yamlFloat.MatchString(t) || yamlSpecial.MatchString(s) || base60.MatchString(s) || timestamp.MatchString(s)
}

// The number forms of YAML 1.1 and 1.2 that strconv does not cover.
var (
	yamlFloat   = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	yamlSpecial = regexp.MustCompile(`^[-+]?\.(?i:inf|nan)$`)
	base60      = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$`)
	timestamp   = regexp.MustCompile(`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`)
)
