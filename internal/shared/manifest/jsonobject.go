package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// DecodeJSONObject reads one JSON object as every reader of a pod reads objects, with
// internal/shared/jsonlite: numbers as json.Number, so that they are written back with the text
// they came with. It is how an object sent by the API server (an AdmissionReview's) is read;
// YAML goes through internal/cluster/stream, which decodes with jsonlite too.
func DecodeJSONObject(raw []byte) (map[string]any, error) {
	v, err := jsonlite.Decode(raw)
	switch {
	case errors.Is(err, jsonlite.ErrTrailing):
		return nil, errors.New("the object is followed by more JSON")
	case err != nil:
		return nil, fmt.Errorf("the object is not a JSON object: %w", err)
	case v == nil:
		return nil, errors.New("the object is null")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the object is not a JSON object: %.40s", bytes.TrimSpace(raw))
	}
	return obj, nil
}

// ObjectOf is a typed Kubernetes object (a k8s.io/api corev1.Pod) as the decoded JSON that
// every reader of a pod takes: written with encoding/json, read back with DecodeJSONObject. The
// numbers are then json.Number as in any manifest, where apimachinery's ToUnstructured makes
// int64 and float64 of them, which internal/shared/restart does not read.
func ObjectOf(v any) (map[string]any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return DecodeJSONObject(raw)
}
