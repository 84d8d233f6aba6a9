package restart

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// stdParseRules is how ParseRules read rules before it used jsonlite: encoding/json into the
// typed rules, unknown fields refused. It is FuzzParseRulesAsBefore's oracle.
func stdParseRules(data string) ([]Rule, error) {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	var rules []Rule
	if err := dec.Decode(&rules); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("something follows the list")
	}
	for _, r := range rules {
		if err := r.validate(); err != nil {
			return nil, err
		}
	}
	if rules == nil {
		rules = []Rule{}
	}
	return rules, nil
}

// caseVariant reports whether v holds an object key that matches a field of the rules only when
// case is ignored, which encoding/json accepts and ParseRules does not (the API server writes
// the fields as they are spelt).
func caseVariant(v any) bool {
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			if caseVariant(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			for _, f := range []string{"action", "exitCodes", "operator", "values"} {
				if k != f && strings.EqualFold(k, f) {
					return true
				}
			}
			if caseVariant(e) {
				return true
			}
		}
	}
	return false
}

// FuzzParseRulesAsBefore: ParseRules accepts the rules encoding/json accepted, as the same rules, and
// refuses the rest (but for fields spelt in another case); FormatRules writes what it reads back.
func FuzzParseRulesAsBefore(f *testing.F) {
	for _, s := range []string{
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[42,-1]}}]`, `[]`, `null`, `[null]`,
		`[{"action":"RestartAllContainers","exitCodes":{"operator":"NotIn","values":null}}]`,
		`[{"Action":"Restart","exitCodes":{"operator":"In","values":[1]}}]`, `[{"action":"Restart","exitCodes":null}]`,
		`[{"action":"Restart","exitCodes":{"operator":"In","values":[2147483648]}}]`, `[{"action":1}]`, `{}`, `[] x`,
		`[{"action":"Restart","action":"Restart","exitCodes":{"operator":"In","values":[1.0]}}]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		got, err := ParseRules(data)
		want, wantErr := stdParseRules(data)
		switch {
		case err == nil && wantErr != nil:
			t.Fatalf("ParseRules(%q) = %v; encoding/json refused it: %v", data, got, wantErr)
		case err != nil && wantErr == nil:
			if v, derr := jsonlite.Decode([]byte(data)); derr != nil || !caseVariant(v) {
				t.Fatalf("ParseRules(%q): %v; encoding/json read %v", data, err, want)
			}
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("ParseRules(%q) = %#v, encoding/json %#v", data, got, want)
		case err == nil:
			out := FormatRules(got)
			std, _ := json.Marshal(got)
			if again, err := ParseRules(out); err != nil || !reflect.DeepEqual(again, got) || out != string(std) {
				t.Fatalf("FormatRules wrote %s (encoding/json %s), read back as %v, %v", out, std, again, err)
			}
		}
	})
}
