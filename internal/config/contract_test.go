package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"

	"github.com/sidesync/sidesync/internal/config"
	"github.com/sidesync/sidesync/internal/detect"
)

// TestInjectContract: the variables and the annotation that `kubectl sidesync inject` writes
// (internal/inject/contract.go) are the ones the wrapper reads. The contract is read as source,
// so that this test does not build the injector and its Kubernetes libraries.
func TestInjectContract(t *testing.T) {
	contract := contractConstants(t, "../inject/contract.go")
	for name, got := range map[string]string{
		"EnvRestartPolicy":    config.EnvName("restart-policy"),
		"EnvRestartRules":     config.EnvName("restart-rules"),
		"EnvPlatformCommands": config.EnvName("platform-commands"),
		"SidecarsAnnotation":  detect.SidecarsAnnotation,
	} {
		if want, ok := contract[name]; !ok || got != want {
			t.Errorf("inject.%s is %q, but the wrapper reads %q", name, want, got)
		}
	}
}

// contractConstants returns the string constants of a Go file that are plain literals.
func contractConstants(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if i < len(vs.Values) {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out[name.Name], _ = strconv.Unquote(lit.Value)
				}
			}
		}
		return true
	})
	return out
}
