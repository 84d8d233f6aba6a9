package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// envRunMain makes the test binary run main's run instead of the tests: the os/exec tests'
// helper-process pattern, so that the command line is tested as the process a user runs.
const envRunMain = "KUBECTL_SIDESYNC_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		os.Exit(run(os.Args[1:], devBuild, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// process runs `kubectl sidesync ARGS` as a process, stdin given, in dir.
func process(t *testing.T, dir, stdin string, args ...string) ran {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), envRunMain+"=1", "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return ran{cmd.ProcessState.ExitCode(), out.String(), errOut.String()}
}

// TestBadCommandLines: kubectl's words, exit 2, nothing on stdout, for every command, as a
// process: an unknown flag (kubectl's flag error), an unknown command (cobra's, with its
// suggestion), a flag value the command refuses (kubectl's UsageErrorf).
func TestBadCommandLines(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"lint", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl sidesync lint --help' for usage.\n"},
		{[]string{"inject", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl sidesync inject --help' for usage.\n"},
		{[]string{"policy", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl sidesync policy --help' for usage.\n"},
		{[]string{"rescue", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl sidesync rescue --help' for usage.\n"},
		{[]string{"version", "--bogus"}, "error: unknown flag: --bogus\nSee 'kubectl sidesync version --help' for usage.\n"},
		{[]string{"lint", "-x"}, "error: unknown shorthand flag: 'x' in -x\nSee 'kubectl sidesync lint --help' for usage.\n"},
		{[]string{"injet"}, "error: unknown command \"injet\" for \"kubectl sidesync\"\n\nDid you mean this?\n\tinject\n\n"},
		{[]string{"version", "-o", "wide"}, "error: unable to match a printer suitable for the output format \"wide\", allowed formats are: json,yaml\nSee 'kubectl sidesync version -h' for help and examples\n"},
		{[]string{"policy", "-n", "monitoring", "--image", "x:1"}, "error: policy has no --namespace (-n): a namespace the policy never selects is --exclude-namespace monitoring\nSee 'kubectl sidesync policy -h' for help and examples\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := process(t, "", "", tt.args...)
			if r.code != 2 || r.stdout != "" || r.stderr != tt.want {
				t.Errorf("got %s\nwant exit 2, nothing on stdout, stderr %q", r, tt.want)
			}
		})
	}
}

// TestFilenames: -f as kubectl reads it: a directory's manifests in lexical order, the
// directories below only with -R, a file named whatever its extension, stdin once, a path that
// does not exist named.
func TestFilenames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.yml", "a.yaml", "c.json", "notes.txt", "sub/d.yaml", "sub/deeper/e.json", "z.yaml", "empty/.keep"} {
		write(t, filepath.Join(dir, name), "")
	}
	in := func(names ...string) []string {
		for i, n := range names {
			if n != stdinName {
				names[i] = filepath.Join(dir, n)
			}
		}
		return names
	}
	for _, tt := range []struct {
		name      string
		f         []string
		recursive bool
		want      []string
		err       string
	}{
		{"none: stdin", nil, false, []string{stdinName}, ""},
		{"a directory", in(""), false, in("a.yaml", "b.yml", "c.json", "z.yaml"), ""},
		{"a directory, -R", in(""), true, in("a.yaml", "b.yml", "c.json", "sub/d.yaml", "sub/deeper/e.json", "z.yaml"), ""},
		{"files in order given, stdin between", in("z.yaml", stdinName, "notes.txt"), false, in("z.yaml", stdinName, "notes.txt"), ""},
		{"a glob", in("*.y*ml"), false, in("a.yaml", "b.yml", "z.yaml"), ""},
		{"stdin twice", in(stdinName, stdinName), false, nil, "standard input cannot be used for multiple arguments"},
		{"a missing path", in("gone.yaml"), false, nil, `the path "` + filepath.Join(dir, "gone.yaml") + `" does not exist`},
		{"a directory without manifests", in("empty"), false, nil, `error reading "` + filepath.Join(dir, "empty") + `": no files with the extensions [.json .yaml .yml]`},
		{"URLs, kept for open", []string{"https://example.com/job.yaml", "http://127.0.0.1:1/j.yaml"}, false, []string{"https://example.com/job.yaml", "http://127.0.0.1:1/j.yaml"}, ""},
		{"a URL that is not one", []string{"http://a b/%zz"}, false, nil, `the URL passed to filename "http://a b/%zz" is not valid`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&filenames{names: tt.f, recursive: tt.recursive}).paths()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %q, %v; want the error %q", got, err, tt.err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); err != nil || diff != "" {
				t.Errorf("error %v; paths (-want +got):\n%s", err, diff)
			}
		})
	}
}

// write writes a file, making its directory.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLintDirectory: lint -f DIR reads its manifests (it said "is a directory"), -R the tree;
// as a process, with - and a relative path as a user types them.
func TestLintDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "manifests", "hangs.yaml"), lintHangs)
	write(t, filepath.Join(dir, "manifests", "nested", "warns.yaml"), lintWarns)
	write(t, filepath.Join(dir, "manifests", "README.md"), "not a manifest\n")
	for _, tt := range []struct {
		args    []string
		stdin   string
		code    int
		summary string
	}{
		{[]string{"lint", "-f", "manifests"}, "", 1, "2 errors, 1 warning in 1 object\n"},
		{[]string{"lint", "-R", "-f", "manifests"}, "", 1, "2 errors, 2 warnings in 2 objects\n"},
		{[]string{"lint", "-f", "manifests/nested", "-f", "-"}, lintClean, 0, "0 errors, 1 warning in 3 objects\n"},
		{[]string{"lint", "--filename=manifests/nested/warns.yaml,manifests/hangs.yaml"}, "", 1, "2 errors, 2 warnings in 2 objects\n"},
		{[]string{"lint", "-f", "missing"}, "", 2, "kubectl sidesync lint: the path \"missing\" does not exist\n"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := process(t, dir, tt.stdin, tt.args...)
			if r.code != tt.code || r.stderr != tt.summary || tt.code == 2 && r.stdout != "" {
				t.Errorf("got %s\nwant exit %d and %q", r, tt.code, tt.summary)
			}
		})
	}
}

// TestLintOutputYAML: -o yaml is -o json's document in YAML.
func TestLintOutputYAML(t *testing.T) {
	_, asJSON, _ := lintRun(lintHangs+"---\n"+lintWarns, "-o", "json")
	code, asYAML, _ := lintRun(lintHangs+"---\n"+lintWarns, "-o", "yaml")
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(asJSON), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(asYAML), &fromYAML); err != nil || code != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, asYAML)
	}
	if diff := cmp.Diff(fromJSON, fromYAML); diff != "" || !strings.HasPrefix(asYAML, "errors: 2\n") {
		t.Errorf("-o yaml is not -o json's document (-json +yaml):\n%s", diff)
	}
}

// TestInjectOutput: without -o, every input is written in its format; with -o, every document
// in that one. The documents are the same objects either way.
func TestInjectOutput(t *testing.T) {
	dir := t.TempDir()
	asYAML, asJSON := filepath.Join(dir, "job.yaml"), filepath.Join(dir, "job.json")
	job, _, _ := strings.Cut(injectJob, "---\n") // the Job alone
	write(t, asYAML, job)
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(job), &obj); err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(obj)
	write(t, asJSON, string(j))
	objects := func(out string) []map[string]any {
		var objs []map[string]any
		for _, doc := range strings.Split(out, "\n---\n") {
			var o map[string]any
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			objs = append(objs, o)
		}
		return objs
	}
	_, fromYAML, _ := injectRun(t, "", "-f", asYAML, injectImage)
	for _, tt := range []struct {
		args  []string
		json  bool // the whole stdout is JSON
		count int
	}{
		{[]string{"-f", asJSON}, true, 1},
		{[]string{"-f", asYAML, "-o", "json"}, true, 1},
		{[]string{"-f", asJSON, "-o", "yaml"}, false, 1},
		{[]string{"-f", asJSON, "-f", asYAML, "-o", "json"}, true, 2},
	} {
		code, out, stderr := injectRun(t, "", append(tt.args, injectImage)...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", tt.args, code, stderr)
		}
		if isJSON := strings.HasPrefix(out, "{"); isJSON != tt.json {
			t.Errorf("%q: JSON %v, want %v:\n%s", tt.args, isJSON, tt.json, out)
		}
		var got []map[string]any
		if tt.json {
			dec := json.NewDecoder(strings.NewReader(out))
			for dec.More() {
				var o map[string]any
				if err := dec.Decode(&o); err != nil {
					t.Fatalf("%q: %v", tt.args, err)
				}
				got = append(got, o)
			}
		} else {
			got = objects(out)
		}
		if len(got) != tt.count {
			t.Fatalf("%q: %d objects, want %d", tt.args, len(got), tt.count)
		}
		if diff := cmp.Diff(objects(fromYAML)[0], got[0]); diff != "" {
			t.Errorf("%q: not the object inject makes (-yaml +got):\n%s", tt.args, diff)
		}
	}
}

// TestPolicyOutputJSON: -o json is one List of the objects -o yaml writes as documents.
func TestPolicyOutputJSON(t *testing.T) {
	build := buildinfo.Info{Version: "v1.2.3", Commit: "abc"}
	var asYAML, asJSON, errOut bytes.Buffer
	if code := run([]string{"policy", "--exclude-namespace", "monitoring"}, build, nil, &asYAML, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if code := run([]string{"policy", "--exclude-namespace", "monitoring", "-o", "json"}, build, nil, &asJSON, &errOut); code != 0 {
		t.Fatalf("-o json: exit %d: %s", code, errOut.String())
	}
	var list struct {
		Kind  string           `json:"kind"`
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(asJSON.Bytes(), &list); err != nil || list.Kind != "List" {
		t.Fatalf("-o json: kind %q, %v:\n%s", list.Kind, err, asJSON.String())
	}
	var docs []map[string]any
	for _, doc := range strings.Split(asYAML.String(), "\n---\n") {
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, o)
	}
	if diff := cmp.Diff(docs, list.Items); diff != "" || !strings.Contains(asJSON.String(), `"monitoring"`) {
		t.Errorf("-o json's items are not -o yaml's documents (-yaml +json):\n%s", diff)
	}
}

// TestVersionOutput: -o json and -o yaml are one document, shaped as kubectl version's
// clientVersion.
func TestVersionOutput(t *testing.T) {
	build := buildinfo.Info{Version: "v1.2.3", Commit: "0123abc"}
	want := map[string]any{"major": "1", "minor": "2", "gitVersion": "v1.2.3", "gitCommit": "0123abc"}
	for _, format := range []string{"json", "yaml"} {
		var out, errOut bytes.Buffer
		if code := run([]string{"version", "-o", format}, build, nil, &out, &errOut); code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, code, errOut.String())
		}
		var doc struct {
			ClientVersion map[string]any `json:"clientVersion"`
		}
		if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil { // YAML reads JSON too
			t.Fatalf("-o %s: %v\n%s", format, err, out.String())
		}
		for k, v := range want {
			if doc.ClientVersion[k] != v {
				t.Errorf("-o %s: %s = %v, want %v\n%s", format, k, doc.ClientVersion[k], v, out.String())
			}
		}
	}
}

// TestCompletion: the bash script is valid bash, for this program, and the completions it asks
// the program for (cobra's __complete, what kubectl_complete-sidesync runs too) name the
// subcommands and a command's flags.
func TestCompletion(t *testing.T) {
	r := process(t, "", "", "completion", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "__start_kubectl-sidesync") {
		t.Fatalf("completion bash: %s", r)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		check := exec.Command(bash, "-n")
		check.Stdin = strings.NewReader(r.stdout)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, out)
		}
	}
	// The rest in-process: the same code, without a process's start (slow under -race).
	inProcess := func(args ...string) ran {
		var out, errOut bytes.Buffer
		code := run(args, devBuild, nil, &out, &errOut)
		return ran{code, out.String(), errOut.String()}
	}
	for _, shell := range []string{"zsh", "fish", "powershell"} {
		if r := inProcess("completion", shell); r.code != 0 || !strings.Contains(r.stdout, "kubectl-sidesync") {
			t.Errorf("completion %s: %s", shell, r)
		}
	}
	r = inProcess("__complete", "")
	for _, sub := range []string{"inject", "lint", "policy", "rescue", "version", "completion"} {
		if !strings.Contains(r.stdout, "\n"+sub+"\t") && !strings.HasPrefix(r.stdout, sub+"\t") {
			t.Errorf("__complete '': %s missing:\n%s", sub, r)
		}
	}
	r = inProcess("__complete", "rescue", "--dry")
	if !strings.Contains(r.stdout, "--dry-run") {
		t.Errorf("__complete rescue --dry: %s", r)
	}
}

// flagRef is a long flag named in a text: --name.
var flagRef = regexp.MustCompile(`(?:^|[\s(\[\x60'"])--([a-z][a-z0-9-]*)`)

// commandRef is a kubectl sidesync command line in a text, up to a pipe or the line's end.
var commandRef = regexp.MustCompile(`kubectl sidesync (inject|lint|policy|rescue|version|completion)\b([^|\n\x60]*)`)

// unknownFlags are the flags a text names on its kubectl sidesync command lines (or, for a
// command's own help, anywhere outside another command's line) that the command lacks.
func unknownFlags(root *cobra.Command, own *cobra.Command, text string) []string {
	var bad []string
	check := func(cmd *cobra.Command, s string) {
		cmd.InitDefaultHelpFlag() // cobra adds --help when it runs
		for _, m := range flagRef.FindAllStringSubmatch(s, -1) {
			f := cmd.Flags().Lookup(m[1])
			if f == nil {
				f = cmd.InheritedFlags().Lookup(m[1])
			}
			if f == nil || f.Hidden {
				bad = append(bad, cmd.Name()+" --"+m[1])
			}
		}
	}
	for line := range strings.Lines(text) {
		refs := commandRef.FindAllStringSubmatchIndex(line, -1)
		for _, r := range refs {
			sub, _, _ := root.Find([]string{line[r[2]:r[3]]})
			check(sub, line[r[4]:r[5]])
		}
		if own != nil && len(refs) == 0 {
			check(own, line)
		}
	}
	return bad
}

// TestHelpNamesRealFlags: every flag a command's help names exists, and so does every flag of
// a kubectl sidesync command line in the README and the docs.
func TestHelpNamesRealFlags(t *testing.T) {
	root := newRoot(env{build: devBuild, stdout: io.Discard, stderr: io.Discard})
	for _, cmd := range root.Commands() {
		var help bytes.Buffer
		cmd.SetOut(&help)
		if err := cmd.Help(); err != nil {
			t.Fatal(err)
		}
		if bad := unknownFlags(root, cmd, help.String()); len(bad) > 0 {
			t.Errorf("kubectl sidesync %s --help names flags that do not exist: %q", cmd.Name(), bad)
		}
	}
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, path := range append(docs, "../../README.md") {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bad := unknownFlags(root, nil, string(text)); len(bad) > 0 {
			t.Errorf("%s names flags that do not exist: %q", path, bad)
		}
	}
}
