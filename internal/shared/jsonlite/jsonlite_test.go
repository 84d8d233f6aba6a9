package jsonlite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

// stdDecode decodes data as encoding/json does into an interface with UseNumber, the whole input
// one value: what Decode must give.
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
	return v, nil
}

// stdFirst decodes the first value of data as encoding/json's Decoder does, and says where it
// ends: what DecodeFirst must give.
func stdFirst(data []byte) (any, int, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, 0, err
	}
	return v, int(dec.InputOffset()), nil
}

// stdShape walks the tokens of a document that encoding/json reads and says what Options with
// UniqueKeys and maxDepth refuse in it, first in the document: a key twice in one object, or
// nesting deeper than maxDepth. It is how internal/cluster/stream checked documents before
// jsonlite did.
func stdShape(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
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
			stack[top].expect = true
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return fmt.Errorf("nested deeper than %d levels", maxDepth)
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

// checkDecode is the property FuzzDecode checks: Decode accepts what encoding/json accepts, gives
// the same values, and Append writes values that both read back as they were; DecodeFirst reads
// a stream's first value as encoding/json's Decoder does; with UniqueKeys and a MaxDepth, Decode
// refuses exactly the documents with a key twice in one object or nested deeper, with the same
// message as a walk of encoding/json's tokens.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	checkFirst(t, data)
	checkShape(t, data)
	want, wantErr := stdDecode(data)
	got, err := Decode(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("Decode(%q): error %v, encoding/json: %v", data, err, wantErr)
	case err != nil:
		checkSyntaxError(t, data, err)
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

// checkSyntaxError: a refusal is a *SyntaxError at an offset in the input.
func checkSyntaxError(t *testing.T, data []byte, err error) {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data) {
		t.Fatalf("Decode(%q): %v is no SyntaxError with an offset in the input", data, err)
	}
}

// checkFirst: DecodeFirst gives the value and the end that encoding/json's Decoder gives.
func checkFirst(t *testing.T, data []byte) {
	t.Helper()
	want, wantEnd, wantErr := stdFirst(data)
	got, end, err := Options{}.DecodeFirst(data)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("DecodeFirst(%q): error %v, encoding/json's Decoder: %v", data, err, wantErr)
	case err != nil:
		checkSyntaxError(t, data, err)
	case !reflect.DeepEqual(got, want) || end != wantEnd:
		t.Fatalf("DecodeFirst(%q) = %#v, ending at %d; encoding/json's Decoder %#v, ending at %d", data, got, end, want, wantEnd)
	}
}

// shapeDepth is the MaxDepth checkShape decodes with: small, so that short inputs reach it.
const shapeDepth = 3

// checkShape: Options with UniqueKeys and a MaxDepth refuse what stdShape finds, with its message,
// and otherwise read what Decode reads.
func checkShape(t *testing.T, data []byte) {
	t.Helper()
	if _, err := stdDecode(data); err != nil {
		return // a syntax error: Decode's to refuse
	}
	wantErr := stdShape(data, shapeDepth)
	got, err := Options{MaxDepth: shapeDepth, UniqueKeys: true}.Decode(data)
	switch {
	case wantErr != nil && (err == nil || err.Error() != wantErr.Error()):
		t.Fatalf("Options.Decode(%q) = %#v, %v; want the error %q", data, got, err, wantErr)
	case wantErr == nil && err != nil:
		t.Fatalf("Options.Decode(%q): %v; want it read", data, err)
	case err != nil:
		checkSyntaxError(t, data, err)
	}
}

var seeds = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a":"1"}},"spec":{"containers":[{"name":"a","args":["x",""]}]}}`,
	` [1, -0, 0.5, 1e3, 1E-7, -12.5e+10, 123456789012345678901234567890] `,
	`"\u00e9\ud83d\ude00 \ud800 \udc00x \ud800\u0041 \"\\\/\b\f\n\r\t"`,
	"\"raw \xff\xfe bytes \xc3\"", `{"a":1,"a":2}`, `{}`, `[]`, `null`, `true`, `false`, `""`,
	`{"a" 1}`, `[1,]`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `"\x"`, `"\u12"`, "\"a\nb\"", `nul`, `tru`,
	`{"a":1}x`, `[`, `{`, `"abc`, ``, `  `, "\ufeff{}", `{"a":[{"b":null}]}`, `[1e400]`, "\"\u2028\u2029\"",
	`[{"a":1,"b":{"a":2},"a":3}]`, `[[[[1]]]]`, `[[[{}]]]`, `{"k":{"k":[{"k":1}],"x":1,"k":2}}`, `{} {}`, `1 2`, `[]]`,
}

func TestDecode(t *testing.T) {
	for _, s := range seeds {
		checkDecode(t, []byte(s))
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	checkDecode(t, []byte(deep))
	checkDecode(t, []byte(strings.Repeat("[", MaxDepth)+strings.Repeat("]", MaxDepth)))
}

// TestOptions: the limits refuse what they should, saying what and where, and nothing else.
func TestOptions(t *testing.T) {
	strict := Options{MaxDepth: 2, UniqueKeys: true}
	for _, tc := range []struct {
		name, in string
		o        Options
		err      string // "" for none
		offset   int
	}{
		{"a key twice", `{"a":1,"b":{},"a":2}`, strict, `key "a" twice in one object`, 14},
		{"a key twice, nested", `[{"k":1,"k":2}]`, strict, `key "k" twice in one object`, 8},
		{"the same key in two objects", `[{"k":1},{"k":2}]`, strict, "", 0},
		{"a key twice, allowed: the last value", `{"a":1,"a":2}`, Options{}, "", 0},
		{"as deep as allowed", `[{"a":1}]`, strict, "", 0},
		{"deeper than allowed", `[{"a":[]}]`, strict, "nested deeper than 2 levels", 6},
		{"deeper than encoding/json allows", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), Options{}, "nested deeper than 10000 levels", MaxDepth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.o.Decode([]byte(tc.in))
			var se *SyntaxError
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("Decode(%s): %v, want it read", tc.in, err)
			case tc.err != "" && (!errors.As(err, &se) || se.Error() != tc.err || se.Offset != tc.offset):
				t.Errorf("Decode(%s): %#v, want a SyntaxError %q at %d", tc.in, err, tc.err, tc.offset)
			}
		})
	}
}

// TestDecodeFirst reads a stream of values one at a time, as encoding/json's Decoder does.
func TestDecodeFirst(t *testing.T) {
	stream := []byte(" {\"kind\":\"A\"}\n{\"kind\":\"B\",\"n\":1.50}null[] 7 ")
	var got []any
	for at := 0; len(bytes.TrimSpace(stream[at:])) > 0; {
		v, end, err := Options{}.DecodeFirst(stream[at:])
		if err != nil {
			t.Fatalf("DecodeFirst at %d: %v", at, err)
		}
		got, at = append(got, v), at+end
	}
	want := []any{map[string]any{"kind": "A"}, map[string]any{"kind": "B", "n": json.Number("1.50")}, nil, []any{}, json.Number("7")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %#v\nwant %#v", got, want)
	}
	for _, s := range []string{"1x", "{}x", "true false", `"a""b"`, "nul", "1.", "[1,", " ", ""} {
		checkFirst(t, []byte(s))
	}
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

// TestAppend writes the generic values as encoding/json writes them (keys sorted).
func TestAppend(t *testing.T) {
	v := map[string]any{"b": []any{json.Number("42"), json.Number("-1.5e3"), int32(7), int64(-8), 9, 2.5, true, nil},
		"a": map[string][]string{"linux/arm64": {"/app", "x y"}, "linux/amd64": nil}, "c": []string{"é"}, "d": map[string]any{}}
	got, err := Append(nil, v)
	want, _ := json.Marshal(v)
	if err != nil || string(got) != string(want) {
		t.Errorf("Append = %s, %v\nencoding/json %s", got, err, want)
	}
	for _, bad := range []any{json.Number("1x"), json.Number(""), struct{}{}, math.NaN(), []any{make(chan int)}} {
		if _, err := Append(nil, bad); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Append(%#v): %v, want ErrUnsupported", bad, err)
		}
	}
}

// benchPod is a Pod as the API server returns one: four containers with env, managed fields.
func benchPod() []byte {
	var containers, managed []any
	for i := range 4 {
		var env []any
		for j := range 20 {
			env = append(env, map[string]any{"name": fmt.Sprintf("VAR_%d_%d", i, j), "value": strings.Repeat("v", 40)})
		}
		containers = append(containers, map[string]any{"name": fmt.Sprintf("c%d", i), "image": "example/app:1.2.3", "env": env,
			"ports": []any{map[string]any{"containerPort": 8080 + i, "protocol": "TCP"}}, "resources": map[string]any{"limits": map[string]any{"cpu": "1"}}})
	}
	for i := range 6 {
		managed = append(managed, map[string]any{"manager": fmt.Sprintf("m%d", i), "operation": "Update", "time": "2026-12-06T10:00:00Z",
			"fieldsV1": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{`k:{"name":"c0"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}}}}}})
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "job-x", "namespace": "jobs", "labels": map[string]any{"app": "job"}, "managedFields": managed},
		"spec":     map[string]any{"restartPolicy": "Never", "terminationGracePeriodSeconds": 30, "containers": containers}})
	return b
}

// BenchmarkDecode decodes a Pod with Decode and with encoding/json's Decoder (UseNumber), which
// gives the same values: what the pod binary and the cluster side pay per Pod.
func BenchmarkDecode(b *testing.B) {
	pod := benchPod()
	b.Run("jsonlite", func(b *testing.B) {
		b.SetBytes(int64(len(pod)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(pod)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := stdDecode(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
}
