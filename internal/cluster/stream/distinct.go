package stream

import (
	"fmt"

	yaml3 "go.yaml.in/yaml/v3"
)

// distinctKeys refuses a mapping of the tree n with two keys that sigs.k8s.io/yaml makes one
// JSON key of: 1 and "1", 0 and 0. are two keys to YAML, one to JSON, and which value is kept
// depends on Go's map order (found by FuzzWriteChanged: "0: &b {0.}\n<<: *b" read as either of
// two objects). The keys a merge key (<<) brings count too. The same YAML key twice is the
// reader's to refuse (sigs.k8s.io/yaml's strict mode does, merged keys included); keys
// distinctKeys cannot name (other tags, collections) are left to it too.
func distinctKeys(n *yaml3.Node) error {
	if n.Kind == yaml3.MappingNode {
		if err := mappingKeys(n); err != nil {
			return err
		}
	}
	for _, c := range n.Content {
		if err := distinctKeys(c); err != nil {
			return err
		}
	}
	return nil
}

// mappingKeys checks the keys of the mapping n, its own and those merged into it.
func mappingKeys(n *yaml3.Node) error {
	var keys []*yaml3.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if isMergeKey(n.Content[i]) {
			keys = mergedKeys(n.Content[i+1], keys, 0)
		} else {
			keys = append(keys, n.Content[i])
		}
	}
	names := make(map[string]*yaml3.Node, len(keys))
	for _, k := range keys {
		if err := addKey(names, k); err != nil {
			return err
		}
	}
	return nil
}

// addKey adds k to the keys by JSON name, and refuses a second, other key of the same name.
func addKey(names map[string]*yaml3.Node, k *yaml3.Node) error {
	name, ok := jsonKey(k)
	if !ok {
		return nil
	}
	if o := names[name]; o != nil && !sameKey(o, k) {
		return fmt.Errorf("key %q twice in one mapping, as %s and %s", name, o.Value, k.Value)
	}
	names[name] = k
	return nil
}

// mergedKeys appends to keys those that the value v of a merge key brings: a mapping's (and
// what its own merge keys bring), or those of each mapping of a list.
func mergedKeys(v *yaml3.Node, keys []*yaml3.Node, depth int) []*yaml3.Node {
	for v.Kind == yaml3.AliasNode && v.Alias != nil && depth < MaxDepth {
		v, depth = v.Alias, depth+1
	}
	if depth >= MaxDepth {
		return keys
	}
	switch v.Kind {
	case yaml3.SequenceNode:
		for _, e := range v.Content {
			keys = mergedKeys(e, keys, depth+1)
		}
	case yaml3.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			if isMergeKey(v.Content[i]) {
				keys = mergedKeys(v.Content[i+1], keys, depth+1)
			} else {
				keys = append(keys, v.Content[i])
			}
		}
	}
	return keys
}

// sameKey reports whether the scalars a and b are the same YAML key: the same value of the
// same type, as yaml.v3 resolves them.
func sameKey(a, b *yaml3.Node) bool {
	return a.Tag == b.Tag && a.Value == b.Value
}
