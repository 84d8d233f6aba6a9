package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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
	if err := checkShape(j); err != nil {
		return nil, nil, err
	}
	obj, err := object(json.NewDecoder(bytes.NewReader(j)))
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

// readJSON reads a stream of JSON values, each an object or null.
func readJSON(data []byte) ([]Document, error) {
	var docs []Document
	dec := json.NewDecoder(bytes.NewReader(data))
	prev := 0
	for n := 1; ; n++ {
		if !dec.More() {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("document %d: not a JSON object", n)
			}
			if len(docs) > 0 {
				docs[len(docs)-1].src.post = data[prev:]
			}
			return docs, nil
		}
		start := int(dec.InputOffset()) // More skipped the white space before the value
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		obj, read, err := jsonObject(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		end := int(dec.InputOffset())
		src := &source{format: JSON, pre: data[prev:start], body: data[start:end], read: read}
		docs = append(docs, Document{N: n, Object: obj, src: src})
		prev = end
	}
}

// jsonObject reads one JSON value and returns it with its canonical encoding.
func jsonObject(raw []byte) (map[string]any, []byte, error) {
	if err := checkShape(raw); err != nil {
		return nil, nil, err
	}
	obj, err := object(json.NewDecoder(bytes.NewReader(raw)))
	if err != nil {
		return nil, nil, err
	}
	read, err := canonical(obj)
	return obj, read, err
}

// errNotObject is the error for a document that is a scalar or a list.
var errNotObject = errors.New("not an object (a mapping with apiVersion and kind)")

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
	return nil, errNotObject
}
