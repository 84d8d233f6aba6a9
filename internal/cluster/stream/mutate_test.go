package stream

import (
	"encoding/json"
	"slices"
	"strings"
)

// choices drive mutate: each is a number in [0, n), from fuzz input or a random generator.
type choices interface{ next(n int) int }

// byteChoices are choices read from fuzz input, 0 once it is used up.
type byteChoices struct {
	b []byte
	i int
}

func (c *byteChoices) next(n int) int {
	if c.i >= len(c.b) {
		return 0
	}
	c.i++
	return int(c.b[c.i-1]) % n
}

// A mutation is where mutate changed an object: the path of keys and indexes to the object or
// list it changed, and the key set, added or deleted (deleted) in it, or the index of the
// element replaced or added (inserted).
type mutation struct {
	path              []any
	at                any
	deleted, inserted bool
}

// mutate returns a changed deep copy of obj: one to four changes of the kinds inject makes
// and more (a value replaced, a key deleted or added, an element put before or after a list,
// a named one in a list of named objects), each at a place c chooses; and where it made them.
func mutate(obj map[string]any, c choices) (map[string]any, []mutation) {
	out := clone(obj).(map[string]any)
	var where []mutation
	for n := c.next(4) + 1; n > 0; n-- {
		v, path := pick(out, c)
		m := change(v, c)
		m.path = append(path, m.path...)
		where = append(where, m)
	}
	return out, where
}

// pick walks from v into its objects and lists as c chooses, 20 levels at most, and returns
// where it stopped, and the path to it.
func pick(v any, c choices) (any, []any) {
	var path []any
	for range 20 {
		var kids []any
		var at []any
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(mapKeys(v)) {
				if isCollection(v[k]) {
					kids, at = append(kids, v[k]), append(at, k)
				}
			}
		case []any:
			for i, x := range v {
				if isCollection(x) {
					kids, at = append(kids, x), append(at, i)
				}
			}
		}
		i := c.next(len(kids) + 1)
		if i == 0 {
			break
		}
		v, path = kids[i-1], append(path, at[i-1])
	}
	return v, path
}

// isCollection reports whether x is an object or a list.
func isCollection(x any) bool {
	switch x.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// change changes the object or list v in place, as c chooses, and says where.
func change(v any, c choices) mutation {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(mapKeys(v))
		if len(keys) == 0 {
			k := key(c)
			v[k] = value(c)
			return mutation{at: k}
		}
		k := keys[c.next(len(keys))]
		switch c.next(4) {
		case 0:
			v[k] = value(c)
		case 1:
			delete(v, k)
			return mutation{at: k, deleted: true}
		case 2:
			k = key(c)
			v[k] = value(c)
		default:
			if l, ok := v[k].([]any); ok {
				g, i := grown(l, c)
				v[k] = g
				return mutation{path: []any{k}, at: i, inserted: true}
			}
			v[k] = value(c)
		}
		return mutation{at: k}
	case []any:
		if len(v) > 0 {
			i := c.next(len(v))
			v[i] = value(c)
			return mutation{at: i}
		}
	}
	return mutation{}
}

// grown is l with an element put before its first or after its last: in a list of named
// objects, a new named one (as inject adds an init container, a volume, a mount, a variable);
// and its index.
func grown(l []any, c choices) ([]any, int) {
	x := value(c)
	if named(l) {
		taken := make(map[string]bool, len(l))
		for _, e := range l {
			taken[e.(map[string]any)["name"].(string)] = true
		}
		name := "new"
		for taken[name] {
			name += "-"
		}
		x = map[string]any{"name": name, "value": x}
	}
	if c.next(2) == 0 {
		return append([]any{x}, l...), 0
	}
	return append(l, x), len(l)
}

// key is a new key: names YAML readers take for other things too.
func key(c choices) string {
	keys := []string{"new", "yes", "1.5", "a: b", "", "~", "with space", "apps/v1", strings.Repeat("k", 130), "<<", "é", "x\ny"}
	return keys[c.next(len(keys))]
}

// value is a value of the kinds a manifest has, and of the kinds YAML readers take for others.
func value(c choices) any {
	values := []any{
		"plain", "", "yes", "1.50", "2024-01-01", "a: b", "- x", "#c", "two\nlines\n", " lead", "trail ",
		"\u2028", "\u0085", "\x7f", "\t", "'q'", `"d"`, "null", "0x1F", strings.Repeat("long words ", 30),
		json.Number("123456789012345678901234567890"), json.Number("1e400"), json.Number("-0"),
		json.Number("1.50"), json.Number("7"), true, false, nil,
		map[string]any{}, []any{}, []any{"a", json.Number("1")},
		map[string]any{"name": "added", "value": "v", "list": []any{map[string]any{"name": "x"}}},
	}
	return clone(values[c.next(len(values))])
}
