package jsonlite

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// stdDecode decodes data as encoding/json does into an interface with UseNumber, the whole input
// one value, with json.Number turned into Number: what Decode must give.
func stdDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("something follows the value")
	}
	return fromStd(v), nil
}

func fromStd(v any) any {
	switch v := v.(type) {
	case json.Number:
		return Number(v)
	case []any:
		for i := range v {
			v[i] = fromStd(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = fromStd(v[k])
		}
	}
	return v
}

// checkDecode is the property FuzzDecode checks: Decode accepts what encoding/json accepts, gives
// the same values, and Append writes values that both read back as they were.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := stdDecode(data)
	got, err := Decode(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("Decode(%q): error %v, encoding/json: %v", data, err, wantErr)
	case err != nil:
		var se *SyntaxError
		if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
			t.Fatalf("Decode(%q): %v is no SyntaxError with an offset in the input", data, err)
		}
		return
	case !reflect.DeepEqual(got, want):
		t.Fatalf("Decode(%q)\n got %#v\nwant %#v", data, got, want)
	}
	out, err := Append(nil, got)
	if err != nil {
		t.Fatalf("Append(%#v): %v", got, err)
	}
	if again, err := Decode(out); err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("Append wrote %s, which reads back as %#v, %v; want %#v", out, again, err, got)
	}
	if std, err := stdDecode(out); err != nil || !reflect.DeepEqual(std, got) {
		t.Fatalf("Append wrote %s, which encoding/json reads as %#v, %v", out, std, err)
	}
}

var seeds = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a":"1"}},"spec":{"containers":[{"name":"a","args":["x",""]}]}}`,
	` [1, -0, 0.5, 1e3, 1E-7, -12.5e+10, 123456789012345678901234567890] `,
	`"\u00e9\ud83d\ude00 \ud800 \udc00x \ud800\u0041 \"\\\/\b\f\n\r\t"`,
	"\"raw \xff\xfe bytes \xc3\"", `{"a":1,"a":2}`, `{}`, `[]`, `null`, `true`, `false`, `""`,
	`{"a" 1}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `"\x"`, `"\u12"`, "\"a\nb\"", `nul`, `tru`,
	`{"a":1}x`, `[`, `{`, `"abc`, ``, `  `, "\ufeff{}", `{"a":[{"b":null}]}`, `[1e400]`, "\"\u2028\u2029\"",
}

func TestDecode(t *testing.T) {
	for _, s := range seeds {
		checkDecode(t, []byte(s))
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	checkDecode(t, []byte(deep))
	checkDecode(t, []byte(strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth)))
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

// checkAppendString: AppendString writes s as encoding/json does without HTML escaping.
func checkAppendString(t *testing.T, s string) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := string(AppendString(nil, s)); got != strings.TrimSuffix(want.String(), "\n") {
		t.Errorf("AppendString(%q) = %s, encoding/json %s", s, got, want.String())
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "<a&b>", "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é😀", "bad \xff\xfe", "\u2028\u2029", "\xed\xa0\x80"} {
		checkAppendString(t, s)
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\x00\xff\u2028")
	f.Fuzz(checkAppendString)
}

// TestAppendFloat writes floats as encoding/json does.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 1e-300, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2} {
		want, _ := json.Marshal(f)
		if got, err := AppendFloat(nil, f); err != nil || string(got) != string(want) {
			t.Errorf("AppendFloat(%v) = %s, %v; encoding/json %s", f, got, err, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := AppendFloat(nil, f); !errors.Is(err, ErrUnsupported) {
			t.Errorf("AppendFloat(%v): %v, want ErrUnsupported", f, err)
		}
	}
}

// TestAppend writes the generic values, encoding/json's Number among them, as encoding/json
// writes them (keys sorted).
func TestAppend(t *testing.T) {
	v := map[string]any{"b": []any{json.Number("42"), Number("-1.5e3"), int32(7), int64(-8), 9, 2.5, true, nil},
		"a": map[string][]string{"linux/arm64": {"/app", "x y"}, "linux/amd64": nil}, "c": []string{"é"}, "d": map[string]any{}}
	got, err := Append(nil, v)
	v["b"].([]any)[1] = json.Number("-1.5e3") // encoding/json writes a Number of its own as a number
	want, _ := json.Marshal(v)
	if err != nil || string(got) != string(want) {
		t.Errorf("Append = %s, %v\nencoding/json %s", got, err, want)
	}
	for _, bad := range []any{json.Number("1x"), Number(""), struct{}{}, math.NaN(), []any{make(chan int)}} {
		if _, err := Append(nil, bad); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Append(%#v): %v, want ErrUnsupported", bad, err)
		}
	}
}
