package stream

import (
	"bytes"
	"encoding/json"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
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

// decoded is the value that canonical encoded, decoded as Read decodes: maps, slices, strings,
// json.Number, bools and nil only. The encoding is canonical's, so decoding cannot fail.
func decoded(c []byte) any {
	v, _ := jsonlite.Decode(c)
	return v
}

// sameScalar reports whether a and b are the same JSON scalar: numbers by their text.
func sameScalar(a, b any) bool {
	switch a := a.(type) {
	case string:
		b, ok := b.(string)
		return ok && a == b
	case json.Number:
		b, ok := b.(json.Number)
		return ok && a == b
	case bool:
		b, ok := b.(bool)
		return ok && a == b
	case nil:
		return b == nil
	}
	return false
}
