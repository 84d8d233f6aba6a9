package catalog

import (
	"path"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// shells are the programs whose -c runs a script: a sidecar started through one of them may
// have its own way to end, written in the script.
var shells = []string{"sh", "bash", "ash", "dash", "ksh", "zsh"}

// killWords are the words of a script that stop a process: a script that traps a signal or
// kills a child has a shutdown of its own.
var killWords = []string{"trap", "kill", "pkill", "killall"}

// HandshakeQuit reports whether container c of pod runs a hand-written shutdown handshake, and
// what it is: c is started by a shell's -c (sh, bash, ...), and its script traps a signal or
// kills a process, or names a file on a volume that another regular container of the pod mounts
// too (the common shape: `cloud_sql_proxy ... & CHILD=$!; while ! test -f /tmp/pod/terminated;
// do sleep 1; done; kill $CHILD`, the app touching /tmp/pod/terminated when it ends). Such a
// sidecar already ends when the app does: wrapping the app adds nothing, and turning it into a
// native sidecar would make the kubelet restart it when its script ends. Inject leaves it as it
// is, and lint does not call it a sidecar that never quits. It is conservative: a script that
// does neither is not a handshake.
func HandshakeQuit(c *manifest.Container, pod *manifest.PodView) (why string, ok bool) {
	script, ok := shellScript(c.Argv())
	if !ok {
		return "", false
	}
	for _, w := range scriptWords(script) {
		if slices.Contains(killWords, w) {
			return "a hand-written shutdown handshake: its shell script runs " + w, true
		}
	}
	for _, m := range sharedMounts(c, pod) {
		if mentions(script, m.at) {
			return "a hand-written shutdown handshake: its shell script watches " + m.at + ", on volume " + m.volume + " that container " + m.with + " mounts too", true
		}
	}
	return "", false
}

// shellScript returns the script of argv when it runs a shell with -c: the first word after
// the flags, one of which holds c ("-c", "-ec", "-xc").
func shellScript(argv []string) (string, bool) {
	if len(argv) < 3 || !slices.Contains(shells, path.Base(argv[0])) {
		return "", false
	}
	dashC := false
	for _, a := range argv[1:] {
		switch {
		case strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--"):
			dashC = dashC || strings.Contains(a[1:], "c")
		case dashC:
			return a, true
		default:
			return "", false // a script file, not -c
		}
	}
	return "", false
}

// scriptWords splits a script into its words: runs of letters, digits, "_" and "-".
func scriptWords(script string) []string {
	return strings.FieldsFunc(script, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

// mount is a volume that a container mounts at a path, and another container that mounts it too.
type mount struct{ volume, at, with string }

// sharedMounts are the volumes c mounts that another regular container of the pod mounts too.
func sharedMounts(c *manifest.Container, pod *manifest.PodView) []mount {
	var out []mount
	for _, m := range mountsOf(c) {
		for _, o := range pod.Containers {
			if o == c {
				continue
			}
			if slices.ContainsFunc(mountsOf(o), func(om mount) bool { return om.volume == m.volume }) {
				out = append(out, mount{volume: m.volume, at: m.at, with: o.Name})
				break
			}
		}
	}
	return out
}

// mountsOf reads a container's volumeMounts (what cannot be read is no mount).
func mountsOf(c *manifest.Container) []mount {
	l, _ := c.M["volumeMounts"].([]any)
	var out []mount
	for _, e := range l {
		m, _ := e.(map[string]any)
		name, at := manifest.Str(m, "name"), strings.TrimRight(manifest.Str(m, "mountPath"), "/")
		if name != "" && at != "" {
			out = append(out, mount{volume: name, at: at})
		}
	}
	return out
}

// mentions reports whether script names dir or a path below it.
func mentions(script, dir string) bool {
	for i := 0; ; {
		j := strings.Index(script[i:], dir)
		if j < 0 {
			return false
		}
		end := i + j + len(dir)
		if end == len(script) || strings.ContainsRune("/ \t\n;'\")&|", rune(script[end])) {
			return true
		}
		i = end
	}
}
