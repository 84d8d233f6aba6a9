package stream

import (
	"bytes"
	"fmt"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// yamlDocument is the YAML text of a changed document, whose object is now (canonical): merged
// into the YAML it was read from (src, nil for a new document) when that reads back as the
// object, else afresh.
func yamlDocument(src *source, now []byte) ([]byte, error) {
	v := decoded(now)
	if src != nil {
		if out, ok := spliced(src, v, now); ok {
			return out, nil
		}
		if out, ok := merged(src, v, now); ok {
			return out, nil
		}
	}
	return fresh(src, v)
}

// merged is v merged into the YAML of src, and whether that is safe: the document has no
// anchor, alias or merge key (whose values are in several places of the object but one of the
// YAML), its nodes match the object read from it, and the result reads back as now.
func merged(src *source, v any, now []byte) ([]byte, bool) {
	var doc yaml3.Node
	if yaml3.Unmarshal(yamlText(src.body), &doc) != nil || len(doc.Content) != 1 || usesAnchors(doc.Content[0]) {
		return nil, false
	}
	st := styleOf(doc.Content[0])
	root, err := merge(doc.Content[0], decoded(src.read), v)
	if err != nil {
		return nil, false
	}
	doc.Content[0] = headComment(root)
	out, err := encode(&doc, st)
	if err != nil {
		return nil, false
	}
	// The restored text is a guess, the merged one is not: each must read back as the object.
	for _, text := range [][]byte{restore(yamlText(src.body), out), out} {
		if text = lineBreaks(text, src.body); readsAs(text, now) {
			return text, true
		}
	}
	return nil, false
}

// fresh is v written afresh, after the leading comments of the document it was read from.
func fresh(src *source, v any) ([]byte, error) {
	out, err := encode(render(v), style{indent: 2, compact: true})
	if err != nil || src == nil {
		return out, err
	}
	head := leadingComments(src.body)
	return append(append([]byte(nil), head...), lineBreaks(out, src.body)...), nil
}

// readsAs reports whether the YAML document out reads back, with Read's reader, as the object
// whose canonical encoding is now.
func readsAs(out, now []byte) bool {
	docs, err := readYAML(out)
	return err == nil && len(docs) == 1 && bytes.Equal(docs[0].src.read, now)
}

// style is how a document indents: by indent spaces, its lists at their key's column
// (compact, as kubectl writes them) or further in, an element's content item columns after
// its dash ("- name", "-   name").
type style struct {
	indent  int
	compact bool
	item    int
}

// styleOf is the style of the document whose root is n, from the first mapping and the first
// list written below their keys, and the first element written on its dash's line: two spaces,
// compact and "- " when it has none.
func styleOf(n *yaml3.Node) style {
	st := style{indent: 2, compact: true, item: 2}
	var indentSeen, listSeen, itemSeen bool
	var walk func(n *yaml3.Node)
	walk = func(n *yaml3.Node) {
		if e := n.Content; !itemSeen && n.Kind == yaml3.SequenceNode && n.Style&yaml3.FlowStyle == 0 && len(e) > 0 && e[0].Line == n.Line {
			st.item, itemSeen = min(max(e[0].Column-n.Column, 2), 9), true
		}
		for i := 0; n.Kind == yaml3.MappingNode && i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if v.Style&yaml3.FlowStyle != 0 || v.Line <= k.Line {
				continue
			}
			if d := v.Column - k.Column; !indentSeen && v.Kind == yaml3.MappingNode {
				st.indent, indentSeen = min(max(d, 2), 9), true
			}
			if !listSeen && v.Kind == yaml3.SequenceNode {
				st.compact, listSeen = v.Column == k.Column, true
			}
		}
		for _, c := range n.Content {
			if indentSeen && listSeen && itemSeen {
				return
			}
			walk(c)
		}
	}
	walk(n)
	return st
}

// usesAnchors reports whether the tree n has an anchor, an alias or a merge key.
func usesAnchors(n *yaml3.Node) bool {
	if n.Anchor != "" || n.Kind == yaml3.AliasNode || n.Kind == yaml3.MappingNode && hasMergeKey(n) {
		return true
	}
	for _, c := range n.Content {
		if usesAnchors(c) {
			return true
		}
	}
	return false
}

// encode writes the node tree n as YAML in style st, lines never folded (yaml.v3 folds none by
// default: a sidecar's arguments and JSON in an environment variable stay on their line).
func encode(n *yaml3.Node, st style) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil { // the encoder's own errors are returned; this is a bug
			out, err = nil, fmt.Errorf("writing YAML: %v", r)
		}
	}()
	var b bytes.Buffer
	enc := yaml3.NewEncoder(&b)
	enc.SetIndent(st.indent)
	if st.compact {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// lineBreaks gives out, written with \n, the line breaks of body: \r\n when body has them.
func lineBreaks(out, body []byte) []byte {
	if !bytes.Contains(body, []byte("\r\n")) {
		return out
	}
	return bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
}

// leadingComments is the lines of comments and blank lines that body starts with.
func leadingComments(body []byte) []byte {
	end := 0
	for line := range strings.Lines(string(body)) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			break
		}
		end += len(line)
	}
	return body[:end]
}
