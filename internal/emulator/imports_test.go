package emulator

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbidden reports whether importing path would link net/http or
// regexp (about 100 KB) into the production binary (see the package
// documentation).
func forbidden(path string) bool {
	for _, pkg := range []string{"net/http", "regexp"} {
		if path == pkg || strings.HasPrefix(path, pkg+"/") {
			return true
		}
	}
	return false
}

// TestNoNetHTTPInNonTestFiles parses every non-test file of the package
// and fails if one imports net/http or regexp directly.
func TestNoNetHTTPInNonTestFiles(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); forbidden(path) {
				t.Errorf("%s imports %s", name, path)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no non-test files found")
	}
}

// TestNoNetHTTPInDependencies asks the go command for the transitive
// imports of the package without its tests, so that an indirect import
// of net/http or regexp is caught as well.
func TestNoNetHTTPInDependencies(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		goCmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out, err := exec.Command(goCmd, "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list unavailable (%v); TestNoNetHTTPInNonTestFiles still checks direct imports", err)
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if forbidden(dep) {
			t.Errorf("the package depends on %s", dep)
		}
	}
	if len(deps) < 10 {
		t.Errorf("go list -deps returned only %q", deps)
	}
}
