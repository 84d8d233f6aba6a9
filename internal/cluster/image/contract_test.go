package image

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"

	"github.com/google/go-cmp/cmp"
)

// TestContract: the image holds the binary where internal/cluster/inject's pods expect it, and the
// Dockerfile builds the layout that Build builds, from a binary built as scripts/release.sh
// builds it.
func TestContract(t *testing.T) {
	if Binary != contract.ImageBinary {
		t.Errorf("the image holds the binary at %s, internal/cluster/inject expects it at %s", Binary, contract.ImageBinary)
	}
	stages := dockerfile(t, "../../../Dockerfile")
	final := stages[len(stages)-1]
	if got := final.args("FROM"); !slices.Equal(got, []string{"scratch"}) {
		t.Errorf("the final stage is FROM %q, want scratch", got)
	}
	copies := final.args("COPY")
	if len(copies) != 1 || !strings.HasSuffix(copies[0], " "+Binary) {
		t.Errorf("the final stage copies %q, want one COPY to %s", copies, Binary)
	}
	if got := final.args("USER"); !slices.Equal(got, []string{User}) {
		t.Errorf("USER %q, want %s", got, User)
	}
	var entrypoint []string
	if got := final.args("ENTRYPOINT"); len(got) != 1 || json.Unmarshal([]byte(got[0]), &entrypoint) != nil {
		t.Errorf("ENTRYPOINT %q, want one in exec form (scratch has no shell)", got)
	}
	if diff := cmp.Diff([]string{Binary}, entrypoint); diff != "" {
		t.Errorf("ENTRYPOINT (-want +got):\n%s", diff)
	}
	for _, forbidden := range []string{"RUN", "CMD", "SHELL", "ENV"} {
		if got := final.args(forbidden); len(got) > 0 {
			t.Errorf("the final stage has %s %q; the image has the binary alone", forbidden, got)
		}
	}
	labels := strings.Join(final.args("LABEL"), " ")
	for _, l := range []string{LabelSource + `="` + DefaultSource + `"`, LabelVersion + "=", LabelRevision + "="} {
		if !strings.Contains(labels, l) {
			t.Errorf("LABEL lacks %s", l)
		}
	}
	checkBuildFlags(t, strings.Join(stages[0].args("RUN"), "\n"))
}

// checkBuildFlags checks that the Dockerfile builds the binary with scripts/release.sh itself,
// and makes it mode 0555 as Layer does.
func checkBuildFlags(t *testing.T, run string) {
	t.Helper()
	if !strings.Contains(run, "scripts/release.sh /out") || !strings.Contains(run, `PROGRAMS=sidesync PLATFORMS="$TARGETOS/$TARGETARCH"`) {
		t.Errorf("the Dockerfile does not build the binary with scripts/release.sh: %s", run)
	}
	if chmod := fmt.Sprintf("chmod %#o", Mode); !strings.Contains(run, chmod+" ") {
		t.Errorf("the Dockerfile's build does not %s the binary", chmod)
	}
}

// stage is a Dockerfile's stage: its instructions, each a keyword and its arguments.
type stage [][2]string

// args returns the arguments of every instruction keyword in s.
func (s stage) args(keyword string) []string {
	var args []string
	for _, in := range s {
		if in[0] == keyword {
			args = append(args, in[1])
		}
	}
	return args
}

// dockerfile reads the stages of the Dockerfile at path: continuation lines joined, comments
// dropped, the instructions before the first FROM (global ARGs) left out.
func dockerfile(t *testing.T, path string) []stage {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		keyword, args, _ := strings.Cut(line, " ")
		switch keyword = strings.ToUpper(keyword); {
		case line == "" || strings.HasPrefix(line, "#"):
		case keyword == "FROM":
			stages = append(stages, stage{{keyword, lastField(args)}})
		case len(stages) > 0:
			stages[len(stages)-1] = append(stages[len(stages)-1], [2]string{keyword, strings.Join(strings.Fields(args), " ")})
		}
	}
	if len(stages) < 2 {
		t.Fatalf("%s has %d stages, want a build stage and the image", path, len(stages))
	}
	return stages
}

// lastField is FROM's image: "--platform=X golang AS build" is golang, "scratch" is scratch.
func lastField(args string) string {
	f := strings.Fields(args)
	if i := slices.IndexFunc(f, func(w string) bool { return strings.EqualFold(w, "AS") }); i > 0 {
		f = f[:i]
	}
	return f[len(f)-1]
}
