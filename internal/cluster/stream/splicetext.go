package stream

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// within reports whether every node of the tree n is on one of the lines: yaml.v3 puts an
// empty value at the end of a document on the line after ("?\n>").
func within(n *yaml3.Node, lines int) bool {
	if n.Line < 1 || n.Line > lines {
		return false
	}
	for _, c := range n.Content {
		if !within(c, lines) {
			return false
		}
	}
	return true
}

// newSplicer is a splicer of the document body whose root node is root.
func newSplicer(body []byte, root *yaml3.Node) *splicer {
	s := &splicer{brk: "\n", final: bytes.HasSuffix(body, []byte("\n")), st: styleOf(root), last: map[*yaml3.Node]int{}}
	if bytes.Contains(body, []byte("\r\n")) {
		s.brk = "\r\n"
	}
	s.lines = lines(body)
	if n := len(s.lines); n > 0 && !s.final {
		s.lines[n-1] += s.brk // taken off again by apply
	}
	s.measure(root, len(s.lines))
	return s
}

// measure finds where each node of the tree n ends: next is the line where what follows n
// starts (the next key or element, or the end of the document). It returns the last node of
// the tree, the one its text ends with.
func (s *splicer) measure(n *yaml3.Node, next int) (leaf *yaml3.Node) {
	leaf = n
	for i, c := range n.Content {
		b := next
		if i+1 < len(n.Content) {
			b = n.Content[i+1].Line - 1
		}
		leaf = s.measure(c, b)
	}
	first := n.Line - 1
	content := -1 // the indentation of a block scalar's lines, which may look like comments
	if leaf.Style&(yaml3.LiteralStyle|yaml3.FoldedStyle) != 0 {
		for l := leaf.Line; l < next && l < len(s.lines); l++ {
			if strings.TrimSpace(s.lines[l]) != "" {
				content = indentation(s.lines[l])
				break
			}
		}
	}
	l := next - 1
	for l > first && l < len(s.lines) && skippable(s.lines[l], content) {
		l--
	}
	s.last[n] = min(max(l, first), len(s.lines)-1)
	return leaf
}

// skippable reports whether line, after a node, is not the node's: blank, or a comment, unless
// it is indented as the lines of a block scalar are (content, when not -1), or the marker of
// the document's end (...).
func skippable(line string, content int) bool {
	t := strings.TrimSpace(line)
	return t == "" || t[0] == '#' && (content < 0 || indentation(line) < content) ||
		strings.HasPrefix(line, "...") && (len(t) == 3 || strings.ContainsAny(line[3:4], " \t"))
}

// comment reports whether line is a comment alone.
func comment(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "#")
}

// indentation is how many spaces line starts with.
func indentation(line string) int {
	return len(line) - len(strings.TrimLeft(line, " "))
}

// prefix is what comes before the node n on its line: spaces, and the dashes of the list
// elements it starts. ok is false when something else does (a ? of an explicit key).
func (s *splicer) prefix(n *yaml3.Node) (string, bool) {
	if n.Line < 1 || n.Line > len(s.lines) || n.Column-1 > len(s.lines[n.Line-1]) {
		return "", false
	}
	p := s.lines[n.Line-1][:n.Column-1]
	return p, strings.Trim(p, " -") == ""
}

// commentsAbove is the first of the comment lines right above line at, none of them at or
// before the line floor.
func (s *splicer) commentsAbove(at, floor int) int {
	for at-1 > floor && comment(s.lines[at-1]) {
		at--
	}
	return at
}

// replace records that lines[from:to] are n written at the column after prefix, which its first
// line starts with.
func (s *splicer) replace(from, to int, prefix string, n *yaml3.Node) error {
	noFoot(n)
	out, err := styled(n, s.st)
	if err != nil {
		return err
	}
	s.edits = append(s.edits, edit{from: from, to: to, text: s.indent(out, prefix, len(prefix))})
	return nil
}

// insert records that n, written at column col, comes before lines[at].
func (s *splicer) insert(at, col int, n *yaml3.Node) {
	out, err := styled(n, s.st)
	if err != nil {
		return // the values are decoded JSON: the encoder writes every one
	}
	pad := strings.Repeat(" ", col)
	s.edits = append(s.edits, edit{from: at, to: at, text: s.indent(out, pad, col)})
}

// noFoot takes off the foot comments at the end of the tree n: they are below the lines it
// replaces, and stay there.
func noFoot(n *yaml3.Node) {
	for {
		n.FootComment = ""
		if len(n.Content) == 0 {
			return
		}
		if n.Kind == yaml3.MappingNode {
			n.Content[len(n.Content)-2].FootComment = ""
		}
		n = n.Content[len(n.Content)-1]
	}
}

// indent is the lines of out, the first after prefix, the others indented by col spaces but
// for blank ones, each ending in the document's line break.
func (s *splicer) indent(out []byte, prefix string, col int) string {
	var b strings.Builder
	pad := strings.Repeat(" ", col)
	for i, line := range lines(out) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case i == 0:
			b.WriteString(prefix)
		case line != "":
			b.WriteString(pad)
		}
		b.WriteString(line)
		b.WriteString(s.brk)
	}
	return b.String()
}

// apply is the document's lines with the edits made, or false when two of them overlap.
func (s *splicer) apply() ([]byte, bool) {
	slices.SortStableFunc(s.edits, func(a, b edit) int { return cmp.Compare(a.from, b.from) })
	var b bytes.Buffer
	at := 0
	for _, e := range s.edits {
		if e.from < at || e.to < e.from {
			return nil, false
		}
		writeLines(&b, s.lines[at:e.from])
		b.WriteString(e.text)
		at = e.to
	}
	writeLines(&b, s.lines[at:])
	out := b.Bytes()
	if !s.final {
		out = bytes.TrimSuffix(out, []byte(s.brk))
	}
	return out, true
}
