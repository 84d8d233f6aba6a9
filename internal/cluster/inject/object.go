package inject

import (
	"bytes"
	"encoding/json"
	"slices"
)

// The object is decoded JSON as internal/shared/jsonlite decodes it (map[string]any, []any,
// string, bool, json.Number, nil), never a typed struct, so that every field inject does not own
// survives, including fields newer than this code. It is read with internal/shared/manifest;
// inject writes only []any, map[string]any and strings.

// deepCopy copies a decoded JSON value, so that Apply never changes its input.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// ensureMap returns m[key] as an object, making it when absent.
func ensureMap(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

// anyList is words as a decoded JSON list.
func anyList(words []string) []any {
	l := make([]any, len(words))
	for i, w := range words {
		l[i] = w
	}
	return l
}

// without returns l without the items that owned tells (ownedEnv, ownedMount, ...).
func without(l []any, owned func(any) bool) []any {
	return slices.DeleteFunc(slices.Clone(l), owned)
}

// compactJSON is v as JSON without HTML escaping (argv words may hold <, > and &), for values
// the wrapper reads from its environment.
func compactJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// sameJSON reports whether a and b encode to the same JSON: a number decoded as json.Number
// and the same number written by inject as an int are the same. Decoded JSON is compared as it
// is, without encoding it (a pod of 256 KiB was encoded twice per comparison, most of the
// webhook's time); only scalars of different Go types, and values of other types, are encoded.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case string:
		if b, ok := b.(string); ok {
			return a == b
		}
	case json.Number:
		if b, ok := b.(json.Number); ok {
			return a == b
		}
	case bool:
		if b, ok := b.(bool); ok {
			return a == b
		}
	case nil:
		return b == nil
	}
	return encodedSame(a, b)
}

// encodedSame compares the encodings of a and b.
func encodedSame(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
