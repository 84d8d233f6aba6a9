package stream

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml3 "go.yaml.in/yaml/v3"
)

// called selects the element of a list whose name is it, in a path (see nodeLines).
type called string

// nodeLines is the lines of the node at path in the YAML stream text: the lines of its key
// (of a mapping's entry) or its dash (of a list's element), with the comments right above it,
// to the last line indented deeper than the key or dash (or as deep, the elements of a key's
// list), comments and blank lines after it left out; ok is false when text has no such node. A path is the document's index, then keys,
// indexes and names (called) of list elements. It is found by indentation alone, independently
// of how Write finds where a node ends.
func nodeLines(t *testing.T, text string, path []any) (first, last int, ok bool) {
	t.Helper()
	lines := lines([]byte(strings.ReplaceAll(text, "\r\n", "\n")))
	dec := yaml3.NewDecoder(strings.NewReader(strings.Join(lines, "")))
	var n yaml3.Node
	for i := 0; i <= path[0].(int); i++ {
		n = yaml3.Node{}
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			return 0, 0, false
		} else if err != nil {
			t.Fatalf("%q does not parse: %v", text, err)
		}
	}
	node, line, col, key := n.Content[0], 0, 0, false
	for _, p := range path[1:] {
		var k *yaml3.Node
		_, key = p.(string)
		switch p := p.(type) {
		case string:
			k, node = entry(node, func(k, _ *yaml3.Node) bool { name, ok := jsonKey(k); return ok && name == p })
		case called:
			k, node = element(node, func(_ int, e *yaml3.Node) bool {
				name, _ := entry(e, func(k, v *yaml3.Node) bool { return k.Value == "name" && v.Value == string(p) })
				return name != nil
			})
		case int:
			k, node = element(node, func(i int, _ *yaml3.Node) bool { return i == p })
		}
		if k == nil {
			return 0, 0, false
		}
		line, col = k.Line-1, k.Column-1
	}
	explicit := key && strings.HasPrefix(strings.TrimSpace(lines[line]), "? ")
	if explicit { // "? key" and ": value" on the next line
		col -= 2
	}
	first, last = line, line
	for first > 0 && strings.HasPrefix(strings.TrimSpace(lines[first-1]), "#") {
		first--
	}
	if node.Style&yaml3.FlowStyle != 0 && node.Kind != yaml3.ScalarNode {
		last = closing(lines, node.Line-1, node.Column-1)
	}
	if node.Kind == yaml3.ScalarNode && node.Style&(yaml3.DoubleQuotedStyle|yaml3.SingleQuotedStyle) != 0 {
		// A quoted scalar ends at its closing quote, on whatever line and at whatever
		// indentation the readers take it ("k: \"\n\"": the second line is the scalar's).
		last = max(last, closingQuote(lines, node.Line-1, node.Column-1))
	}
	leaf := node // a value may start at its key's column ("k:\n|\n  text")
	for len(leaf.Content) > 0 {
		leaf = leaf.Content[len(leaf.Content)-1]
	}
	last = max(last, leaf.Line-1)
	for l := last + 1; l < len(lines); l++ {
		switch s := strings.TrimSpace(lines[l]); {
		case s == "" || s[0] == '#':
		case indentation(lines[l]) > col || indentation(lines[l]) == col && (key && s[0] == '-' || explicit && s[0] == ':'):
			last = l
		default:
			return first, last, true
		}
	}
	return first, last, true
}

// closing is the line of the bracket that closes the flow collection opened at lines[line][col]
// (which may be closed at any indentation), quoted strings and comments skipped.
func closing(lines []string, line, col int) int {
	depth, quote := 0, byte(0)
	for l := line; l < len(lines); l++ {
		for i := col; i < len(lines[l]); i++ {
			switch c := lines[l][i]; {
			case quote == '"' && c == '\\':
				i++
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (i == 0 || lines[l][i-1] == ' '):
				i = len(lines[l])
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				if depth--; depth == 0 {
					return l
				}
			}
		}
		col = 0
	}
	return len(lines) - 1
}

// closingQuote is the line of the quote that closes the quoted scalar opened at
// lines[line][col]: in double quotes a backslash escapes the next byte, in single quotes a
// doubled quote stands for one.
func closingQuote(lines []string, line, col int) int {
	if line >= len(lines) || col >= len(lines[line]) || lines[line][col] != '"' && lines[line][col] != '\'' {
		return line // not at its quote: the node's own line
	}
	q := lines[line][col]
	col++
	for l := line; l < len(lines); l++ {
		for i := col; i < len(lines[l]); i++ {
			switch c := lines[l][i]; {
			case q == '"' && c == '\\':
				i++
			case c == q && q == '\'' && i+1 < len(lines[l]) && lines[l][i+1] == '\'':
				i++
			case c == q:
				return l
			}
		}
		col = 0
	}
	return len(lines) - 1
}

// entry is the key and value of the entry of the mapping n that is, or nils.
func entry(n *yaml3.Node, is func(k, v *yaml3.Node) bool) (*yaml3.Node, *yaml3.Node) {
	for i := 0; n.Kind == yaml3.MappingNode && i+1 < len(n.Content); i += 2 {
		if is(n.Content[i], n.Content[i+1]) {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// element is a node at the dash of the element of the list n that is (a copy of the list
// with the dash's place), and the element; or nils.
func element(n *yaml3.Node, is func(i int, e *yaml3.Node) bool) (*yaml3.Node, *yaml3.Node) {
	for i, e := range n.Content {
		if n.Kind == yaml3.SequenceNode && is(i, e) {
			return &yaml3.Node{Line: e.Line, Column: n.Column}, e
		}
	}
	return nil, nil
}

// outside is the lines of text outside the nodes at the paths it has; with trailing, the
// comment lines right after a node, and the blank lines among them, count as its own too.
func outside(t *testing.T, text string, paths [][]any, trailing bool) []string {
	t.Helper()
	lines := lines([]byte(text))
	in := make([]bool, len(lines))
	for _, p := range paths {
		if first, last, ok := nodeLines(t, text, p); ok {
			for l := last + 1; trailing && l < len(lines) && (comment(lines[l]) || strings.TrimSpace(lines[l]) == ""); l++ {
				if comment(lines[l]) { // blank lines count only when a comment follows them
					last = l
				}
			}
			for l := first; l <= last; l++ {
				in[l] = true
			}
		}
	}
	var out []string
	for l, line := range lines {
		if !in[l] {
			out = append(out, line)
		}
	}
	return out
}

// checkOnlyChanged checks that the output of Write differs from its input only in the lines of
// the nodes at the paths (changed, added or removed; a node added or removed with the mapping
// or list that holds it is that one): the lines outside them in the input are, one for one and
// byte for byte, those outside them in the output.
func checkOnlyChanged(t *testing.T, in, out string, paths [][]any) {
	t.Helper()
	if out == in {
		t.Fatalf("nothing changed: %q", out)
	}
	for i, p := range paths {
		for n := 2; n < len(p); n++ {
			_, _, inIn := nodeLines(t, in, p[:n])
			_, _, inOut := nodeLines(t, out, p[:n])
			if !inIn || !inOut {
				paths[i] = p[:n]
				break
			}
		}
	}
	if diff := cmp.Diff(outside(t, in, paths, false), outside(t, out, paths, false)); diff != "" {
		t.Errorf("lines outside the changed nodes (-read +written):\n%s\nwritten:\n%s", diff, out)
	}
}

// checkUntouched checks a YAML document d that mutate changed once, at where: when Write
// splices it, the lines outside the node changed are those of the input, one for one and
// byte for byte. The node changed is the one at where, or the flow collection around it (which
// is written whole), or the list element whose first key it removes, or the mapping it
// empties. An element put before a list's first is in the output only; the input's first
// element is not changed.
func checkUntouched(t *testing.T, d Document, where mutation) {
	t.Helper()
	if where.inserted && insertedBesideEqual(d.Object, where) {
		return // [x] with x put first is [x x]: which x is the new one is anybody's guess
	}
	now, err := canonical(d.Object)
	if err != nil {
		t.Fatal(err)
	}
	out, ok := spliced(d.src, decoded(now), now)
	if !ok {
		return
	}
	in, written := string(d.src.body), string(out)
	if !strings.HasSuffix(in, "\n") { // the last line gets a line break when a node comes after it
		brk := "\n"
		if strings.Contains(in, "\r\n") {
			brk = "\r\n"
		}
		in, written = in+brk, written+brk
	}
	p := changedNode(in, where)
	if len(p) < 2 {
		return // the root: no splicing
	}
	pin := [][]any{p}
	if where.inserted && where.at == 0 && len(p) == len(where.path)+2 {
		pin = nil // put before the first element: nothing of the input changed
	}
	// A comment between a changed key and its value is written after the new value: the
	// comments right after a node changed (not added or removed) are not told apart from
	// those inside it.
	_, _, read := nodeLines(t, in, p)
	_, _, kept := nodeLines(t, written, p)
	trailing := read && kept && pin != nil
	if diff := cmp.Diff(outside(t, in, pin, trailing), outside(t, written, [][]any{p}, trailing)); diff != "" {
		t.Fatalf("changed at %v (node %v), lines outside it (-read +written):\n%s\nread:\n%s\nwritten:\n%s", where, p, diff, in, written)
	}
}

// insertedBesideEqual reports whether the element that where put into a list of obj equals
// one of its neighbours: the writer may keep the old element's text on either side.
func insertedBesideEqual(obj map[string]any, where mutation) bool {
	var v any = obj
	for _, p := range where.path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			l, _ := v.([]any)
			if p < 0 || p >= len(l) {
				return false
			}
			v = l[p]
		}
	}
	l, _ := v.([]any)
	i, ok := where.at.(int)
	if !ok || i < 0 || i >= len(l) {
		return false
	}
	return i > 0 && reflect.DeepEqual(l[i-1], l[i]) || i+1 < len(l) && reflect.DeepEqual(l[i+1], l[i])
}

// changedNode is the path (see nodeLines) of the node of the YAML document text that the
// mutation where changes.
func changedNode(text string, where mutation) []any {
	var doc yaml3.Node
	if yaml3.Unmarshal([]byte(strings.ReplaceAll(text, "\r\n", "\n")), &doc) != nil || len(doc.Content) != 1 {
		return nil
	}
	n, path := doc.Content[0], []any{0}
	// Where the root starts: a mapping's, at its first key, which a tag may come before, even
	// on a line of its own ("!\n a:"); the lines from that key on must not start left of it.
	col, from := n.Column, n.Line
	if n.Kind == yaml3.MappingNode && len(n.Content) > 0 {
		col, from = n.Content[0].Column, n.Content[0].Line
	}
	for i, line := range slices.Collect(strings.Lines(text)) {
		if t := strings.TrimSpace(line); i+1 >= from && t != "" && t[0] != '#' && indentation(line) < col-1 {
			return nil // a line left of the root, which the readers leave out (" a:\nb"): whose is it?
		}
	}
	for _, p := range where.path {
		if n.Style&yaml3.FlowStyle != 0 {
			return path
		}
		switch p := p.(type) {
		case string:
			_, n = entry(n, func(k, _ *yaml3.Node) bool { name, ok := jsonKey(k); return ok && name == p })
		case int:
			_, n = element(n, func(i int, _ *yaml3.Node) bool { return i == p })
		}
		if n == nil {
			return nil
		}
		path = append(path, p)
	}
	if n.Style&yaml3.FlowStyle != 0 {
		return path
	}
	if where.deleted {
		first, _ := jsonKey(n.Content[0])
		if _, element := path[len(path)-1].(int); len(n.Content) == 2 || element && first == where.at {
			return path
		}
	}
	return append(path, where.at)
}
