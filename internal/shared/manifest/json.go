package manifest

import (
	"fmt"
	"maps"
	"slices"
)

// Readers of decoded JSON. path names the object that holds key, for errors: "spec.template.spec".

// Str returns m[key] when it is a string, else "".
func Str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// MapAt returns m[key] as an object: nil when absent or null, an error when it is something
// else.
func MapAt(m map[string]any, key, path string) (map[string]any, error) {
	switch v := m[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("%s: not an object", Join(path, key))
}

// ListAt returns m[key] as a list: nil when absent or null, an error when it is something else.
func ListAt(m map[string]any, key, path string) ([]any, error) {
	switch v := m[key].(type) {
	case nil:
		return nil, nil
	case []any:
		return v, nil
	}
	return nil, fmt.Errorf("%s: not a list", Join(path, key))
}

// StringsAt returns m[key] as a list of strings.
func StringsAt(m map[string]any, key, path string) ([]string, error) {
	l, err := ListAt(m, key, path)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: not a string", Join(path, key), i)
		}
		out = append(out, s)
	}
	return out, nil
}

// StringMapAt returns m[key] as an object of strings (annotations, labels): empty when absent.
func StringMapAt(m map[string]any, key, path string) (map[string]string, error) {
	obj, err := MapAt(m, key, path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(obj))
	for _, k := range slices.Sorted(maps.Keys(obj)) { // sorted: the same input, the same message
		v := obj[k]
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s: not a string", Join(path, key), k)
		}
		out[k] = s
	}
	return out, nil
}

// Join is path.key, or key at the top.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
