package manifest

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// needsExact reports whether sigs.k8s.io/yaml may have read a number of v inexactly: it reads a
// number that fits no int64 or uint64 as a float64 (its JSON text then has a point or an
// exponent), -0 as 0, and one out of float64's range as a string. (A float it writes as an
// integer is floatText's.)
func needsExact(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if needsExact(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if needsExact(x) {
				return true
			}
		}
	case json.Number:
		return v == "0" || strings.ContainsAny(string(v), ".eE")
	case string:
		return outOfRange(v)
	}
	return false
}

// floatText reports whether text may have a float that kubectl's reader gives as an integer
// (1E+2 and 100.0 become 100): a digit followed by a point or an exponent.
func floatText(text []byte) bool {
	for i := 1; i < len(text); i++ {
		if c := text[i]; (c == '.' || c == 'e' || c == 'E') && '0' <= text[i-1] && text[i-1] <= '9' {
			return true
		}
	}
	return false
}

// exact returns v, read by sigs.k8s.io/yaml from n, with the text of each plain scalar that is
// a JSON number, which YAML 1.1 takes for a float, put back. Where the tree and v do not match
// (a key it cannot name, a merge key), it leaves v as it is.
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
