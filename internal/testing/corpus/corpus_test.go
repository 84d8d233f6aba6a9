package corpus

import "testing"

// TestLoad: every file of the corpus records where it comes from, under a licence the project
// may copy, and there are enough of them.
func TestLoad(t *testing.T) {
	ms, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 20 {
		t.Errorf("%d manifests, want at least 20", len(ms))
	}
	for _, m := range ms {
		if len(m.Original) == 0 {
			t.Errorf("%s: nothing after its header", m.Name)
		}
	}
}
