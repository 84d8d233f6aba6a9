package stream

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRestyle writes every document of the corpus, inject's testdata and the examples, and a
// few with block scalars, explicit keys and lists of lists, in each style a document may have:
// each reads back as the object it was written from.
func TestRestyle(t *testing.T) {
	inputs := []string{
		"a:\n  - |\n    line\n     deeper\n  - >-\n    folded\n  - k: |2-\n      indented\n    l: [x, {y: z}]\n" +
			"b:\n- - x\n  - - y\n- ? " + fmt.Sprintf("%0130d", 0) + "\n  : {v: [1, 2]}\n",
	}
	for _, pattern := range []string{"../inject/testdata/*.yaml", "../../testing/corpus/testdata/*.yaml", "../../../deploy/examples/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, string(data))
		}
	}
	styles := []style{{2, true, 2}, {2, false, 2}, {4, true, 2}, {4, false, 2}, {4, false, 4}, {3, true, 3}}
	for _, in := range inputs {
		docs, _, err := Read(bytes.NewReader([]byte(in)))
		if err != nil {
			continue // the corpus has files kubectl refuses too
		}
		for _, d := range docs {
			if d.Object == nil {
				continue
			}
			now, err := canonical(d.Object)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range styles {
				out, err := styled(render(decoded(now)), st)
				if err != nil {
					t.Fatal(err)
				}
				if !readsAs(out, now) {
					t.Fatalf("in style %+v, %s\ndoes not read back as %s", st, out, now)
				}
			}
		}
	}
}
