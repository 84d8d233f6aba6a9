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

// mutate returns a changed deep copy of obj: one to four changes of the kinds inject makes
// and more (a value replaced, a key deleted or added, an element put before or after a list,
// a named one in a list of named objects), each at a place c chooses.
func mutate(obj map[string]any, c choices) map[string]any {
	out := clone(obj).(map[string]any)
	for n := c.next(4) + 1; n > 0; n-- {
		change(pick(out, c), c)
	}
	return out
}

// pick walks from v into its objects and lists as c chooses, 20 levels at most.
func pick(v any, c choices) any {
	for range 20 {
		var kids []any
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(mapKeys(v)) {
				kids = appendCollection(kids, v[k])
			}
		case []any:
			for _, x := range v {
				kids = appendCollection(kids, x)
			}
		}
		i := c.next(len(kids) + 1)
		if i == 0 {
			break
		}
		v = kids[i-1]
	}
	return v
}

// appendCollection appends x to l when x is an object or a list.
func appendCollection(l []any, x any) []any {
	switch x.(type) {
	case map[string]any, []any:
		return append(l, x)
	}
	return l
}

// change changes the object or list v in place, as c chooses.
func change(v any, c choices) {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(mapKeys(v))
		if len(keys) == 0 {
			v[key(c)] = value(c)
			return
		}
		k := keys[c.next(len(keys))]
		switch c.next(4) {
		case 0:
			v[k] = value(c)
		case 1:
			delete(v, k)
		case 2:
			v[key(c)] = value(c)
		default:
			if l, ok := v[k].([]any); ok {
				v[k] = grown(l, c)
			} else {
				v[k] = value(c)
			}
		}
	case []any:
		if len(v) > 0 {
			v[c.next(len(v))] = value(c)
		}
	}
}

// grown is l with an element put before its first or after its last: in a list of named
// objects, a new named one (as inject adds an init container, a volume, a mount, a variable).
func grown(l []any, c choices) []any {
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
		return append([]any{x}, l...)
	}
	return append(l, x)
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
