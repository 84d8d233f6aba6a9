package lint

import (
	"testing"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// TestCallsQuit: a quit call counts only where it runs: the container's command itself, or a
// command of the script of sh -c (bash -c, ...), including a trap's script, which runs when the
// shell exits (the pattern Istio's own documentation shows). The same words as an argument of
// another program, of echo, in quotes or in a comment are no call.
func TestCallsQuit(t *testing.T) {
	const q = "/quitquitquit"
	for _, tc := range []struct {
		name string
		argv []string
		want bool
	}{
		{"curl itself", []string{"curl", "-X", "POST", "http://localhost:15020/quitquitquit"}, true},
		{"wget by path", []string{"/usr/bin/wget", "--post-data=", "http://127.0.0.1:15000/quitquitquit"}, true},
		{"curl on another path", []string{"curl", "-X", "POST", "http://localhost:15020/healthz/ready"}, false},
		{"sh -c, after the job", []string{"sh", "-c", "python job.py; curl -X POST localhost:15020/quitquitquit"}, true},
		{"bash -ec, after &&", []string{"/bin/bash", "-ec", "python job.py && curl -sf -XPOST http://127.0.0.1:15020/quitquitquit"}, true},
		{"a folded scalar: one line per command", []string{"sh", "-c", "python job.py\nx=$(curl -s -XPOST localhost:15020/quitquitquit)\n"}, true},
		{"exec and env prefixes", []string{"sh", "-c", "python job.py; exec env -i A=1 curl -XPOST localhost:15020/quitquitquit"}, true},
		{"an assignment before it", []string{"sh", "-c", "run; CURL_CA_BUNDLE= curl -XPOST localhost:15020/quitquitquit"}, true},
		{"in an if", []string{"sh", "-c", "if curl -XPOST localhost:15020/quitquitquit; then echo ok; fi"}, true},
		{"a trap on exit", []string{"sh", "-c", `trap "curl --max-time 2 -s -f -XPOST http://127.0.0.1:15020/quitquitquit" EXIT; python job.py`}, true},
		{"a trap with --", []string{"bash", "-c", `trap -- 'curl -XPOST localhost:15020/quitquitquit' EXIT TERM; ./run`}, true},
		{"an argument of another program", []string{"python", "job.py", "--on-exit", "curl -X POST localhost:15020/quitquitquit"}, false},
		{"an argument of another program after sh -c's script", []string{"sh", "-c", "run \"$0\"", "curl -X POST localhost:15020/quitquitquit"}, false},
		{"quoted, as an argument inside the script", []string{"sh", "-c", `python job.py --hook "curl -X POST localhost:15020/quitquitquit"`}, false},
		{"echoed", []string{"sh", "-c", "python job.py; echo curl -X POST localhost:15020/quitquitquit"}, false},
		{"in a comment", []string{"sh", "-c", "python job.py\n# curl -X POST localhost:15020/quitquitquit\n"}, false},
		{"a trap that is no exit handler (no signal named)", []string{"sh", "-c", `trap "curl -XPOST localhost:15020/quitquitquit"`}, false},
		{"sh without -c runs a file", []string{"sh", "job.sh", "curl -XPOST localhost:15020/quitquitquit"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &manifest.Container{Name: "job", Command: tc.argv}
			if got := callsQuit(c, q); got != tc.want {
				t.Errorf("callsQuit(%q) = %v, want %v", tc.argv, got, tc.want)
			}
		})
	}
}
