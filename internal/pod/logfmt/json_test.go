package logfmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

type valuer struct{ v any }

func (v valuer) LogValue() slog.Value { return slog.AnyValue(v.v) }

// TestJSONAsSlog: the JSON handler writes what log/slog's JSONHandler writes (durations made
// readable, as sidesync always did with it), for every kind of value sidesync logs and every way
// of grouping: the same JSON, and the same bytes but for the escapes of \b and \f.
func TestJSONAsSlog(t *testing.T) {
	when := time.Date(2026, 12, 3, 15, 4, 5, 123456789, time.UTC)
	type step func(slog.Handler) slog.Handler
	with := func(args ...any) step {
		return func(h slog.Handler) slog.Handler { return slog.New(h).With(args...).Handler() }
	}
	group := func(name string) step { return func(h slog.Handler) slog.Handler { return h.WithGroup(name) } }
	cases := []struct {
		name  string
		steps []step
		attrs []any
	}{
		{"kinds", nil, []any{"s", "text", "i", -42, "u", uint64(42), "f", 1.5, "big", 1e21, "tiny", 1e-7, "b", true,
			"d", 1500 * time.Microsecond, "t", when, "err", errors.New("boom"), "nil", nil, "list", []string{"a", "b"},
			"valuer", valuer{"resolved"}, "durvaluer", valuer{time.Second}}},
		{"strings that need escaping", nil, []any{"q", `a "quoted" \ back`, "ctl", "a\nb\tc\r\x00\x1f\x7f", "html", "<a&b>",
			"utf8", "é😀", "bad", "x\xffy", "sep", "\u2028\u2029", `k"ey`, 1}},
		{"groups", nil, []any{slog.Group("g", "a", 1, slog.Group("h", "b", 2)), slog.Group("empty"), slog.Group("", "inline", 3),
			slog.Group("onlyempty", slog.Group("e")), "", "emptykey"}},
		{"With then WithGroup", []step{with("pre", 1), group("g"), with("in", 2)}, []any{"rec", 3}},
		{"WithGroup with no attributes", []step{group("g"), group("h")}, nil},
		{"WithGroup, attributes on the record only", []step{group("g"), group("h")}, []any{"a", 1}},
		{"WithGroup, empty attributes", []step{group("g"), with(slog.Group("e"))}, []any{"a", 1}},
		{"nested With", []step{with("a", 1), group("g"), with("b", 2), group("h"), with("c", 3)}, []any{"d", 4, slog.Group("x", "y", 5)}},
		{"WithGroup, With, nothing on the record", []step{group("g"), with("b", 2), group("h")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got, want bytes.Buffer
			ours := slog.Handler(&jsonHandler{w: &got, mu: new(sync.Mutex), level: slog.LevelDebug})
			theirs := slog.Handler(slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: readableDurations}))
			for _, s := range tc.steps {
				ours, theirs = s(ours), s(theirs)
			}
			r := slog.NewRecord(when, slog.LevelWarn, "the message \"x\"", 0)
			r.Add(tc.attrs...)
			if err := ours.Handle(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			if err := theirs.Handle(t.Context(), r); err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got.Bytes(), &g); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, got.String())
			}
			if err := json.Unmarshal(want.Bytes(), &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nslog %s", got.String(), want.String())
			}
			slogBytes := strings.NewReplacer(`\u0008`, `\b`, `\u000c`, `\f`).Replace(want.String())
			if got.String() != slogBytes {
				t.Errorf("bytes differ:\ngot  %s\nslog %s", got.String(), slogBytes)
			}
		})
	}
}

// readableDurations is what sidesync gave slog's JSONHandler before it had its own handler.
func readableDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(Round(a.Value.Duration()).String())
	}
	return a
}

// TestJSONOddValues: values slog would marshal with encoding/json are written without it.
func TestJSONOddValues(t *testing.T) {
	var b bytes.Buffer
	l := slog.New(&jsonHandler{w: &b, mu: new(sync.Mutex), level: slog.LevelInfo})
	l.Info("m", "nan", math.NaN(), "inf", math.Inf(1), "struct", struct{ A int }{1}, "map", map[string]any{"k": []any{"v"}})
	var m map[string]any
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	if m["nan"] != "NaN" || m["inf"] != "+Inf" || m["struct"] != "{1}" || !reflect.DeepEqual(m["map"], map[string]any{"k": []any{"v"}}) {
		t.Errorf("got %s", b.String())
	}
}
