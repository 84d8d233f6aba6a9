package catalog

import (
	"path"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// HandshakeQuit reports whether container c of pod v ends by a shutdown handshake written by
// hand, the common pattern from before native sidecars (docs/SIDECARS.md 17): c runs a shell
// script (sh -c) that starts the sidecar and then kills it (kill, pkill, killall) or lets the
// shell exit under it (the sidecar runs in the background, &), once a file appears on a volume
// that c shares with another regular container of the pod, whose own command writes there (an
// app's `trap "touch /tmp/pod/done" EXIT`). Such a sidecar quits when the app ends: nothing needs
// to tell it to, and it must be neither converted to a native sidecar nor quit by sidesync. why
// says what was found, for messages: "a hand-written shutdown handshake: its sh -c script
// watches /tmp/pod (volume tmp-pod), where container main's command writes, and kills the
// process it started (kill)".
//
// It is conservative: all of a shell script, a kill or a background start, and a path on a volume
// that both containers mount and both scripts name; anything less is no handshake, and the
// sidecar is judged as one that nothing tells to quit.
func HandshakeQuit(c *manifest.Container, v *manifest.PodView) (why string, ok bool) {
	script, ok := ShellScript(c.Argv())
	if !ok {
		return "", false
	}
	ends := endsChild(script)
	if ends == "" {
		return "", false
	}
	for _, m := range volumeMounts(c) {
		if !namesPath(script, m.path) {
			continue
		}
		for _, other := range v.Containers {
			if other == c {
				continue
			}
			for _, om := range volumeMounts(other) {
				if om.volume == m.volume && namesPath(strings.Join(other.Argv(), " "), om.path) {
					return "a hand-written shutdown handshake: its " + path.Base(c.Argv()[0]) + " -c script watches " + m.path + " (volume " + m.volume +
						"), where container " + other.Name + "'s command writes, and " + ends, true
				}
			}
		}
	}
	return "", false
}

// mount is a container's volume mount: the volume's name and where it is mounted.
type mount struct{ volume, path string }

// volumeMounts reads a container's volumeMounts; an entry that is not an object with a name and
// an absolute mountPath is left out.
func volumeMounts(c *manifest.Container) []mount {
	l, _ := c.M["volumeMounts"].([]any)
	var out []mount
	for _, e := range l {
		m, _ := e.(map[string]any)
		vm := mount{volume: manifest.Str(m, "name"), path: strings.TrimSuffix(manifest.Str(m, "mountPath"), "/")}
		if vm.volume != "" && strings.HasPrefix(vm.path, "/") && vm.path != "" {
			out = append(out, vm)
		}
	}
	return out
}

// namesPath reports whether text names a file under dir: dir followed by "/" and a name.
func namesPath(text, dir string) bool {
	for rest := text; ; {
		i := strings.Index(rest, dir+"/")
		if i < 0 {
			return false
		}
		rest = rest[i+len(dir)+1:]
		if rest != "" && !strings.ContainsRune(" \t\n;&|\"')", rune(rest[0])) {
			return true
		}
	}
}

// endsChild says how a shell script ends the process it started: it runs kill, pkill or killall,
// or it starts a command in the background (&, not &&), which ends with the container when the
// shell exits; "" when it does neither.
func endsChild(script string) string {
	for _, cmd := range ShellCommands(script) {
		for _, w := range cmd {
			switch path.Base(w) {
			case "kill", "pkill", "killall":
				return "kills the process it started (" + path.Base(w) + ")"
			}
		}
	}
	for i := 0; i < len(script); i++ {
		if script[i] == '&' && (i+1 == len(script) || script[i+1] != '&' && script[i+1] != '>') && (i == 0 || script[i-1] != '&' && script[i-1] != '>') {
			return "exits, which ends the process it started in the background"
		}
	}
	return ""
}

// shells are the shells whose script ShellScript reads.
var shells = []string{"sh", "bash", "ash", "dash", "zsh", "ksh"}

// RunsShell reports whether argv runs one of the shells whose script ShellScript reads (by the
// base name of argv[0]).
func RunsShell(argv []string) bool {
	return len(argv) > 0 && slices.Contains(shells, path.Base(argv[0]))
}

// RunsShellCEL is RunsShell in CEL, for the container that the CEL expression c names (its
// command, then its args): path.Base's name is the last that slashes end.
func RunsShellCEL(c string) string {
	argv0 := "(has(" + c + ".command) && size(" + c + ".command) > 0 ? " + c + ".command[0] : (has(" + c + ".args) && size(" + c + ".args) > 0 ? " + c + ".args[0] : \"\"))"
	return argv0 + ".matches(" + CELString("(^|/)("+strings.Join(shells, "|")+")/*$") + ")"
}

// ShellScript returns the script of `sh -c SCRIPT` (bash, ash, dash, zsh, ksh; options such as
// -ec or -euxc before it).
func ShellScript(argv []string) (string, bool) {
	if !RunsShell(argv) {
		return "", false
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return "", false
		}
		if !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
			if i+1 < len(argv) {
				return argv[i+1], true
			}
			return "", false
		}
	}
	return "", false
}

// ShellCommands splits a shell script into its simple commands' words: at newlines, ;, &, | and
// parentheses, quotes removed. It is rough, and needs only to find which program a command runs.
func ShellCommands(script string) [][]string {
	var cmds [][]string
	var cur []string
	var word strings.Builder
	var quote rune
	flushWord := func() {
		if word.Len() > 0 {
			cur = append(cur, word.String())
			word.Reset()
		}
	}
	flushCmd := func() {
		flushWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
	}
	for _, r := range script {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote = r
		case slices.Contains([]rune{'\n', ';', '&', '|', '(', ')', '`'}, r):
			flushCmd()
		case r == ' ' || r == '\t':
			flushWord()
		default:
			word.WriteRune(r)
		}
	}
	flushCmd()
	return cmds
}
