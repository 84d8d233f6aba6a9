package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Write writes the documents that are not empty, in format f.
func Write(w io.Writer, docs []Document, f Format) error {
	var b bytes.Buffer
	for _, d := range docs {
		if d.Object == nil {
			continue
		}
		j, err := marshal(d.Object, f == JSON)
		if err != nil {
			return fmt.Errorf("document %d: %w", d.N, err)
		}
		if f == JSON {
			b.Write(j)
			continue
		}
		y, err := yaml.JSONToYAML(yamlReadable(j))
		if err != nil {
			return fmt.Errorf("document %d: %w", d.N, err)
		}
		// Read takes a stream that starts with { for JSON: an empty object ("{}") written first
		// is marked as YAML by a separator before it.
		if b.Len() > 0 || bytes.HasPrefix(y, []byte("{")) {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// yamlReadable escapes, in JSON text, the characters that JSON writes as they are but a YAML
// reader refuses ("control characters are not allowed": DEL, the C1 controls, U+FFFE and
// U+FFFF) or reads as a line break, which it folds into a space inside a quoted string (NEL,
// U+2028, U+2029: a value "\x85" came back as " "; found by FuzzRead). They can only be in
// strings, where \uXXXX is the same character to YAML.
func yamlReadable(j []byte) []byte {
	if !bytes.ContainsFunc(j, notYAML) {
		return j
	}
	var b bytes.Buffer
	for _, r := range string(j) {
		if notYAML(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.Bytes()
}

// notYAML reports whether a YAML reader refuses r in its input (YAML 1.1's printable set) or
// takes it for a line break.
func notYAML(r rune) bool {
	return r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0xfffe || r == 0xffff
}

func marshal(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	err := enc.Encode(v)
	return b.Bytes(), err
}
