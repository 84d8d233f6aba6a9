package stream

import (
	"errors"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// errMismatch says that a document's node tree does not hold the object read from it, as far
// as merge can tell: the merge is not safe, and the document is written afresh.
var errMismatch = errors.New("the YAML nodes do not match the object read from them")

// merge returns the node for v, the new value of o, which was read from n. It walks n, o and v
// together, once: what is the same in o and v keeps its node (style, quoting, comments); a
// mapping keeps its keys in their order and appends the new ones, sorted; a list is matched by
// its elements' names, else by its common ends (scalars) or by index; a value that changed
// gets a new node (render) with the comments of the old one.
func merge(n *yaml3.Node, o, v any) (*yaml3.Node, error) {
	switch o := o.(type) {
	case map[string]any:
		if v, ok := v.(map[string]any); ok {
			return mergeMapping(n, o, v)
		}
	case []any:
		if v, ok := v.([]any); ok {
			return mergeSequence(n, o, v)
		}
	default:
		if n.Kind != yaml3.ScalarNode {
			return nil, errMismatch
		}
		if sameScalar(o, v) {
			return n, nil
		}
	}
	return replace(n, v), nil
}

// replace is a new node for v in n's place, with n's comments.
func replace(n *yaml3.Node, v any) *yaml3.Node {
	r := render(v)
	r.HeadComment, r.LineComment, r.FootComment = n.HeadComment, n.LineComment, n.FootComment
	return r
}

// mergeMapping merges v into the mapping n, read as o: the keys of n in their order, less
// those v lacks (with their comments), then v's new keys, sorted.
func mergeMapping(n *yaml3.Node, o, v map[string]any) (*yaml3.Node, error) {
	if n.Kind != yaml3.MappingNode || len(n.Content) != 2*len(o) {
		return nil, errMismatch
	}
	content := make([]*yaml3.Node, 0, 2*len(v))
	seen := make(map[string]bool, len(o))
	for i := 0; i < len(n.Content); i += 2 {
		k, ok := jsonKey(n.Content[i])
		old, read := o[k]
		if !ok || !read || seen[k] {
			return nil, errMismatch
		}
		seen[k] = true
		x, kept := v[k]
		if !kept {
			continue
		}
		m, err := merge(n.Content[i+1], old, x)
		if err != nil {
			return nil, err
		}
		content = append(content, keyComment(n.Content[i], m), m)
	}
	var added []string
	for k := range v {
		if !seen[k] {
			added = append(added, k)
		}
	}
	slices.Sort(added)
	for _, k := range added {
		content = append(content, stringNode(k), render(v[k]))
	}
	return withContent(n, content), nil
}

// keyComment returns the key k of the value v. A block collection's line comment is its key's
// (yaml.v3 reads "key: # comment" so, and writes a block collection's own line comment
// nowhere): the comment of a value that was written on the key's line, and now is a block,
// goes to the key.
func keyComment(k, v *yaml3.Node) *yaml3.Node {
	if isBlock(v) && v.LineComment != "" && k.LineComment == "" {
		k.LineComment, v.LineComment = v.LineComment, ""
	}
	return k
}

// headComment puts the line comment of n, a block collection without a key (an element of a
// list, the document), above it.
func headComment(n *yaml3.Node) *yaml3.Node {
	if isBlock(n) && n.LineComment != "" {
		n.HeadComment = strings.TrimPrefix(n.HeadComment+"\n"+n.LineComment, "\n")
		n.LineComment = ""
	}
	return n
}

// isBlock reports whether n is a collection written as a block.
func isBlock(n *yaml3.Node) bool {
	return (n.Kind == yaml3.MappingNode || n.Kind == yaml3.SequenceNode) && n.Style&yaml3.FlowStyle == 0 && len(n.Content) > 0
}

// withContent gives the collection n its new content. A flow collection becomes a block one
// when it was empty (its style was no choice: {} is how YAML writes an empty mapping), and when
// it gets an object or list, which render makes a block: inject adds lists of mounts and
// variables to a container written {name: app, image: app}, which would otherwise become one
// line of hundreds of characters. Since YAML allows no block inside a flow collection (and
// yaml.v3 writes one as flow), this goes up through the flow collections around it, to the
// first block one; their old values stay flow.
func withContent(n *yaml3.Node, content []*yaml3.Node) *yaml3.Node {
	grows := len(n.Content) == 0 && len(content) > 0
	for _, c := range content {
		grows = grows || isBlock(c)
	}
	if grows {
		n.Style &^= yaml3.FlowStyle
	}
	n.Content = content
	return n
}
