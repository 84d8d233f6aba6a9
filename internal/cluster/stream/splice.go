package stream

import (
	"bytes"
	"reflect"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// spliced is v spliced into the YAML text of src, and whether that is safe: the lines of every
// node that did not change are copied from the input byte for byte (flow collections over
// several lines, the indentation of lists, quoting, folding, comments, blank lines, line
// breaks), and only the nodes that changed are written, each merged into its old node (see
// merge) and indented to its place, in the document's style (styleOf, restyle). A GitOps diff of
// `kubectl sidesync inject` then shows what inject changed and nothing else.
//
// The changes are made line by line, at the entries of block mappings and the elements of
// block lists: a key added, removed or given a new value, an element added, removed or
// changed. A change inside a flow collection ({...}, [...]) rewrites the block entry or element
// that holds it. Where that is not possible (the root is not a block mapping, anchors, line
// breaks other than \n and \r\n), or the result does not read back as the object (now), it
// reports false, and the document is merged as a whole (merged).
func spliced(src *source, v any, now []byte) ([]byte, bool) {
	text := yamlText(src.body)
	if bytes.ContainsRune(text, '\r') || bytes.ContainsAny(text, "\u0085\u2028\u2029") {
		return nil, false // line breaks to yaml.v3 that are none to lines: its line numbers would not be ours
	}
	var doc yaml3.Node
	if yaml3.Unmarshal(text, &doc) != nil || len(doc.Content) != 1 || usesAnchors(doc.Content[0]) {
		return nil, false
	}
	o, okO := decoded(src.read).(map[string]any)
	w, okV := v.(map[string]any)
	if !okO || !okV {
		return nil, false
	}
	s := newSplicer(src.body, doc.Content[0])
	if len(s.lines) != strings.Count(string(text), "\n") || !within(doc.Content[0], len(s.lines)) {
		return nil, false
	}
	if ok, err := s.mapping(doc.Content[0], o, w); !ok || err != nil {
		return nil, false
	}
	if mv := s.moves(); mv != nil { // again, writing each moved element as it was
		s = newSplicer(src.body, doc.Content[0])
		s.moved = mv
		if ok, err := s.mapping(doc.Content[0], o, w); !ok || err != nil {
			return nil, false
		}
	}
	out, ok := s.apply()
	if !ok || !readsAs(out, now) {
		return nil, false
	}
	return out, true
}

// A splicer collects the edits that turn a document's lines into those of its changed object.
type splicer struct {
	lines []string // the document's lines, each with its line break
	brk   string   // the document's line break, \r\n or \n
	final bool     // whether the document ends with a line break
	st    style
	last  map[*yaml3.Node]int // the last line of each node's text, comments after it left out
	edits []edit
	// removed and added are the named list elements the splice removes and adds (moved.go);
	// moved, those of a first splice that moved: written as they were, where they go.
	removed map[string][]moved
	added   []string
	moved   map[string]moved
}

// An edit replaces lines[from:to] (none when from == to) with text.
type edit struct {
	from, to int
	text     string
}

// value records the edits that make the node n, read as o, hold v, when both are mappings or
// both lists, written as blocks; false otherwise, with no edit recorded: n is to be written
// whole.
func (s *splicer) value(n *yaml3.Node, o, v any) (bool, error) {
	switch o := o.(type) {
	case map[string]any:
		if v, ok := v.(map[string]any); ok {
			return s.mapping(n, o, v)
		}
	case []any:
		if v, ok := v.([]any); ok {
			return s.sequence(n, o, v)
		}
	}
	return false, nil
}

// mapping records the edits that make the block mapping n, read as o, hold v: its entries
// removed (with their comments above), changed, and v's new keys added after the last, sorted,
// as merge adds them. It reports false, with no edit recorded, where that is not possible: n
// is no block mapping, or it is to be empty, or it loses the key its list element's line
// starts with.
func (s *splicer) mapping(n *yaml3.Node, o, v map[string]any) (bool, error) {
	if n.Kind != yaml3.MappingNode || n.Style&yaml3.FlowStyle != 0 || len(n.Content) == 0 || len(v) == 0 {
		return false, nil
	}
	if len(n.Content) != 2*len(o) {
		return false, errMismatch
	}
	names := make([]string, len(o))
	seen := make(map[string]bool, len(o))
	for i := range names {
		k := n.Content[2*i]
		name, ok := jsonKey(k)
		_, read := o[name]
		if !ok || !read || seen[name] {
			return false, errMismatch
		}
		names[i], seen[name] = name, true
		p, ok := s.prefix(k)
		if _, kept := v[name]; !ok || !kept && strings.Contains(p, "-") {
			return false, nil
		}
	}
	for i, name := range names {
		k, val := n.Content[2*i], n.Content[2*i+1]
		x, kept := v[name]
		switch {
		case !kept:
			floor := -1
			if i > 0 {
				floor = s.last[n.Content[2*i-1]]
			}
			s.edits = append(s.edits, edit{from: s.commentsAbove(k.Line-1, floor), to: s.last[val] + 1})
		case !reflect.DeepEqual(o[name], x):
			if err := s.entry(k, val, o[name], x); err != nil {
				return false, err
			}
		}
	}
	var added []string
	for k := range v {
		if _, ok := o[k]; !ok {
			added = append(added, k)
		}
	}
	if len(added) > 0 {
		slices.Sort(added)
		m := &yaml3.Node{Kind: yaml3.MappingNode, Tag: "!!map"}
		for _, k := range added {
			m.Content = append(m.Content, stringNode(k), s.render(v[k]))
		}
		p, _ := s.prefix(n.Content[0])
		s.insert(s.last[n]+1, len(p), m)
	}
	return true, nil
}

// entry records the edits that give the entry k: val, read as o, the value v: those inside
// val when it can take them, else the entry written anew in its lines.
func (s *splicer) entry(k, val *yaml3.Node, o, v any) error {
	if ok, err := s.value(val, o, v); ok || err != nil {
		return err
	}
	m, err := merge(val, o, v)
	if err != nil {
		return err
	}
	key := *k
	key.HeadComment = "" // above the lines replaced
	p, _ := s.prefix(k)
	return s.replace(k.Line-1, s.last[val]+1, p, &yaml3.Node{Kind: yaml3.MappingNode, Tag: "!!map", Content: []*yaml3.Node{keyComment(&key, m), m}})
}

// sequence records the edits that make the block list n, read as o, hold v: its elements
// paired as merge pairs them (pairs), those paired with none removed (with their comments
// above) or added (before the next old one, above its comments, or after the last), the
// others changed. It reports false, with no edit recorded, where that is not possible: n is
// no block list, or it is to be empty, or its elements would change their order, or an
// element does not start on the line of its dash.
func (s *splicer) sequence(n *yaml3.Node, o, v []any) (bool, error) {
	if n.Kind != yaml3.SequenceNode || n.Style&yaml3.FlowStyle != 0 || len(n.Content) == 0 || len(v) == 0 {
		return false, nil
	}
	if len(n.Content) != len(o) {
		return false, errMismatch
	}
	p := pairs(o, v)
	kept := make([]bool, len(o))
	prev := -1
	for _, j := range p {
		if j >= 0 {
			if j <= prev {
				return false, nil
			}
			kept[j], prev = true, j
		}
	}
	dash := n.Column - 1
	for j, item := range n.Content { // each element starts on the line of its dash
		line := s.lines[item.Line-1]
		if len(line) <= dash || line[dash] != '-' || strings.Trim(line[:dash], " -") != "" {
			return false, nil
		}
		// The first element of a list in a list starts on the line of the outer dash
		// ("- - a"): nothing can be removed from before it, nor put there.
		if outer := strings.Contains(line[:dash], "-"); outer && (!kept[j] || p[0] != j) {
			return false, nil
		}
	}
	var pending []any
	for i, x := range v {
		j := p[i]
		if j < 0 {
			pending = append(pending, x)
			continue
		}
		item := n.Content[j]
		if len(pending) > 0 {
			s.insert(s.commentsAbove(item.Line-1, s.before(n, j)), dash, s.render(pending))
			pending = nil
		}
		if reflect.DeepEqual(o[j], x) {
			continue
		}
		if err := s.element(n, item, o[j], x); err != nil {
			return false, err
		}
	}
	for j, item := range n.Content {
		if !kept[j] {
			s.edits = append(s.edits, edit{from: s.commentsAbove(item.Line-1, s.before(n, j)), to: s.last[item] + 1})
			s.removedElement(item, o[j])
		}
	}
	if len(pending) > 0 {
		s.insert(s.last[n]+1, dash, s.render(pending))
	}
	return true, nil
}

// before is the last line of the element of n before its element j, or -1.
func (s *splicer) before(n *yaml3.Node, j int) int {
	if j == 0 {
		return -1
	}
	return s.last[n.Content[j-1]]
}

// element records the edits that give the element item of the list n, read as o, the value
// v: those inside item when it can take them, else the element written anew in its lines.
func (s *splicer) element(n, item *yaml3.Node, o, v any) error {
	if ok, err := s.value(item, o, v); ok || err != nil {
		return err
	}
	m, err := merge(item, o, v)
	if err != nil {
		return err
	}
	m.HeadComment = "" // above the lines replaced
	m = headComment(m)
	line := s.lines[item.Line-1]
	return s.replace(item.Line-1, s.last[item]+1, line[:n.Column-1], &yaml3.Node{Kind: yaml3.SequenceNode, Tag: "!!seq", Content: []*yaml3.Node{m}})
}
