package contract_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// syntheticCommands reach what the manifests do not: no command, an empty one, the binary in
// every place and spelling, trailing slashes, names that nearly match.
var syntheticCommands = [][]any{
	nil, {}, {""}, {"/"}, {"//"}, {"."}, {contract.BinaryName}, {contract.ImageBinary}, {contract.Binary},
	{contract.Binary, "--sidecar", "istio", "--", "/app"}, {"./sidesync"}, {"../bin/sidesync"}, {"/opt/sidesync/"},
	{"/opt/sidesync//"}, {"sidesync/"}, {"/sidesync/."}, {"/sidesync/bin"}, {"sidesyncd"}, {"xsidesync"},
	{"/usr/bin/xsidesync"}, {"SIDESYNC"}, {"/bin/sidesync.sh"}, {"sidesync\n"}, {"a/sidesync\n/"}, {"sidesync "},
	{"sh", "-c", "/sidesync/bin/sidesync -- app"}, {"/app", contract.Binary},
}

// TestRunsSidesyncCEL: RunsSidesync and RunsSidesyncCEL agree on the command of every container
// (init and regular) of the corpus, the examples and inject's testdata, evaluated as the API
// server evaluates CEL, and on the synthetic commands.
func TestRunsSidesyncCEL(t *testing.T) {
	if regexp.QuoteMeta(contract.BinaryName) != contract.BinaryName {
		t.Fatalf("BinaryName %q has characters RE2 reads as syntax: RunsSidesyncCEL must quote them", contract.BinaryName)
	}
	env := celeval.For(t)
	expr := contract.RunsSidesyncCEL("variables.c")
	type tc struct {
		name    string
		command []string
		object  map[string]any // the container as CEL sees it
	}
	var cases []tc
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		spec, _ := p.Object["spec"].(map[string]any)
		var objects []any
		for _, key := range []string{"initContainers", "containers"} { // as PodView.All lists them
			l, _ := spec[key].([]any)
			objects = append(objects, l...)
		}
		for i, c := range p.View.All() {
			o, _ := objects[i].(map[string]any)
			if o["name"] != c.Name {
				t.Fatalf("%s: container %d is %v as CEL sees it, %s as Go does", p.Name, i, o["name"], c.Name)
			}
			cases = append(cases, tc{p.Name + ", container " + c.Name, c.Command, o})
		}
	}
	for i, command := range syntheticCommands {
		o := map[string]any{"name": "app"}
		var words []string
		if command != nil {
			o["command"] = command
			for _, w := range command {
				words = append(words, w.(string))
			}
		}
		cases = append(cases, tc{fmt.Sprintf("synthetic command %d %q", i, words), words, o})
	}
	runs := 0
	for _, c := range cases {
		got, err := env.Bool(expr, nil, map[string]any{"c": c.object})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := contract.RunsSidesync(c.command)
		if got != want {
			t.Errorf("%s: RunsSidesync(%q) is %v, RunsSidesyncCEL %v\nCEL: %s", c.name, c.command, want, got, expr)
		}
		if want {
			runs++
		}
	}
	if runs < 10 {
		t.Errorf("only %d containers run sidesync: the cases do not reach both answers", runs)
	}
}
