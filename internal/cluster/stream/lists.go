package stream

import (
	"reflect"

	yaml3 "go.yaml.in/yaml/v3"
)

// mergeSequence merges v into the sequence n, read as o. Lists of objects that all have a
// unique name (containers, volumes, volume mounts, env) are matched by name, since inject
// prepends an init container and appends volumes, mounts and variables: by index, every
// element's comments would move to its neighbour. Other lists (command, args) keep their
// common beginning and end, so that arguments put before or after the old ones leave these
// as they were, and match the rest by index.
func mergeSequence(n *yaml3.Node, o, v []any) (*yaml3.Node, error) {
	if n.Kind != yaml3.SequenceNode || len(n.Content) != len(o) {
		return nil, errMismatch
	}
	content, err := mergeEach(n.Content, o, v, pairs(o, v))
	if err != nil {
		return nil, err
	}
	for _, c := range content {
		headComment(c)
	}
	return withContent(n, content), nil
}

// named reports whether every element of l is an object with a name, no two the same.
func named(l []any) bool {
	seen := make(map[string]bool, len(l))
	for _, x := range l {
		obj, _ := x.(map[string]any)
		name, ok := obj["name"].(string)
		if !ok || seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}

// pairs is, for each element of v, the index of the element of o it is merged into, or -1 for
// a new one (see mergeSequence).
func pairs(o, v []any) []int {
	if named(o) && named(v) {
		return byName(o, v)
	}
	return byEnds(o, v)
}

// byName pairs each element of v with the element of o of its name.
func byName(o, v []any) []int {
	at := make(map[string]int, len(o))
	for i, x := range o {
		at[x.(map[string]any)["name"].(string)] = i
	}
	p := make([]int, len(v))
	for i, x := range v {
		j, ok := at[x.(map[string]any)["name"].(string)]
		p[i] = -1
		if ok {
			p[i] = j
		}
	}
	return p
}

// byEnds pairs the elements o and v begin and end with, the same JSON, and the rest by index.
func byEnds(o, v []any) []int {
	head := 0
	for head < len(o) && head < len(v) && reflect.DeepEqual(o[head], v[head]) {
		head++
	}
	tail := 0
	for tail < len(o)-head && tail < len(v)-head && reflect.DeepEqual(o[len(o)-1-tail], v[len(v)-1-tail]) {
		tail++
	}
	p := byIndex(o, v, head, len(o)-tail)
	for i := range tail {
		p[len(v)-1-i] = len(o) - 1 - i
	}
	return p
}

// byIndex pairs each element of v with the element of o at its index, those in o[from:to]
// only.
func byIndex(o, v []any, from, to int) []int {
	p := make([]int, len(v))
	for i := range v {
		p[i] = -1
		if i < from || i < to && i < len(o) {
			p[i] = i
		}
	}
	return p
}

// mergeEach merges each element of v into the node of the element of o it is paired with (p),
// and renders those paired with none.
func mergeEach(nodes []*yaml3.Node, o, v []any, p []int) ([]*yaml3.Node, error) {
	content := make([]*yaml3.Node, 0, len(v))
	for i, x := range v {
		j := p[i]
		if j < 0 {
			content = append(content, render(x))
			continue
		}
		m, err := merge(nodes[j], o[j], x)
		if err != nil {
			return nil, err
		}
		content = append(content, m)
	}
	return content, nil
}
