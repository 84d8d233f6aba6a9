package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRestartKeepsSidecars: when the kubelet restarts this container in place after the exit,
// the sidecars are not told to quit, one log line says why, the summary says "skipped
// (restart)", and the exit code is the command's; otherwise they are told to quit as always.
// Every sidecar ends up told to quit exactly once: a run that keeps it is followed by one that
// quits it, and the count is read once the emulator has exited.
func TestRestartKeepsSidecars(t *testing.T) {
	t.Parallel()
	const rules42 = `SIDESYNC_RESTART_RULES=[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`
	tests := []struct {
		name     string
		env      []string
		args     []string // before "--"
		command  []string
		wantCode int
		wantLog  string // the restart line; "" when the sidecars are told to quit
	}{
		{"OnFailure, exit 3", nil, []string{"--restart-policy", "OnFailure"}, []string{"exit", "3"}, 3,
			"not telling the sidecars to quit: the kubelet restarts this container in place after exit 3 (restartPolicy OnFailure)"},
		{"OnFailure, killed by SIGTERM", []string{"SIDESYNC_RESTART_POLICY=OnFailure"}, nil, []string{"kill", "15"}, 143,
			"in place after exit 143 (restartPolicy OnFailure)"},
		{"OnFailure, the sidecar never ready", nil, []string{"--restart-policy=onfailure", "--timeout", "100ms"}, []string{"exit", "0"}, 69,
			"in place after exit 69 (restartPolicy OnFailure)"},
		{"Always, exit 0", nil, []string{"--restart-policy", "Always"}, []string{"exit", "0"}, 0,
			"in place after exit 0 (restartPolicy Always)"},
		{"a rule restarts 42", []string{rules42, "SIDESYNC_RESTART_POLICY=Never"}, nil, []string{"exit", "42"}, 42,
			"in place after exit 42 (restartPolicyRules[0]: Restart when the exit code is In [42])"},
		{"a rule does not restart 1", []string{rules42}, []string{"--restart-policy", "Never"}, []string{"exit", "1"}, 1, ""},
		{"OnFailure, exit 0", nil, []string{"--restart-policy", "OnFailure"}, []string{"exit", "0"}, 0, ""},
		{"Never, exit 3", nil, []string{"--restart-policy", "Never"}, []string{"exit", "3"}, 3, ""},
		{"unknown, exit 3", nil, nil, []string{"exit", "3"}, 3, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			knobs := []string{"--ready-after-probes", "0"}
			if tt.wantCode == 69 {
				knobs = []string{"--never-ready"}
			}
			e := startEmu(t, knobs...)
			termLog := filepath.Join(t.TempDir(), "termination-log")
			os.WriteFile(termLog, nil, 0o644)
			env := append([]string{"SIDESYNC_TERMINATION_LOG=" + termLog}, tt.env...)
			args := append(append(append([]string{"--admin", e.admin()}, tt.args...), "--", bin.testcmd), tt.command...)
			r := sidesync(t, env, args...)
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			summary, _ := os.ReadFile(termLog)
			if tt.wantLog != "" {
				mustContain(t, r.stderr, tt.wantLog, `quit="skipped (restart)"`)
				mustContain(t, string(summary), "quit skipped (restart)")
				// The next run, which is not restarted, quits the sidecar.
				sidesync(t, nil, "--admin", e.admin(), "--no-wait", "--", bin.testcmd, "exit", "0")
			} else {
				mustContain(t, r.stderr, "done exit=", "quit=ok")
				mustContain(t, string(summary), "quit ok")
			}
			if code := e.waitExit(); code != 0 || e.quits() != 1 {
				t.Errorf("emulator exit %d after %d quits, want 0 after 1; stderr:\n%s", code, e.quits(), r.stderr)
			}
		})
	}
}

// TestQuitIgnoresRestart: "sidesync quit" is asked to quit, and does, whatever the restart rules.
func TestQuitIgnoresRestart(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	r := sidesync(t, []string{"SIDESYNC_RESTART_POLICY=Always"}, "quit", "--admin", e.admin())
	if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("exit %d, %d quits; want 0, 1; stderr:\n%s", r.code, e.quits(), r.stderr)
	}
}

// TestRestartUsageErrors: a bad restart setting is a usage error that names it.
func TestRestartUsageErrors(t *testing.T) {
	t.Parallel()
	r := sidesync(t, []string{`SIDESYNC_RESTART_RULES=[{"action":"Restart","exitCodes":{"operator":"In","values":[1.5]}}]`},
		"--restart-policy", "Sometimes", "--disabled", "--", bin.testcmd, "exit", "0")
	if r.code != 2 {
		t.Errorf("exit %d, want 2", r.code)
	}
	mustContain(t, r.stderr, `--restart-policy "Sometimes": must be Never, OnFailure or Always`, `SIDESYNC_RESTART_RULES="[{`, "not a JSON list of restartPolicyRules")
}
