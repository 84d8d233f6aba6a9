package logfmt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// jsonHandler writes one JSON object per record, as log/slog's JSONHandler does ("time",
// "level", "msg", then the attributes, groups as nested objects, empty ones left out), with
// durations as readable strings ("1.5ms") rather than nanoseconds. It is sidesync's own so that
// the pod binary links no encoding/json: a value of another kind is written as JSON when it is a
// generic JSON value or a []string, as its message when it is an error, and as fmt prints it
// otherwise (slog would marshal it with encoding/json).
type jsonHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	level  slog.Leveler
	pre    []byte   // the attributes of WithAttrs, written, each after a comma
	groups []string // the groups of WithGroup
	opened int      // how many of groups pre has opened
}

func (h *jsonHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *jsonHandler) Handle(_ context.Context, r slog.Record) error {
	b := []byte{'{'}
	if !r.Time.IsZero() {
		b = append(r.Time.Round(0).AppendFormat(append(b, `"time":"`...), time.RFC3339Nano), `",`...)
	}
	b = jsonlite.AppendString(append(b, `"level":`...), r.Level.String())
	b = jsonlite.AppendString(append(b, `,"msg":`...), r.Message)
	b = append(b, h.pre...)
	w := jsonWriter{b: b, sep: true}
	opened := h.opened
	r.Attrs(func(a slog.Attr) bool {
		if a = resolve(a); a.Equal(slog.Attr{}) || isEmptyGroup(a) {
			return true
		}
		for ; opened < len(h.groups); opened++ {
			w.open(h.groups[opened])
		}
		w.attr(a)
		return true
	})
	for range opened {
		w.close()
	}
	w.b = append(w.b, '}', '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(w.b)
	return err
}

func (h *jsonHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	w := jsonWriter{b: append([]byte(nil), h.pre...), sep: true}
	for _, a := range as {
		if a = resolve(a); a.Equal(slog.Attr{}) || isEmptyGroup(a) {
			continue
		}
		for ; h2.opened < len(h2.groups); h2.opened++ {
			w.open(h2.groups[h2.opened])
		}
		w.attr(a)
	}
	h2.pre = w.b
	return &h2
}

func (h *jsonHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.groups = append(h2.groups[:len(h2.groups):len(h2.groups)], name)
	return &h2
}

// resolve resolves an attribute's value (slog.LogValuer) and renders a duration readably.
func resolve(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(Round(a.Value.Duration()).String())
	}
	return a
}

// isEmptyGroup reports whether a is a group with nothing to write, which slog leaves out.
func isEmptyGroup(a slog.Attr) bool {
	if a.Value.Kind() != slog.KindGroup {
		return false
	}
	for _, g := range a.Value.Group() {
		if g = resolve(g); !g.Equal(slog.Attr{}) && !isEmptyGroup(g) {
			return false
		}
	}
	return true
}

// jsonWriter writes the members of JSON objects; sep says a comma comes before the next.
type jsonWriter struct {
	b   []byte
	sep bool
}

func (w *jsonWriter) key(k string) {
	if w.sep {
		w.b = append(w.b, ',')
	}
	w.b = append(jsonlite.AppendString(w.b, k), ':')
	w.sep = true
}

func (w *jsonWriter) open(group string) {
	w.key(group)
	w.b = append(w.b, '{')
	w.sep = false
}

func (w *jsonWriter) close() {
	w.b = append(w.b, '}')
	w.sep = true
}

// attr writes a resolved attribute that is not empty. A group without a key puts its members in
// the object it is in, as slog does.
func (w *jsonWriter) attr(a slog.Attr) {
	v := a.Value
	if v.Kind() == slog.KindGroup {
		if a.Key != "" {
			w.open(a.Key)
		}
		for _, g := range v.Group() {
			if g = resolve(g); !g.Equal(slog.Attr{}) && !isEmptyGroup(g) {
				w.attr(g)
			}
		}
		if a.Key != "" {
			w.close()
		}
		return
	}
	w.key(a.Key)
	switch v.Kind() {
	case slog.KindString:
		w.b = jsonlite.AppendString(w.b, v.String())
	case slog.KindInt64:
		w.b = strconv.AppendInt(w.b, v.Int64(), 10)
	case slog.KindUint64:
		w.b = strconv.AppendUint(w.b, v.Uint64(), 10)
	case slog.KindFloat64:
		if b, err := jsonlite.AppendFloat(w.b, v.Float64()); err == nil {
			w.b = b
		} else {
			w.b = jsonlite.AppendString(w.b, strconv.FormatFloat(v.Float64(), 'g', -1, 64))
		}
	case slog.KindBool:
		w.b = strconv.AppendBool(w.b, v.Bool())
	case slog.KindTime:
		w.b = append(v.Time().AppendFormat(append(w.b, '"'), time.RFC3339Nano), '"')
	default:
		w.b = appendAny(w.b, v.Any())
	}
}

// appendAny writes a value of kind Any: an error as its message, a generic JSON value or a
// []string as JSON, anything else as fmt prints it.
func appendAny(b []byte, v any) []byte {
	if err, ok := v.(error); ok {
		return jsonlite.AppendString(b, err.Error())
	}
	if out, err := jsonlite.Append(b, v); err == nil {
		return out
	}
	return jsonlite.AppendString(b, fmt.Sprint(v))
}
