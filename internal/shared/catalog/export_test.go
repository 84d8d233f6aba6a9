package catalog

import "github.com/sidesync/sidesync/internal/shared/manifest"

// The Go and CEL of the predicates that Sort runs unexported, for cel_test.go.

// SourceValue is Sidecar.value and hidden for the sidecar's container c (read as a port or not).
func SourceValue(v *manifest.PodView, c *manifest.Container, src Source, port bool) (val string, set, hidden bool) {
	s := &Sidecar{Container: c}
	src.port = port
	val, set = s.value(v, src)
	return val, set, s.hidden(src)
}

// SourceValueCEL is valueCEL (read as a port or not).
func SourceValueCEL(p CELPod, c string, src Source, port bool) (set, val, hidden string) {
	src.port = port
	return src.valueCEL(p, c)
}

// SourceOn is Source.on, and SourceOnCEL its CEL.
func SourceOn(src Source, val string) bool                { return src.on(val) }
func SourceOnCEL(src Source, val string) string           { return src.onCEL(val) }
func PortCEL(sources []Source, p CELPod, c string) string { return portCEL(sources, p, c) }
func DroppedCEL(sw *Switch, p CELPod, c string, quit bool) string {
	return droppedCEL(sw, p, c, quit)
}

// Port is Sidecar.port for the sidecar's container c: the port, or 0 when the default stays.
func Port(v *manifest.PodView, c *manifest.Container, sources []Source) int {
	n, ok := (&Sidecar{Container: c}).port(v, sources)
	if !ok {
		return 0
	}
	return n
}

// Dropped is what read makes of Sidecar.off: whether the endpoint leaves the profile.
func Dropped(v *manifest.PodView, c *manifest.Container, sw *Switch, quit bool) bool {
	off := (&Sidecar{Container: c}).off(v, sw)
	return off != nil && off.Hidden == "" && (!quit || off.Certain)
}

// Announced names the rows that announce finds on the pod, as inject reads it.
func Announced(v *manifest.PodView) map[string]bool {
	out := map[string]bool{}
	for _, a := range announce(v, Options{Requests: true}) {
		out[a.entry.Name] = true
	}
	return out
}

// AnnouncedVar is the variable that says row i is announced.
func AnnouncedVar(i int) string { return announcedVar(i) }
