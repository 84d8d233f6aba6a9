package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Find returns the rendered object of kind and name, or nil.
func Find(objs []map[string]any, kind, name string) map[string]any {
	for _, o := range objs {
		if o["kind"] != kind {
			continue
		}
		if md, _ := o["metadata"].(map[string]any); md != nil && md["name"] == name {
			return o
		}
	}
	return nil
}

// OfKind returns the rendered objects of kind.
func OfKind(objs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// Decode decodes a rendered object into a typed one, refusing fields the type does not have
// (a misspelled field in a template is an error, not a field the API server drops).
func Decode(obj map[string]any, into any) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("%v %v: %w", obj["kind"], nameOf(obj), err)
	}
	return nil
}

func nameOf(obj map[string]any) any {
	md, _ := obj["metadata"].(map[string]any)
	return md["name"]
}
