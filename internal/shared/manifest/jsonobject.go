package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// DecodeJSONObject reads one JSON object as the rest of sidesync reads objects: numbers as
// json.Number, so that they are written back with the text they came with. It is how an
// object sent by the API server (an AdmissionReview's) is read; YAML goes through
// internal/cluster/stream.
func DecodeJSONObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, fmt.Errorf("the object is not a JSON object: %w", err)
	}
	if obj == nil {
		return nil, errors.New("the object is null")
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("the object is followed by more JSON")
	}
	return obj, nil
}
