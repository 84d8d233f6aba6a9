package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// checkShape refuses a JSON object with a key twice, as the YAML reader does (encoding/json
// would keep the last value and drop the other silently), and nesting deeper than MaxDepth. raw
// is valid JSON. Numbers are tokens as they are: 1e400 is a JSON number, beyond float64.
func checkShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
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
