// Package manifest reads and writes what kubectl reads with -f: a stream of YAML documents
// separated by ---, or of JSON objects, each a Kubernetes object (a List's items being objects
// too). Objects are decoded JSON (map[string]any), never typed structs, so every field survives,
// and numbers are kept exactly (json.Number).
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Format is how a stream is written.
type Format int

// The formats.
const (
	YAML Format = iota // documents separated by ---
	JSON               // objects one after another, as kubectl reads them
)

// MaxInput bounds what Read reads: 16 MiB, five times the largest request the API server
// accepts.
const MaxInput = 16 << 20

// Document is one document of a stream.
type Document struct {
	N      int            // its position in the stream, from 1, not counting comments alone
	Object map[string]any // nil for an empty document (null)
}

// Read reads a whole stream: JSON when its first character is { or [, else YAML. Its error
// names the document that is not an object, or not YAML or JSON at all; a YAML mapping or a
// JSON object with a key twice is an error too, since one of the values would be dropped
// silently.
// A stream larger than MaxInput is refused before it is parsed: a YAML or JSON parser needs
// several times its input in memory, and no Kubernetes object comes near (the API server takes
// requests of 3 MiB at most, etcd values of 1.5 MiB).
func Read(r io.Reader) ([]Document, Format, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, YAML, err
	}
	if len(data) > MaxInput {
		return nil, YAML, fmt.Errorf("input larger than %d MiB: not a manifest kubectl could apply", MaxInput>>20)
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		docs, err := readJSON(data)
		return docs, JSON, err
	}
	docs, err := readYAML(data)
	return docs, YAML, err
}

func readYAML(data []byte) ([]Document, error) {
	var docs []Document
	rd := yamlutil.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for n := 1; ; n++ {
		chunk, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if blank(chunk) {
			n-- // comments alone are no document: the count is the user's
			continue
		}
		j, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if err := checkShape(j); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		obj, err := object(json.NewDecoder(bytes.NewReader(j)))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		docs = append(docs, Document{N: n, Object: obj})
	}
}

// blank reports whether a YAML chunk holds nothing but comments and white space.
func blank(chunk []byte) bool {
	for line := range strings.Lines(string(chunk)) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

func readJSON(data []byte) ([]Document, error) {
	var docs []Document
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		if !dec.More() {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("document %d: not a JSON object", n)
			}
			return docs, nil
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if err := checkShape(raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		obj, err := object(json.NewDecoder(bytes.NewReader(raw)))
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		docs = append(docs, Document{N: n, Object: obj})
	}
}

// MaxDepth bounds how deeply a document's objects and arrays may nest. A Pod nests about 15
// deep, a CustomResourceDefinition's schema a few dozen; what is deeper is no manifest, and would
// only cost the recursive code after the reader (inject, the writer) stack and time.
const MaxDepth = 512

// checkShape refuses a JSON object with a key twice, as the YAML reader does (encoding/json
// would keep the last value and drop the other silently), and nesting deeper than MaxDepth. raw
// is valid JSON.
func checkShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type level struct {
		keys   map[string]bool // nil in an array
		expect bool            // the next string token is a key
	}
	var stack []level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].keys != nil && stack[top].expect {
			if k, ok := tok.(string); ok {
				if stack[top].keys[k] {
					return fmt.Errorf("key %q twice in one object", k)
				}
				stack[top].keys[k], stack[top].expect = true, false
				continue
			}
		}
		if top >= 0 && stack[top].keys != nil {
			stack[top].expect = true // a value was read (or the object ends)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == MaxDepth {
				return fmt.Errorf("nested deeper than %d levels", MaxDepth)
			}
			l := level{}
			if tok == json.Delim('{') {
				l = level{keys: make(map[string]bool), expect: true}
			}
			stack = append(stack, l)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:top]
			if top-1 >= 0 && stack[top-1].keys != nil {
				stack[top-1].expect = true
			}
		}
	}
}

// object decodes one value, which must be an object or null.
func object(dec *json.Decoder) (map[string]any, error) {
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	return nil, errors.New("not an object (a mapping with apiVersion and kind)")
}

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

// Each calls fn with every object of the documents, a List's items one by one (a List is an
// object whose kind is List or ends in List, with items), and puts what fn returns in its
// place. where names the object in errors: "document 2", "document 2, items[0]".
func Each(docs []Document, fn func(obj map[string]any, where string) (map[string]any, error)) error {
	for i := range docs {
		d := &docs[i]
		if d.Object == nil {
			continue
		}
		where := fmt.Sprintf("document %d", d.N)
		items, isList := d.Object["items"].([]any)
		if !isList || !strings.HasSuffix(fmt.Sprint(d.Object["kind"]), "List") {
			out, err := fn(d.Object, where)
			if err != nil {
				return err
			}
			d.Object = out
			continue
		}
		for j, it := range items {
			w := fmt.Sprintf("%s, items[%d]", where, j)
			obj, ok := it.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: not an object", w)
			}
			out, err := fn(obj, w)
			if err != nil {
				return err
			}
			items[j] = out
		}
	}
	return nil
}
