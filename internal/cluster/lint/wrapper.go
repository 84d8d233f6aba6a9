package lint

import (
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// wrapper is the sidesync an app container runs, as the binary will see it: its command line
// and the container's variables, read with the wrapper's own parser.
type wrapper struct {
	mode config.Mode    // config.ModeRun, or ModeWait for `sidesync wait`, which never quits
	cfg  *config.Config // nil when err is set
	// err is why sidesync refuses its configuration: it exits 2 without running the command.
	err error
	// hidden names the variables whose values come from a ConfigMap, a Secret or a field: what
	// sidesync is told there is not known here.
	hidden []string
}

// readWrapper reads the sidesync that c runs (contract.RunsSidesync: the injected one, or one
// the user baked in); nil when c runs something else.
func readWrapper(c *manifest.Container) *wrapper {
	if !contract.RunsSidesync(c.Command) {
		return nil
	}
	words := append(slices.Clone(c.Command[1:]), c.Args...)
	w := &wrapper{mode: config.ModeRun}
	if len(words) > 0 && words[0] == string(config.ModeWait) {
		w.mode, words = config.ModeWait, words[1:]
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.From:
			w.hidden = append(w.hidden, e.Name)
		default:
			env[e.Name] = e.Value
		}
	}
	w.cfg, w.err = config.Parse(w.mode, words, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if errors.Is(w.err, config.ErrHelp) {
		w.err = errors.New("--help: sidesync prints its help and exits")
	}
	return w
}

// quits reports whether the sidesync tells the sidecars to quit when its command ends: unless it
// cannot start, only waits (`sidesync wait`), is disabled, or runs with --quit never.
func (w *wrapper) quits() bool {
	return w.err == nil && w.mode == config.ModeRun && !w.cfg.Disabled && w.cfg.QuitPolicy != config.QuitNever
}

// waits reports whether the sidesync waits for the sidecars before its command starts.
func (w *wrapper) waits() bool {
	return w.err == nil && !w.cfg.Disabled && w.cfg.Wait
}

// callsQuit reports whether the container's own command calls a quit endpoint whose path is
// quitPath where it runs: the command is curl or wget with such a URL, or a shell's -c script
// has a curl or wget command with one. The same words as the argument of another program (an
// echo, a message) are not a call.
func callsQuit(c *manifest.Container, quitPath string) bool {
	argv := c.Argv()
	if quitPath == "" || len(argv) == 0 {
		return false
	}
	if isHTTPClient(argv[0]) {
		return slices.ContainsFunc(argv[1:], func(a string) bool { return strings.Contains(a, quitPath) })
	}
	script, ok := catalog.ShellScript(argv)
	return ok && scriptCallsQuit(script, quitPath, 0)
}

// scriptCallsQuit reports whether a shell script runs curl or wget on the quit path: as one of
// its commands (after keywords such as if and prefixes such as exec or env), or in the script of
// a trap, which runs when the shell exits. A mention elsewhere (an argument of echo or of another
// program, a comment) is no call.
func scriptCallsQuit(script, quitPath string, depth int) bool {
	for _, cmd := range catalog.ShellCommands(script) {
		cmd = skipPrefixes(cmd)
		switch {
		case len(cmd) == 0:
		case isHTTPClient(cmd[0]):
			if slices.ContainsFunc(cmd[1:], func(a string) bool { return strings.Contains(a, quitPath) }) {
				return true
			}
		case cmd[0] == "trap" && depth < 2:
			args := cmd[1:]
			if len(args) > 0 && args[0] == "--" {
				args = args[1:]
			}
			if len(args) > 1 && scriptCallsQuit(args[0], quitPath, depth+1) {
				return true
			}
		}
	}
	return false
}

// skipPrefixes drops what comes before the program a simple command runs: shell keywords
// (if, then, do, !, {), variable assignments, and the programs that run the next word (exec,
// command, nohup, time, and env with its options). A comment runs nothing.
func skipPrefixes(cmd []string) []string {
	env := false
	for len(cmd) > 0 {
		w := cmd[0]
		switch {
		case strings.HasPrefix(w, "#"):
			return nil
		case w == "env":
			env = true
		case env && strings.HasPrefix(w, "-"):
		case slices.Contains([]string{"if", "then", "else", "elif", "do", "while", "until", "!", "{", "exec", "command", "nohup", "time"}, w):
		case isAssignment(w):
		default:
			return cmd
		}
		cmd = cmd[1:]
	}
	return nil
}

// isAssignment reports whether a word is NAME=VALUE, as a shell reads an assignment before a
// command.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

func isHTTPClient(word string) bool {
	b := path.Base(word)
	return b == "curl" || b == "wget"
}

// knowsPeers reports whether the sidesync waits for the pod's other apps before it tells the
// sidecars to quit: it has a state directory, its own name, and peers (--peers, else the pod's
// sidesync.io/wrapped annotation) that name every app of the pod.
func (w *wrapper) knowsPeers(p *pod, self *appContainer) bool {
	if w.err != nil || w.cfg.StateDir == "" || w.cfg.Container != self.c.Name {
		return false
	}
	peers := w.cfg.Peers
	if len(peers) == 0 {
		peers = strings.Split(p.ann[contract.WrappedAnnotation], ",")
	}
	for _, a := range p.apps {
		if !slices.Contains(peers, a.c.Name) {
			return false
		}
	}
	return true
}
