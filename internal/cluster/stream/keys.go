package stream

import (
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// jsonKey is the JSON key that sigs.k8s.io/yaml makes of the mapping key k: its text when k is
// quoted, tagged !!str or plainly a string; else what the reader makes of it alone (yes becomes
// "true", 0x1F becomes "31"). ok is false for a key it cannot name: one of another tag, a
// collection.
func jsonKey(k *yaml3.Node) (key string, ok bool) {
	if k.Kind != yaml3.ScalarNode {
		return "", false
	}
	if k.Style&yaml3.TaggedStyle != 0 {
		return k.Value, k.Tag == "!!str"
	}
	if k.Style != 0 || plainString(k.Value) {
		return k.Value, true
	}
	return readKey(k.Value)
}

// plainString reports whether the plain scalar s is a string to every YAML reader: a name such
// as kind, app.kubernetes.io/name or SIDESYNC_X, none of YAML 1.1's booleans and nulls.
func plainString(s string) bool {
	if s == "" || !(s[0] == '_' || s[0] == '/' || 'a' <= s[0]|0x20 && s[0]|0x20 <= 'z') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '/' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

// readKey is the JSON key sigs.k8s.io/yaml makes of the plain mapping key s: an integer such
// as 8080 is itself, anything else is asked of the reader, as an explicit key ("? s"): an
// implicit one ("s: ") may not be longer than 1024 characters (found by FuzzWriteChanged, a
// key that yaml.v3 writes as "? s" since it is longer than 128).
func readKey(s string) (string, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(n, 10) == s {
		return s, true
	}
	j, err := yaml.YAMLToJSON([]byte("? " + s + "\n: 0\n"))
	if err != nil {
		return "", false
	}
	v, _ := jsonlite.Decode(j)
	m, _ := v.(map[string]any)
	if len(m) != 1 {
		return "", false
	}
	for k := range m {
		return k, true
	}
	return "", false
}

// hasMergeKey reports whether the mapping n has a merge key (<<), whose keys YAML 1.1 readers
// put in n.
func hasMergeKey(n *yaml3.Node) bool {
	for i := 0; i < len(n.Content); i += 2 {
		if isMergeKey(n.Content[i]) {
			return true
		}
	}
	return false
}

// isMergeKey reports whether k is a merge key: << plain, or tagged !!merge.
func isMergeKey(k *yaml3.Node) bool {
	return k.Kind == yaml3.ScalarNode && (k.Tag == "!!merge" || k.Value == "<<" && k.Style == 0)
}
