package stream

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// wide is a document with a mapping of n keys and a list of n named objects, each commented.
func wide(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\ndata:\n")
	for i := range n {
		fmt.Fprintf(&b, "  # key %d\n  k%d: v%d # value\n", i, i, i)
	}
	b.WriteString("env:\n")
	for i := range n {
		fmt.Fprintf(&b, "- name: E%d # variable\n  value: \"%d\"\n", i, i)
	}
	return b.String()
}

// changeWide changes one value of a wide document, adds a key, and puts a named object before
// its list, as inject does.
func changeWide(obj map[string]any) map[string]any {
	out := clone(obj).(map[string]any)
	data := out["data"].(map[string]any)
	data["k7"], data["added"] = "changed", "new"
	out["env"] = append([]any{map[string]any{"name": "FIRST", "value": "1"}}, out["env"].([]any)...)
	return out
}

// allocated is the bytes and the number of allocations f makes.
func allocated(f func()) (bytes, count uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, after.Mallocs - before.Mallocs
}

// TestWriteWideLinear: merging a change into a document of 10,000 keys and 10,000 list
// elements costs about ten times what it costs for 1,000 (linear), not a hundred times
// (quadratic), in bytes and in allocations, reading included.
func TestWriteWideLinear(t *testing.T) {
	type cost struct{ bytes, count uint64 }
	costs := map[int]cost{}
	for _, n := range []int{1000, 10000} {
		in := wide(n)
		var out bytes.Buffer
		b, c := allocated(func() {
			docs, f, err := Read(strings.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			docs[0].Object = changeWide(docs[0].Object)
			if err := Write(&out, docs, f); err != nil {
				t.Fatal(err)
			}
		})
		costs[n] = cost{b, c}
		if !strings.Contains(out.String(), "  # key 9\n  k9: v9 # value\n") || !strings.Contains(out.String(), "- name: FIRST\n") {
			t.Fatalf("%d keys: not merged:\n%.500s", n, out.String())
		}
	}
	small, large := costs[1000], costs[10000]
	t.Logf("1,000 keys: %d KiB in %d allocations; 10,000 keys: %d KiB in %d", small.bytes>>10, small.count, large.bytes>>10, large.count)
	if large.bytes > 20*small.bytes || large.count > 20*small.count {
		t.Errorf("ten times the keys cost %.1f times the bytes and %.1f times the allocations; want about 10",
			float64(large.bytes)/float64(small.bytes), float64(large.count)/float64(small.count))
	}
}

// TestWriteDeep: a change at the bottom of a document nested MaxDepth deep is merged, and reads
// back.
func TestWriteDeep(t *testing.T) {
	depth := MaxDepth - 1
	var in strings.Builder
	for i := range depth {
		in.WriteString(strings.Repeat(" ", i) + "a: # level\n")
	}
	in.WriteString(strings.Repeat(" ", depth) + "b: 1 # bottom\n")
	docs, f := read(t, in.String())
	obj := clone(docs[0].Object).(map[string]any)
	bottom := obj
	for range depth {
		bottom = bottom["a"].(map[string]any)
	}
	bottom["c"] = "new"
	docs[0].Object = obj
	out := write(t, docs, f)
	if !strings.Contains(out, "b: 1 # bottom\n") {
		t.Errorf("not merged:\n%.300s", out)
	}
	again, _ := read(t, out)
	if diff := cmp.Diff(objects(docs), objects(again)); diff != "" {
		t.Errorf("reads back as (-want +got):\n%s", diff)
	}
}
