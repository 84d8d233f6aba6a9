package stream

import (
	yaml3 "go.yaml.in/yaml/v3"
)

// mergeSequence merges v into the sequence n, read as o. Lists of objects that all have a
// unique name (containers, volumes, volume mounts, env) are matched by name, since inject
// prepends an init container and appends volumes, mounts and variables: by index, every
// element's comments would move to its neighbour. Lists of scalars (command, args) keep their
// common beginning and end, so that arguments put before or after the old ones leave these
// as they were. Other lists are matched by index.
func mergeSequence(n *yaml3.Node, o, v []any) (*yaml3.Node, error) {
	if n.Kind != yaml3.SequenceNode || len(n.Content) != len(o) {
		return nil, errMismatch
	}
	var content []*yaml3.Node
	var err error
	switch {
	case named(o) && named(v):
		content, err = byName(n.Content, o, v)
	case scalars(o) && scalars(v):
		content, err = byEnds(n.Content, o, v)
	default:
		content, err = byIndex(n.Content, o, v)
	}
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

// scalars reports whether no element of l is an object or a list.
func scalars(l []any) bool {
	for _, x := range l {
		switch x.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

// byName is the nodes of v's elements, each merged into the node of o's element of its name.
func byName(nodes []*yaml3.Node, o, v []any) ([]*yaml3.Node, error) {
	at := make(map[string]int, len(o))
	for i, x := range o {
		at[x.(map[string]any)["name"].(string)] = i
	}
	return mergeEach(nodes, o, v, func(_ int, x any) (int, bool) {
		i, ok := at[x.(map[string]any)["name"].(string)]
		return i, ok
	})
}

// byEnds keeps the nodes of the scalars o and v begin and end with, and merges the rest by
// index.
func byEnds(nodes []*yaml3.Node, o, v []any) ([]*yaml3.Node, error) {
	head := 0
	for head < len(o) && head < len(v) && sameScalar(o[head], v[head]) {
		head++
	}
	tail := 0
	for tail < len(o)-head && tail < len(v)-head && sameScalar(o[len(o)-1-tail], v[len(v)-1-tail]) {
		tail++
	}
	middle, err := byIndex(nodes[head:len(o)-tail], o[head:len(o)-tail], v[head:len(v)-tail])
	if err != nil {
		return nil, err
	}
	content := make([]*yaml3.Node, 0, len(v))
	content = append(content, nodes[:head]...)
	content = append(content, middle...)
	return append(content, nodes[len(o)-tail:]...), nil
}

// byIndex merges each element of v into the node of o's element at its index, and renders
// those beyond o's end.
func byIndex(nodes []*yaml3.Node, o, v []any) ([]*yaml3.Node, error) {
	return mergeEach(nodes, o, v, func(i int, _ any) (int, bool) { return i, i < len(o) })
}

// mergeEach merges each element of v into the node of the element of o that match names (its
// index in o), and renders those that match none.
func mergeEach(nodes []*yaml3.Node, o, v []any, match func(i int, x any) (int, bool)) ([]*yaml3.Node, error) {
	content := make([]*yaml3.Node, 0, len(v))
	for i, x := range v {
		j, ok := match(i, x)
		if !ok {
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
