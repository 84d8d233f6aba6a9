package main

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the rescuer's own, beside controller-runtime's (reconciles, the queue, the
// client's requests) in the same registry.
type metrics struct {
	stuck       prometheus.Counter
	rescued     prometheus.Counter
	refused     *prometheus.CounterVec
	patchErrors *prometheus.CounterVec
}

// newMetrics registers the rescuer's metrics with reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		stuck: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sidesync_rescuer_stuck_found_total",
			Help: "Rescue attempts found due: a pod stuck on its sidecars past the grace, counted once per pod and attempt.",
		}),
		rescued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sidesync_rescuer_rescued_total",
			Help: "Rescue containers added: one per pod and attempt.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidesync_rescuer_refused_total",
			Help: "Pods left alone for a reason a human should see (reason: internal/cluster/rescue's refusal), counted once per pod and reason.",
		}, []string{"reason"}),
		patchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sidesync_rescuer_patch_errors_total",
			Help: "Patches of pods/ephemeralcontainers that failed, by the API server's reason (Forbidden, Invalid, ...; Transport when none answered).",
		}, []string{"reason"}),
	}
	// Every reason a refusal is reported for starts at 0, so that a rate over it is defined
	// before the first.
	for _, r := range reportedRefusals() {
		m.refused.WithLabelValues(string(r))
	}
	for _, c := range []prometheus.Collector{m.stuck, m.rescued, m.refused, m.patchErrors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
