// Package jsonlite is sidesync's one JSON decoder, for the pod binary and the cluster side
// alike, so that a Pod read from the Kubernetes API in the pod and a manifest or an
// AdmissionReview's object read by kubectl-sidesync or the webhook become the same values for
// internal/shared/manifest, catalog, config and restart to read: Decode reads a document into
// the generic values (map[string]any, []any, string, json.Number, bool, nil), and Append writes
// them back. It accepts exactly what encoding/json accepts, and decodes it to the same values as
// encoding/json's Decoder with UseNumber, which FuzzDecode checks against encoding/json itself.
//
// It is here, rather than encoding/json's decoder, for the pod binary: that decoder (its
// reflection, and the sort code it instantiates; log/slog links only the encoder) measured 94 KB
// of the stripped build with Go 1.26 (5,972,130 bytes against 5,877,922), most of what the
// binary has left under its 6 MB bound, for the same values. Numbers are encoding/json's
// Number, the one number type: what the cluster side's libraries (encoding/json,
// sigs.k8s.io/yaml) write as the number it is, at no cost to the pod binary, which links
// encoding/json for log/slog already. Standard library only.
package jsonlite

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is how deeply arrays and objects may nest by default, as in encoding/json.
const MaxDepth = 10000

// Decode reads data, which must hold one JSON value and nothing else but white space. An
// object's key given twice takes its last value, as encoding/json does; invalid UTF-8 and
// unpaired surrogates in strings become U+FFFD, as there. It is Options{}.Decode.
func Decode(data []byte) (any, error) { return Options{}.Decode(data) }

// Options are the limits of a decoding. The zero Options are encoding/json's; the cluster side
// reads manifests from anyone with tighter ones (internal/cluster/stream).
type Options struct {
	// MaxDepth bounds how deeply arrays and objects may nest; 0 is MaxDepth. A deeper document
	// is an error that says "nested deeper than N levels".
	MaxDepth int
	// UniqueKeys refuses an object with a key twice (`key "k" twice in one object`), where
	// encoding/json keeps the last value and drops the other silently.
	UniqueKeys bool
}

// Decode reads data, which must hold one JSON value and nothing else but white space, within
// the limits of o.
func (o Options) Decode(data []byte) (any, error) {
	d := o.decoder(data)
	v, err := d.first()
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.data) {
		return nil, &SyntaxError{fmt.Sprintf("%v: invalid character %s after the value", ErrTrailing, quoteChar(d.data[d.i])), d.i, ErrTrailing}
	}
	return v, nil
}

// DecodeFirst reads the value that data holds first, after white space, and returns it with the
// offset just past it; what follows is not looked at, as encoding/json's Decoder reads a stream
// of values one at a time.
func (o Options) DecodeFirst(data []byte) (v any, end int, err error) {
	d := o.decoder(data)
	if v, err = d.first(); err != nil {
		return nil, 0, err
	}
	return v, d.i, nil
}

func (o Options) decoder(data []byte) decoder {
	d := decoder{data: data, maxDepth: o.MaxDepth, unique: o.UniqueKeys}
	if d.maxDepth <= 0 {
		d.maxDepth = MaxDepth
	}
	return d
}

// ErrTrailing is in the error for a document that holds more than one value.
var ErrTrailing = errors.New("something follows the value")

// SyntaxError is an error in a JSON document, with the offset of the byte it is at.
type SyntaxError struct {
	msg    string
	Offset int
	err    error
}

func (e *SyntaxError) Error() string { return e.msg }

// Unwrap is ErrTrailing for a document that holds more than one value.
func (e *SyntaxError) Unwrap() error { return e.err }

type decoder struct {
	data     []byte
	i        int
	maxDepth int
	unique   bool // refuse a key twice in one object
}

// errorf is the error for the byte at d.i: "invalid character 'x' after the value".
func (d *decoder) errorf(where string) error {
	if d.i >= len(d.data) {
		return &SyntaxError{"unexpected end of JSON input", d.i, nil}
	}
	return &SyntaxError{fmt.Sprintf("invalid character %s %s", quoteChar(d.data[d.i]), where), d.i, nil}
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

// first reads the value that the data holds first, after white space.
func (d *decoder) first() (any, error) {
	d.space()
	return d.value(0)
}

func (d *decoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if d.i >= len(d.data) {
		return nil, d.errorf("")
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, d.errorf("looking for beginning of value")
}

func (d *decoder) literal(word string) error {
	for j := 0; j < len(word); j++ {
		if d.i >= len(d.data) || d.data[d.i] != word[j] {
			return d.errorf("in literal " + word + " (expecting " + quoteChar(word[j]) + ")")
		}
		d.i++
	}
	return nil
}

// tooDeep is the error for an array or object that opens deeper than allowed.
func (d *decoder) tooDeep() error {
	return &SyntaxError{fmt.Sprintf("nested deeper than %d levels", d.maxDepth), d.i, nil}
}

func (d *decoder) object(depth int) (any, error) {
	if depth > d.maxDepth {
		return nil, d.tooDeep()
	}
	d.i++ // {
	m := map[string]any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return nil, d.errorf("looking for beginning of object key string")
		}
		at := d.i
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		k := key.(string)
		if d.unique {
			if _, twice := m[k]; twice {
				return nil, &SyntaxError{fmt.Sprintf("key %q twice in one object", k), at, nil}
			}
		}
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return nil, d.errorf("after object key")
		}
		d.i++
		d.space()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.i < len(d.data) && d.data[d.i] == ',' {
			d.i++
			d.space()
			continue
		}
		if d.i < len(d.data) && d.data[d.i] == '}' {
			d.i++
			return m, nil
		}
		return nil, d.errorf("after object key:value pair")
	}
}

func (d *decoder) array(depth int) (any, error) {
	if depth > d.maxDepth {
		return nil, d.tooDeep()
	}
	d.i++ // [
	l := []any{}
	d.space()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return l, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
		d.space()
		if d.i < len(d.data) && d.data[d.i] == ',' {
			d.i++
			d.space()
			continue
		}
		if d.i < len(d.data) && d.data[d.i] == ']' {
			d.i++
			return l, nil
		}
		return nil, d.errorf("after array element")
	}
}

// number reads a number by JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() (any, error) {
	start := d.i
	if d.data[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.data) && d.data[d.i] == '0':
		d.i++
	case d.i < len(d.data) && '1' <= d.data[d.i] && d.data[d.i] <= '9':
		d.digits()
	default:
		return nil, d.errorf("in numeric literal")
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if !d.digits() {
			return nil, d.errorf("after decimal point in numeric literal")
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if !d.digits() {
			return nil, d.errorf("in exponent of numeric literal")
		}
	}
	return json.Number(d.data[start:d.i]), nil
}

// digits reads one digit or more, and reports whether there was one.
func (d *decoder) digits() bool {
	start := d.i
	for d.i < len(d.data) && '0' <= d.data[d.i] && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// string reads a string, d.i at its opening quote.
func (d *decoder) string() (any, error) {
	d.i++ // "
	start := d.i
	// The common case: no escape, valid UTF-8.
	for d.i < len(d.data) {
		c := d.data[d.i]
		if c == '"' {
			s := d.data[start:d.i]
			d.i++
			if utf8.Valid(s) {
				return string(s), nil
			}
			return string(appendValid(nil, s)), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		d.i++
	}
	b := append([]byte(nil), d.data[start:d.i]...)
	for d.i < len(d.data) {
		switch c := d.data[d.i]; {
		case c == '"':
			d.i++
			if utf8.Valid(b) {
				return string(b), nil
			}
			return string(appendValid(nil, b)), nil
		case c < 0x20:
			return nil, d.errorf("in string literal")
		case c == '\\':
			d.i++
			if d.i >= len(d.data) {
				return nil, d.errorf("")
			}
			switch e := d.data[d.i]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := d.hex4(d.i + 1)
				if !ok {
					return nil, d.errorf("in \\u hexadecimal character escape")
				}
				d.i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := d.surrogate(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							d.i += 6
							b = utf8.AppendRune(b, dec)
							break
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return nil, d.errorf("in string escape code")
			}
			d.i++
		default:
			b = append(b, c)
			d.i++
		}
	}
	return nil, d.errorf("")
}

// surrogate reads the \uXXXX that follows d.i, if there is one.
func (d *decoder) surrogate() (rune, bool) {
	j := d.i + 1
	if j+1 < len(d.data) && d.data[j] == '\\' && d.data[j+1] == 'u' {
		return d.hex4(j + 2)
	}
	return 0, false
}

// hex4 reads four hexadecimal digits at j.
func (d *decoder) hex4(j int) (rune, bool) {
	if j+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[j : j+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// appendValid appends s with each invalid UTF-8 byte replaced by U+FFFD.
func appendValid(b, s []byte) []byte {
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[:size]...)
		}
		s = s[size:]
	}
	return b
}

// ErrUnsupported is the error of Append for a value it cannot write.
var ErrUnsupported = errors.New("not a JSON value")

// Append appends v as JSON: nil, bool, string, json.Number, int, int32, int64, float64, []any,
// []string, map[string]any, map[string][]string. Objects are written with their keys sorted, as encoding/json writes
// maps; strings as encoding/json writes them without HTML escaping.
func Append(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return AppendString(b, v), nil
	case json.Number:
		return appendNumber(b, string(v))
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case float64:
		return AppendFloat(b, v)
	case []string:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, s := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, s)
		}
		return append(b, ']'), nil
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = Append(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		return appendObject(b, v)
	case map[string][]string:
		return appendObject(b, v)
	}
	return nil, fmt.Errorf("%w: %T", ErrUnsupported, v)
}

func appendNumber(b []byte, n string) ([]byte, error) {
	if !isNumber(n) {
		return nil, fmt.Errorf("%w: number %q", ErrUnsupported, n)
	}
	return append(b, n...), nil
}

// isNumber reports whether s is a JSON number, by JSON's grammar.
func isNumber(s string) bool {
	if s == "" || !isNumberStart(s[0]) {
		return false
	}
	d := decoder{data: []byte(s)}
	_, err := d.number()
	return err == nil && d.i == len(s)
}

func isNumberStart(c byte) bool { return c == '-' || '0' <= c && c <= '9' }

func appendObject[V any](b []byte, m map[string]V) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, k), ':')
		var err error
		if b, err = Append(b, any(m[k])); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendFloat appends f as encoding/json writes a float64: the shortest decimal that reads back
// as f, in exponent form below 1e-6 and from 1e21. NaN and the infinities are no JSON.
func AppendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, f)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// AppendString appends s as a JSON string, as encoding/json writes it with HTML escaping off:
// \" \\ \b \f \n \r \t, other control characters as \u00XX, invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

const hex = "0123456789abcdef"
