package stream

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// randChoices are choices from a seeded generator.
type randChoices struct{ r *rand.Rand }

func (c randChoices) next(n int) int { return c.r.IntN(n) }

// TestWriteChangedProperty changes the documents of real manifests at random, 500 times, and
// checks what checkChanged checks, and more: each changed document was spliced into its YAML
// (only the lines of what changed written), never merged as a whole or written afresh, as none
// of them has an anchor.
func TestWriteChangedProperty(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/*.yaml", "../inject/testdata/*.yaml", "../inject/testdata/golden/*.yaml",
		"../../testing/corpus/testdata/*.yaml", "../../../deploy/examples/*.yaml", "../../../deploy/examples/plain/*.yaml"} {
		m, _ := filepath.Glob(pattern)
		for _, f := range m {
			if data, err := os.ReadFile(f); err == nil {
				if _, _, err := Read(bytes.NewReader(data)); err == nil { // the corpus has files kubectl refuses too
					files = append(files, f)
				}
			}
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d manifests: %v", len(files), files)
	}
	for seed := range uint64(500) {
		name := files[seed%uint64(len(files))]
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs, format := read(t, string(data))
		changed := checkChanged(t, docs, format, randChoices{rand.New(rand.NewPCG(seed, 1))})
		for i, d := range docs {
			now, err := canonical(d.Object)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := spliced(d.src, decoded(now), now); changed[i] && !ok {
				t.Fatalf("%s, seed %d: document %d was not spliced:\n%s", name, seed, d.N, write(t, docs[i:i+1], YAML))
			}
		}
	}
}
