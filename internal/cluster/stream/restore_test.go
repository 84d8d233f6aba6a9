package stream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAlign: lines are matched in order, unique ones first, then their equal neighbours;
// spaces inside a line do not count, indentation and blank lines do.
func TestAlign(t *testing.T) {
	tests := []struct {
		name, orig, out string
		want            []int
	}{
		{"the same", "a\nb\n", "a\nb\n", []int{0, 1}},
		{"spacing", "a:   1  # c\n", "a: 1 # c\n", []int{0}},
		{"indentation counts", "  a\n", "a\n", []int{-1}},
		{"an inserted line", "a\nb\n", "a\nnew\nb\n", []int{0, -1, 1}},
		{"a removed line", "a\nold\nb\n", "a\nb\n", []int{0, 2}},
		{"blank lines match nothing", "a\n\nb\n", "a\n\nb\n", []int{0, -1, 2}},
		{"repeated lines next to unique ones", "x\nr\nr\ny\nr\n", "x\nr\nr\ny\nr\n", []int{0, 1, 2, 3, 4}},
		{"moved lines keep the order", "a\nb\nc\n", "c\na\nb\n", []int{-1, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := align(lines([]byte(tt.orig)), lines([]byte(tt.out)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("align(%q, %q) (-want +got):\n%s", tt.orig, tt.out, diff)
			}
		})
	}
}

// TestRestore: matched lines are written as the original has them, after the blank lines
// before them there; a changed line gets the blank lines of the line it replaces.
func TestRestore(t *testing.T) {
	orig := "a:   1  # one\n\n\nb: 2\n\nc: 3\n"
	out := "a: 1 # one\nb: 2\nc: 4\nd: 5\n"
	want := "a:   1  # one\n\n\nb: 2\n\nc: 4\nd: 5\n"
	if got := string(restore([]byte(orig), []byte(out))); got != want {
		t.Errorf("restore:\n%s\nwant\n%s", got, want)
	}
	if got := string(restore([]byte(orig), nil)); got != "" {
		t.Errorf("restore of nothing: %q", got)
	}
	if got := string(restore(nil, []byte(out))); got != out {
		t.Errorf("restore without an original: %q", got)
	}
}
