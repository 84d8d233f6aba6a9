package main

// Hostile manifests of docs/FAULTS.md: whatever kubectl sidesync inject is given, the outcome is
// a bounded error (exit 2, a message that names the problem, nothing on stdout), never an
// out-of-memory death or a hang.

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/cluster/stream"
)

// billionLaughs is the YAML alias bomb: nine levels of nine aliases, 9^9 strings once expanded.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\na0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(p+",", 8)+p)
	}
	return b.String()
}

// hostileInputs are the manifests and what the error must say.
func hostileInputs() []struct{ name, stdin, want string } {
	bigValue := strings.Repeat("x", 50<<20)
	return []struct{ name, stdin, want string }{
		{"YAML alias bomb", billionLaughs(), "document 1: "},
		{"deeply nested YAML flow", "a: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", "document 1: "},
		{"deeply nested YAML blocks", deepBlocks(3000), "document 1: nested deeper than 512 levels"},
		{"JSON nested just too deep", strings.Repeat(`{"a":`, 513) + "1" + strings.Repeat("}", 513), "document 1: nested deeper than 512 levels"},
		{"deeply nested JSON", strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000), "document 1: "},
		{"a 50 MB YAML document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: " + bigValue + "}\n", "larger than"},
		{"a 50 MB JSON document", `{"apiVersion":"v1","kind":"ConfigMap","data":{"a":"` + bigValue + `"}}`, "larger than"},
		{"duplicate keys", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\nmetadata: {name: d}\n", `"kind" already set`},
		{"duplicate keys in JSON", `{"apiVersion":"v1","kind":"ConfigMap","kind":"Secret"}`, `document 1: key "kind" twice in one object`},
		{"duplicate nested keys in JSON", `{"kind":"Pod","spec":{"containers":[{"name":"a","command":["x"],"command":["y"]}]}}`, `document 1: key "command" twice`},
		{"a scalar document", "kind: ConfigMap\n---\n42\n", "document 2: not an object"},
		{"a list document", "- a\n- b\n", "document 1: not an object"},
		{"a JSON array", `[{"kind":"Pod"}]`, "document 1: not an object"},
		{"a JSON string", `"kind"`, "document 1: "},
		{"binary", "\x00\x01\x02\xff\xfe", "document 1: "},
	}
}

// deepBlocks is a YAML mapping nested depth deep in block style.
func deepBlocks(depth int) string {
	var b strings.Builder
	for i := range depth {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", depth) + "b: 1\n")
	return b.String()
}

// TestInjectHostileManifests: each hostile input ends in exit 2 within the guard, for inject
// and for lint (which read through the same reader), with the memory the process allocated for
// it bounded (well under the 1 GiB an alias bomb expands to).
func TestInjectHostileManifests(t *testing.T) {
	commands := []struct {
		name string
		run  func(stdin string) (int, string, string)
	}{
		{"inject", func(stdin string) (int, string, string) { return injectRun(t, stdin, injectImage) }},
		{"lint", func(stdin string) (int, string, string) { return lintRun(stdin) }},
	}
	for _, command := range commands {
		for _, tt := range hostileInputs() {
			t.Run(command.name+"/"+tt.name, func(t *testing.T) {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				type outcome struct {
					code           int
					stdout, stderr string
				}
				done := make(chan outcome, 1)
				start := time.Now()
				go func() {
					code, stdout, stderr := command.run(tt.stdin)
					done <- outcome{code, stdout, stderr}
				}()
				var o outcome
				select {
				case o = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s still running after 30s", command.name)
				}
				took := time.Since(start)
				runtime.ReadMemStats(&after)
				allocated := after.TotalAlloc - before.TotalAlloc
				t.Logf("exit %d in %v, %d MiB allocated", o.code, took, allocated>>20)
				if o.code != 2 || o.stdout != "" {
					t.Errorf("exit %d, stdout %.100q; want 2 and nothing", o.code, o.stdout)
				}
				if !strings.Contains(o.stderr, tt.want) {
					t.Errorf("stderr does not say %q:\n%.500s", tt.want, o.stderr)
				}
				if len(o.stderr) > 4096 {
					t.Errorf("the error is %d bytes long: it should be one bounded line", len(o.stderr))
				}
				if limit := uint64(8 * stream.MaxInput); allocated > limit {
					t.Errorf("allocated %d MiB, more than %d MiB", allocated>>20, limit>>20)
				}
			})
		}
	}
}
