package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The flag.Value types below parse strictly: every malformed value is an error, never a silent
// fallback to a default (scuttle "ignores" invalid values; kvij/scuttle's silent 15-minute
// give-up came from such a default).

// durationValue is a non-negative Go duration ("1.5s", "250ms", "0").
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a duration (use a unit, like 500ms, 30s or 2m)")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// countValue is a non-negative integer.
type countValue struct{ n *int }

func (v countValue) String() string {
	if v.n == nil || *v.n < 0 {
		return ""
	}
	return strconv.Itoa(*v.n)
}

func (v countValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a whole number")
	}
	if n < 0 {
		return errors.New("must not be negative")
	}
	*v.n = n
	return nil
}

// boolValue accepts what strconv.ParseBool accepts: 1, t, true, 0, f, false (any case).
type boolValue struct{ b *bool }

func (v boolValue) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(*v.b)
}

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a boolean (use true or false)")
	}
	*v.b = b
	return nil
}

// IsBoolFlag lets "--flag" mean "--flag=true".
func (v boolValue) IsBoolFlag() bool { return true }

// notValue is a boolValue that stores the opposite: --no-wait sets Config.Wait to false.
type notValue struct{ b *bool }

func (v notValue) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(!*v.b)
}

func (v notValue) Set(s string) error {
	var b bool
	if err := (boolValue{&b}).Set(s); err != nil {
		return err
	}
	*v.b = !b
	return nil
}

// IsBoolFlag lets "--no-wait" mean "--no-wait=true".
func (v notValue) IsBoolFlag() bool { return true }

// choiceValue is one of a fixed list of words (any case), each standing for a value of T:
// --on-timeout start-anyway is true, --log-level warn is slog.LevelWarn.
type choiceValue[T comparable] struct {
	p      *T
	words  []string
	values []T // values[i] is what words[i] stands for
}

// words is the choiceValue of a string type whose values are the words themselves.
func words[T ~string](p *T, values ...T) choiceValue[T] {
	v := choiceValue[T]{p: p, values: values}
	for _, x := range values {
		v.words = append(v.words, string(x))
	}
	return v
}

func (v choiceValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	if i := slices.Index(v.values, *v.p); i >= 0 {
		return v.words[i]
	}
	return fmt.Sprint(*v.p)
}

func (v choiceValue[T]) Set(s string) error {
	i := slices.Index(v.words, strings.ToLower(strings.TrimSpace(s)))
	if i < 0 {
		return fmt.Errorf("must be one of %s", strings.Join(v.words, ", "))
	}
	*v.p = v.values[i]
	return nil
}

// stringValue is any string.
type stringValue struct{ s *string }

func (v stringValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}

func (v stringValue) Set(s string) error { *v.s = s; return nil }

// urlValue is an absolute http:// URL with a host.
type urlValue struct{ s *string }

func (v urlValue) String() string { return stringValue(v).String() }

func (v urlValue) Set(s string) error {
	u, err := parseURL(s)
	if err != nil {
		return err
	}
	*v.s = u.String()
	return nil
}

// urlListValue is a list of http:// URLs: repeat the flag, or separate them with commas.
type urlListValue struct{ list *[]string }

func (v urlListValue) String() string {
	if v.list == nil {
		return ""
	}
	return strings.Join(*v.list, ",")
}

func (v urlListValue) Set(s string) error {
	var errs []error
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		u, err := parseURL(part)
		if err != nil {
			errs = append(errs, fmt.Errorf("%q: %w", maskUserinfo(part), err))
			continue
		}
		*v.list = append(*v.list, u.String())
	}
	return errors.Join(errs...)
}
