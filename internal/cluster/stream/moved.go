package stream

import (
	"slices"

	yaml3 "go.yaml.in/yaml/v3"
)

// A moved element is a named element that a change takes out of one list and puts into
// another: a classic sidecar that `kubectl sidesync inject --native` moves from a pod's
// containers into its initContainers. Written as it was (its keys in their order, its lists'
// layout, its quoting and comments) with only what the change added or changed, its diff shows
// a move, not a container rewritten.
type moved struct {
	node *yaml3.Node // the element's node as read
	val  any         // its value as read
}

// removedElement records that the splice removes item, read as o, from its list: a candidate for
// a move when the same name is added elsewhere.
func (s *splicer) removedElement(item *yaml3.Node, o any) {
	name, ok := elementName(o)
	if !ok {
		return
	}
	if s.removed == nil {
		s.removed = map[string][]moved{}
	}
	s.removed[name] = append(s.removed[name], moved{item, o})
}

// render is the node of v, a value the change adds: written afresh (render), except that an
// element of a list added there that a move brought from elsewhere (s.moved) is its old node
// merged with what changed.
func (s *splicer) render(v any) *yaml3.Node {
	switch x := v.(type) {
	case []any:
		n := &yaml3.Node{Kind: yaml3.SequenceNode, Tag: "!!seq", Content: make([]*yaml3.Node, 0, len(x))}
		for _, e := range x {
			n.Content = append(n.Content, s.element1(e))
		}
		return n
	case map[string]any:
		n := &yaml3.Node{Kind: yaml3.MappingNode, Tag: "!!map", Content: make([]*yaml3.Node, 0, 2*len(x))}
		for _, k := range slices.Sorted(mapKeys(x)) { // in render's order
			n.Content = append(n.Content, stringNode(k), s.render(x[k]))
		}
		return n
	}
	return render(v)
}

// element1 is the node of e, an element of a list the change adds.
func (s *splicer) element1(e any) *yaml3.Node {
	name, ok := elementName(e)
	if !ok {
		return s.render(e)
	}
	s.added = append(s.added, name)
	if m, ok := s.moved[name]; ok {
		if n, err := merge(deepCopy(m.node), m.val, e); err == nil {
			return headComment(n)
		}
	}
	return s.render(e)
}

// moves are the moves found by a first splice: each name added once, and removed once, in the
// whole document.
func (s *splicer) moves() map[string]moved {
	count := map[string]int{}
	for _, n := range s.added {
		count[n]++
	}
	var out map[string]moved
	for n, c := range count {
		if r := s.removed[n]; c == 1 && len(r) == 1 {
			if out == nil {
				out = map[string]moved{}
			}
			out[n] = r[0]
		}
	}
	return out
}

// elementName is the name of a list element that is an object with a string "name".
func elementName(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	name, ok := m["name"].(string)
	return name, ok && name != ""
}

// deepCopy copies a node and everything under it, so that merging into the copy leaves the
// document's own nodes, whose lines the splice still reads, as they were.
func deepCopy(n *yaml3.Node) *yaml3.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml3.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = deepCopy(x)
	}
	return &c
}
