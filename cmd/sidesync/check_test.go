package main

import (
	"strings"
	"testing"
	"text/tabwriter"
)

// TestWriteTable: the check table is laid out as text/tabwriter lays it out (minimum width 0,
// padding 2, spaces), which the pod binary does without.
func TestWriteTable(t *testing.T) {
	t.Parallel()
	for _, rows := range [][][]string{
		{{"SIDECAR", "READY URL", "STATE", "QUIT URL", "NATIVE"}},
		{{"SIDECAR", "READY URL", "STATE", "QUIT URL", "NATIVE"},
			{"istio", "http://127.0.0.1:15021/healthz/ready", "ready (200)", "http://127.0.0.1:15020/quitquitquit", "no"},
			{"vault", "-", "no readiness check", "http://127.0.0.1:8200/agent/v1/quit", "yes (startup probe)"},
			{"é-ü", "", "not ready: connection refused", "", ""}},
	} {
		var want strings.Builder
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		for _, r := range rows {
			tw.Write([]byte(strings.Join(r, "\t") + "\n"))
		}
		tw.Flush()
		var got strings.Builder
		writeTable(&got, rows)
		if got.String() != want.String() {
			t.Errorf("got\n%s\nwant (tabwriter)\n%s", got.String(), want.String())
		}
	}
}
