// Package stream reads and writes what kubectl reads with -f: a stream of YAML documents
// separated by ---, or of JSON objects, each a Kubernetes object (a List's items being objects
// too). Objects are decoded JSON (map[string]any), never typed structs, so every field survives,
// decoded by internal/shared/jsonlite as every reader of a pod decodes, and numbers are kept
// exactly (json.Number).
//
// Write changes no more than the objects changed: a document whose object is as it was read is
// written back byte for byte, and in a changed YAML document only the lines of the nodes that
// changed are written, the others copied as they were read (see Write), so that a GitOps diff
// of `kubectl sidesync inject` shows what inject changed and nothing else.
package stream

import (
	"bytes"
	"fmt"
	"io"

	"github.com/sidesync/sidesync/internal/shared/manifest"
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

// MaxDepth bounds how deeply a document's objects and arrays may nest. A Pod nests about 15
// deep, a CustomResourceDefinition's schema a few dozen; what is deeper is no manifest, and would
// only cost the recursive code after the reader (inject, the writer) stack and time.
const MaxDepth = 512

// Document is one document of a stream.
type Document struct {
	N      int            // its position in the stream, from 1, not counting comments alone
	Object map[string]any // nil for an empty document (null)

	src *source // where Read found it; nil for a document made by the caller
}

// source is what Write needs to write a document as it was read: its bytes, and the object
// read from them, to tell whether Object changed since.
type source struct {
	format Format
	// pre is what comes before the document: separators and chunks of comments alone (YAML),
	// white space (JSON). body is the document itself. post, of the stream's last document
	// only, is what follows it. pre+body+post of all documents is the whole input.
	pre, body, post []byte
	read            []byte // the object as read, encoded by canonical
}

// Read reads a whole stream: JSON when its first character is { or [, else YAML. Its error
// names the document that is not an object, or not YAML or JSON at all; a YAML mapping or a
// JSON object with a key twice is an error too, since one of the values would be dropped
// silently.
// A stream larger than MaxInput is refused before it is parsed: a YAML or JSON parser needs
// several times its input in memory, and no Kubernetes object comes near (the API server takes
// requests of 3 MiB at most, etcd values of 1.5 MiB).
//
// YAML is read as kubectl reads it (sigs.k8s.io/yaml), with one difference: a plain scalar
// written as a JSON number is that number exactly (json.Number of its text), where kubectl's
// reader makes a float64 of it (123456789012345678901234567890 becomes 1.2345678901234568e+29,
// 1.50 becomes 1.5) or, out of float64's range, a string (1e400).
func Read(r io.Reader) ([]Document, Format, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, YAML, err
	}
	if len(data) > MaxInput {
		return nil, YAML, fmt.Errorf("input larger than %d MiB: not a manifest kubectl could apply", MaxInput>>20)
	}
	if looksJSON(data) {
		docs, err := readJSON(data)
		return docs, JSON, err
	}
	docs, err := readYAML(data)
	return docs, YAML, err
}

// looksJSON reports whether Read takes data for JSON: its first character is { or [.
func looksJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// Each calls fn with every object of the documents, a List's items one by one with the type an
// item without one inherits (manifest.Items walks them), and puts what fn returns in its place.
// where names the object in errors: "document 2", "document 2, items[0]"; fn's errors come back
// as they are, and should name it.
func Each(docs []Document, fn func(obj map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error)) error {
	for i := range docs {
		d := &docs[i]
		if d.Object == nil {
			continue
		}
		doc := fmt.Sprintf("document %d", d.N)
		var fnErr error
		out, err := manifest.Items(d.Object, func(item map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
			if where == "" {
				where = doc
			} else {
				where = doc + ", " + where
			}
			out, err := fn(item, tm, where)
			fnErr = err
			return out, err
		})
		switch {
		case fnErr != nil:
			return fnErr
		case err != nil:
			return fmt.Errorf("%s: %w", doc, err)
		}
		d.Object = out
	}
	return nil
}
