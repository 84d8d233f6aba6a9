package inject

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGolden injects each manifest in testdata with both deliveries, and with init-copy and
// Options.Native, and compares the whole
// result with testdata/golden/NAME.DELIVERY.yaml (go test -run TestGolden -update rewrites
// them; read the diff before committing it).
func TestGolden(t *testing.T) {
	for _, in := range []string{"pod", "job", "cronjob", "deployment"} {
		for _, d := range []Delivery{InitCopy, ImageVolume, "native"} {
			t.Run(in+"/"+string(d), func(t *testing.T) {
				src, err := os.ReadFile(filepath.Join("testdata", in+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				o := opts()
				o.Delivery = d
				if d == "native" { // init-copy with Options.Native
					o.Delivery, o.Native = InitCopy, true
				}
				out, r := apply(t, decode(t, string(src)), o, nil)
				got := "# " + r.String() + "\n" + toYAML(t, out)
				golden := filepath.Join("testdata", "golden", in+"."+string(d)+".yaml")
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("inject %s (-%s +got):\n%s", in, golden, diff)
				}
			})
		}
	}
}

// TestIdempotent injects every manifest twice, the second time from the first's output as
// kubectl-sidesync would read it: the whole object must come back the same, and the report
// must say so.
func TestIdempotent(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for _, d := range []Delivery{InitCopy, ImageVolume, "native"} {
			t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml")+"/"+string(d), func(t *testing.T) {
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				o := opts()
				o.Delivery, o.Sidecars = d, []string{"vault"}
				if d == "native" {
					o.Delivery, o.Native = InitCopy, true
				}
				once, _ := apply(t, decode(t, string(src)), o, nil)
				in := roundTrip(t, once)
				twice, r := apply(t, in, o, nil)
				if diff := cmp.Diff(toYAML(t, once), toYAML(t, twice)); diff != "" {
					t.Errorf("the second inject changed the object (-once +twice):\n%s", diff)
				}
				if r.Changed || len(r.Wrapped) > 0 {
					t.Errorf("second report %q: Changed %v, Wrapped %q; want unchanged, nothing wrapped", r, r.Changed, r.Wrapped)
				}
			})
		}
	}
}
