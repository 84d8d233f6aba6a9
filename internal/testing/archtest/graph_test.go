package archtest

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite ARCHITECTURE.md's generated parts")

// root is the module's directory, seen from this package's.
const root = "../../.."

// regenerate is the command that rewrites ARCHITECTURE.md's generated parts.
const regenerate = "go generate ./internal/testing/archtest"

// pkg is a package of the module as `go list` shows it, named by its path inside the module
// ("internal/shared/catalog").
type pkg struct {
	path string
	// imports are the packages its non-test files import; testImports those its _test.go
	// files import besides (itself left out). Both are full import paths.
	imports, testImports []string
}

// edge is one import between two packages of the module.
type edge struct {
	from, to string // paths inside the module
	test     bool   // imported by a _test.go file only
}

// graph is the module's packages and what they import, read from `go list`.
type graph struct {
	module string
	pkgs   []pkg // in go list's order, by path
	// moduleOf maps every package imported from outside the module to its module's path, ""
	// for the standard library.
	moduleOf map[string]string
}

// load reads the module's packages and their direct imports with `go list`, once for all the
// tests of this package.
func load(t *testing.T) *graph {
	t.Helper()
	g, err := loaded()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var loaded = sync.OnceValues(func() (*graph, error) {
	out, err := goList("-f", "{{.Module.Path}}\t{{.ImportPath}}\t{{.Dir}}\t{{join .Imports \" \"}}\t{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	if err != nil {
		return nil, err
	}
	g := &graph{moduleOf: map[string]string{}}
	var outside []string
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("go list printed %q", line)
		}
		// go test caches a result by what the test opened itself, not by what go list read: a
		// listing of the package's directory (names, sizes, times) makes a change there run
		// the tests again.
		if _, err := os.ReadDir(f[2]); err != nil {
			return nil, err
		}
		g.module = f[0]
		p := pkg{path: g.rel(f[1]), imports: strings.Fields(f[3])}
		for _, imp := range strings.Fields(f[4]) {
			if imp != f[1] && !slices.Contains(p.imports, imp) && !slices.Contains(p.testImports, imp) {
				p.testImports = append(p.testImports, imp)
			}
		}
		slices.Sort(p.testImports)
		for _, imp := range slices.Concat(p.imports, p.testImports) {
			if !g.inModule(imp) && !slices.Contains(outside, imp) {
				outside = append(outside, imp)
			}
		}
		g.pkgs = append(g.pkgs, p)
	}
	out, err = goList(append([]string{"-f", "{{.ImportPath}}\t{{if not .Standard}}{{.Module.Path}}{{end}}"}, outside...)...)
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(out) {
		path, module, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		g.moduleOf[path] = module
	}
	return g, nil
})

// goList runs `go list` in the module's directory and returns what it prints.
func goList(args ...string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to read the imports: %w", err)
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "", fmt.Errorf("go list: %w\n%s", err, exit.Stderr)
	}
	if err != nil {
		return "", fmt.Errorf("go list: %w", err)
	}
	return string(out), nil
}

func (g *graph) inModule(path string) bool {
	return path == g.module || strings.HasPrefix(path, g.module+"/")
}

// rel is an import path inside the module: "internal/shared/catalog".
func (g *graph) rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, g.module), "/")
}

// edges are the imports between the module's packages, those of _test.go files marked.
func (g *graph) edges() []edge {
	var out []edge
	for _, p := range g.pkgs {
		for _, imp := range p.imports {
			if g.inModule(imp) {
				out = append(out, edge{from: p.path, to: g.rel(imp)})
			}
		}
		for _, imp := range p.testImports {
			if g.inModule(imp) {
				out = append(out, edge{from: p.path, to: g.rel(imp), test: true})
			}
		}
	}
	return out
}
