package stream

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// exact returns v, read by sigs.k8s.io/yaml from n, with the text of each plain scalar that is
// a JSON number put back: the reader makes a float64 of a number that fits no int64 or uint64
// (123456789012345678901234567890, and 100000000000000000100, which comes back as
// 100000000000000000000; found by FuzzRead), of 1.50, 1E+2 and -0, and a string of one beyond
// float64's range (1e400). Where the tree and v do not match (a key it cannot name, a merge
// key), it leaves v as it is.
func exact(n *yaml3.Node, v any) any {
	for i := 0; n.Kind == yaml3.AliasNode && n.Alias != nil && i < MaxDepth; i++ {
		n = n.Alias
	}
	switch v := v.(type) {
	case map[string]any:
		if n.Kind == yaml3.MappingNode && !hasMergeKey(n) {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k, ok := jsonKey(n.Content[i]); ok {
					if x, ok := v[k]; ok {
						v[k] = exact(n.Content[i+1], x)
					}
				}
			}
		}
	case []any:
		if n.Kind == yaml3.SequenceNode && len(n.Content) == len(v) {
			for i, x := range v {
				v[i] = exact(n.Content[i], x)
			}
		}
	case json.Number:
		if plainNumber(n) && sameFloat(n.Value, string(v)) {
			return json.Number(n.Value)
		}
	case string:
		if plainNumber(n) && n.Value == v && outOfRange(v) {
			return json.Number(v)
		}
	}
	return v
}

// plainNumber reports whether n is a plain scalar, without a tag, written as a JSON number.
func plainNumber(n *yaml3.Node) bool {
	return n.Kind == yaml3.ScalarNode && n.Style == 0 && isJSONNumber(n.Value)
}

// sameFloat reports whether a and b are numbers that read as the same float64.
func sameFloat(a, b string) bool {
	x, errA := strconv.ParseFloat(a, 64)
	y, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && x == y
}

// outOfRange reports whether s is a JSON number beyond float64's range, which YAML 1.1 readers
// take for a string.
func outOfRange(s string) bool {
	if !isJSONNumber(s) {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return errors.Is(err, strconv.ErrRange)
}

// isJSONNumber reports whether s is a number as JSON writes one (RFC 8259, section 6).
func isJSONNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	i := digits(s)
	if i == 0 || (s[0] == '0' && i > 1) {
		return false
	}
	s = s[i:]
	if rest, ok := strings.CutPrefix(s, "."); ok {
		if i = digits(rest); i == 0 {
			return false
		}
		s = rest[i:]
	}
	if len(s) > 0 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if i = digits(s); i == 0 {
			return false
		}
		s = s[i:]
	}
	return s == ""
}

// digits is how many ASCII digits s starts with.
func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
