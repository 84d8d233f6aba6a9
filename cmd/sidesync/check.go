package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sidesync/sidesync/internal/pod/logfmt"
	"github.com/sidesync/sidesync/internal/shared/redact"
	"github.com/sidesync/sidesync/sidecar"
)

// check is "sidesync check": probe each configured or detected sidecar once and print a
// table, to debug a pod. It exits 0 when every sidecar is ready, 69 otherwise (or when none is
// found with --require-sidecar).
func check(ctx context.Context, s *session, o outcome) int {
	o.plan = newResolver(s, &podVolume{dir: s.cfg.PodInfoDir}).resolve(ctx)
	if o.plan.missing {
		return exitCode(o)
	}
	if len(o.plan.sidecars) == 0 {
		fmt.Fprintln(s.stdout, "no sidecar configured or detected")
		return 0
	}
	rows := [][]string{{"SIDECAR", "READY URL", "STATE", "QUIT URL", "NATIVE"}}
	code := 0
	for _, sc := range o.plan.sidecars {
		state, ready := probeOnce(ctx, sc, s.cfg.ProbeTimeout)
		if !ready {
			code = exitUnavailable
		}
		rows = append(rows, []string{sc.Name, urlOf(sc.Ready), state, quitURLOf(sc.Quit), nativeText(sc)})
	}
	writeTable(s.stdout, rows)
	if se := stopSignal(ctx); se != nil {
		return 128 + int(se.sig)
	}
	return code
}

// probeOnce probes a sidecar once, within timeout, and describes its state in a few words.
func probeOnce(ctx context.Context, sc sidecar.Sidecar, timeout time.Duration) (string, bool) {
	if sc.Ready == nil {
		return "no readiness check", true
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := sidecar.Probe(ctx, *sc.Ready)
	if r.Ready {
		return fmt.Sprintf("ready (%d, %v)", r.StatusCode, logfmt.Round(r.Took)), true
	}
	msg := redact.String(r.Err.Error())
	if len(msg) > 80 {
		msg = msg[:77] + "..."
	}
	return "not ready: " + strings.ReplaceAll(msg, "\t", " "), false
}

func nativeText(sc sidecar.Sidecar) string {
	switch {
	case sc.Native && sc.StartupProbe:
		return "yes, with startup probe"
	case sc.Native:
		return "yes"
	}
	return "no"
}

// writeTable writes rows as aligned columns, two spaces apart, the last column unpadded (as
// text/tabwriter does, which the pod binary does without).
func writeTable(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, cell := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r[:len(r)-1] {
			fmt.Fprintf(&b, "%-*s", widths[i]+2, cell) // fmt pads by runes, as tabwriter counts
		}
		b.WriteString(r[len(r)-1] + "\n")
	}
	io.WriteString(w, b.String())
}
