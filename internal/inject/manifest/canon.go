package manifest

import (
	"bytes"
	"encoding/json"
)

// canonical encodes v as compact JSON, keys sorted, numbers as their text: two objects are the
// same JSON, json.Number for json.Number, exactly when their encodings are the same bytes. It
// is also how Write accepts what callers put in Object (any type encoding/json takes).
func canonical(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
