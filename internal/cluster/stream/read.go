package stream

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	yaml3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// readYAML reads a YAML stream: each chunk that holds more than comments is a document.
func readYAML(data []byte) ([]Document, error) {
	chunks, splitErr := splitYAML(data)
	var docs []Document
	prev := 0 // where the last document ended
	for _, c := range chunks {
		body := data[c.start:c.end]
		text := yamlText(body)
		if blank(text) {
			continue // comments alone are no document: the count is the user's
		}
		n := len(docs) + 1
		obj, read, err := yamlObject(text)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		src := &source{format: YAML, pre: data[prev:c.start], body: body, read: read}
		docs = append(docs, Document{N: n, Object: obj, src: src})
		prev = c.end
	}
	if splitErr != nil {
		return nil, fmt.Errorf("document %d: %w", len(docs)+1, splitErr)
	}
	if len(docs) > 0 {
		docs[len(docs)-1].src.post = data[prev:]
	}
	return docs, nil
}

// yamlObject reads one YAML document as kubectl does, numbers made exact, and returns it with
// its canonical encoding.
func yamlObject(text []byte) (map[string]any, []byte, error) {
	j, err := yaml.YAMLToJSONStrict(text)
	if err != nil {
		return nil, nil, err
	}
	v, err := limits().Decode(j)
	if err != nil {
		return nil, nil, err
	}
	obj, err := object(v)
	if err != nil {
		return nil, nil, err
	}
	// The node tree checks what sigs.k8s.io/yaml does not, and makes numbers exact. A
	// document that yaml.v3 cannot parse is read as kubectl reads it.
	var doc yaml3.Node
	if yaml3.Unmarshal(text, &doc) == nil && len(doc.Content) == 1 {
		if err := distinctKeys(doc.Content[0]); err != nil {
			return nil, nil, err
		}
		exact(doc.Content[0], obj)
	}
	read, err := canonical(obj)
	return obj, read, err
}

// readJSON reads a stream of JSON values, each an object or null, one after another as
// encoding/json's Decoder (and so kubectl) reads them: white space between them, or none.
func readJSON(data []byte) ([]Document, error) {
	var docs []Document
	prev := 0 // where the last document ended
	for n := 1; ; n++ {
		start := len(data) - len(bytes.TrimLeft(data[prev:], " \t\r\n"))
		if start == len(data) {
			if len(docs) > 0 {
				docs[len(docs)-1].src.post = data[prev:]
			}
			return docs, nil
		}
		obj, end, err := jsonObject(data[start:])
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		end += start
		read, err := canonical(obj)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		src := &source{format: JSON, pre: data[prev:start], body: data[start:end], read: read}
		docs = append(docs, Document{N: n, Object: obj, src: src})
		prev = end
	}
}

// jsonObject reads the JSON value that data starts with, which must be an object or null, and
// says where it ends.
func jsonObject(data []byte) (map[string]any, int, error) {
	v, end, err := limits().DecodeFirst(data)
	if err != nil {
		return nil, 0, err
	}
	obj, err := object(v)
	return obj, end, err
}

// limits are how Read decodes JSON, a document's or what sigs.k8s.io/yaml made of one: with
// internal/shared/jsonlite, as every reader of a pod decodes (numbers as json.Number); a key
// twice in one object refused, as the YAML reader refuses it (encoding/json would keep the last
// value and drop the other silently); nesting bounded by MaxDepth.
func limits() jsonlite.Options {
	return jsonlite.Options{MaxDepth: MaxDepth, UniqueKeys: true}
}

// errNotObject is the error for a document that is a scalar or a list.
var errNotObject = errors.New("not an object (a mapping with apiVersion and kind)")

// object is a decoded value that must be an object or null.
func object(v any) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	}
	return nil, errNotObject
}
