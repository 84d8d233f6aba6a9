package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// MaxReview is the largest AdmissionReview read: the API server refuses objects over 3 MiB,
// and a review holds the object (and, for an update, the old one).
const MaxReview = 8 << 20

// MaxSlotWait is the longest a request waits for one of Server.Slots.
const MaxSlotWait = time.Second

// DefaultBudget is how long a request may take when the API server says nothing (it sends its
// timeout as ?timeout=10s).
const DefaultBudget = 10 * time.Second

// Metrics are the webhook's Prometheus metrics.
type Metrics struct {
	Admissions *prometheus.CounterVec   // by webhook, outcome, reason
	Latency    *prometheus.HistogramVec // by webhook, seconds, millisecond buckets
	Lookups    *prometheus.CounterVec   // registry lookups by result
	Native     *prometheus.CounterVec   // the pods' native choices by way (native, classic) and reason
	InFlight   prometheus.Gauge
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidesync_injector_admissions_total",
			Help: "Admission requests answered, by webhook (mutate, warn), outcome (wrapped, unchanged, skipped, denied, error) and skip reason."},
			[]string{"webhook", "outcome", "reason"}),
		Latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sidesync_injector_admission_duration_seconds",
			Help:    "Time to answer an admission request, at the handler.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10}},
			[]string{"webhook"}),
		Lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidesync_injector_registry_lookups_total",
			Help: "Images whose ENTRYPOINT and CMD were needed, by result: read from the registry, cached, error, timeout."}, []string{"result"}),
		Native: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sidesync_injector_native_choices_total",
			Help: "Pods for which the webhook chose native or classic sidecars, by way and reason (given, kubelets, old-kubelet, no-node, unreadable: the nodes or the pod's placement)."},
			[]string{"way", "reason"}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sidesync_injector_in_flight",
			Help: "Admission requests being answered."}),
	}
	reg.MustRegister(m.Admissions, m.Latency, m.Lookups, m.Native, m.InFlight)
	return m
}

// Server serves the two webhooks over HTTP (the caller adds TLS).
type Server struct {
	Mutator *Mutator
	Warner  *Warner
	Metrics *Metrics
	Log     *slog.Logger
	// Slots caps the requests answered at once; a request waits for a slot within its budget,
	// then is answered with an error (the webhook's failurePolicy decides). Nil: no cap.
	Slots chan struct{}
}

// Handler routes MutatePath and WarnPath.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+MutatePath, func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, "mutate", s.Mutator.mutate)
	})
	mux.HandleFunc("POST "+WarnPath, func(w http.ResponseWriter, r *http.Request) {
		s.serve(w, r, "warn", s.Warner.warn)
	})
	return mux
}

// serve reads an AdmissionReview, answers it with answer within the request's budget, counts
// and logs it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, webhook string, answer answerFunc) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), budget(r))
	defer cancel()
	if s.Slots != nil {
		// A request waits for a slot a quarter of its budget, 1 s at most: past that the
		// injector is overloaded, and answering at once lets the failure policy decide while the
		// API server still listens, instead of working on requests whose caller has given up.
		// The handler is CPU-bound: more slots than a few per core only make every answer later.
		wait := time.NewTimer(min(budget(r)/4, MaxSlotWait))
		select {
		case s.Slots <- struct{}{}:
			wait.Stop()
			defer func() { <-s.Slots }()
		case <-wait.C:
			s.count(webhook, Errored, "busy", start)
			http.Error(w, "sidesync: too many requests at once", http.StatusServiceUnavailable)
			return
		case <-ctx.Done():
			wait.Stop()
			s.count(webhook, Errored, "busy", start)
			http.Error(w, "sidesync: too many requests at once", http.StatusServiceUnavailable)
			return
		}
	}
	if s.Metrics != nil {
		s.Metrics.InFlight.Inc()
		defer s.Metrics.InFlight.Dec()
	}
	review, obj, err := readReview(r)
	if err != nil {
		s.count(webhook, Errored, "", start)
		s.Log.Warn("admission request not read", "webhook", webhook, "err", err)
		http.Error(w, "sidesync: "+err.Error(), http.StatusBadRequest)
		return
	}
	res := answer(ctx, review.Request, obj)
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: res.Response}
	body, err := json.Marshal(out)
	if err != nil {
		s.count(webhook, Errored, "", start)
		http.Error(w, "sidesync: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
	s.count(webhook, res.Outcome, res.Reason, start)
	req := review.Request
	lvl := level(res.Outcome)
	native := ""
	if res.Native != nil {
		native = res.Native.Annotation()
		if s.Metrics != nil {
			s.Metrics.Native.WithLabelValues(res.Native.way(), res.Native.Reason).Inc()
		}
		if res.Native.Reason == NativeUnreadable {
			lvl = max(lvl, slog.LevelWarn) // the choice fell back to classic: say so
		}
	}
	if !s.Log.Enabled(ctx, lvl) {
		return
	}
	name := res.Name
	if name == "" {
		name = req.Name
	}
	s.Log.LogAttrs(ctx, lvl, "admission", slog.String("webhook", webhook), slog.String("uid", string(req.UID)),
		slog.String("namespace", req.Namespace), slog.String("kind", req.Kind.Kind), slog.String("name", name),
		slog.Bool("dry_run", req.DryRun != nil && *req.DryRun), slog.String("outcome", string(res.Outcome)), slog.String("reason", res.Reason),
		slog.Int("ops", res.Ops), slog.Int("warnings", len(res.Response.Warnings)), slog.String("message", res.Message), slog.String("native", native),
		slog.Duration("took", time.Since(start)))
}

func (s *Server) count(webhook string, o Outcome, reason string, start time.Time) {
	if s.Metrics == nil {
		return
	}
	s.Metrics.Admissions.WithLabelValues(webhook, string(o), reason).Inc()
	s.Metrics.Latency.WithLabelValues(webhook).Observe(time.Since(start).Seconds())
}

func level(o Outcome) slog.Level {
	switch o {
	case Denied, Errored:
		return slog.LevelWarn
	case Skipped:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// budget is the API server's timeout for the request (?timeout=10s), less a margin for the
// answer's way back; DefaultBudget when it says none.
func budget(r *http.Request) time.Duration {
	d, err := time.ParseDuration(r.URL.Query().Get("timeout"))
	if err != nil || d <= 0 {
		d = DefaultBudget
	}
	return d - min(d/10, 500*time.Millisecond)
}

// answerFunc answers one request whose object readReview decoded (nil: the request's own
// Object.Raw, to be decoded).
type answerFunc func(ctx context.Context, req *admissionv1.AdmissionRequest, obj map[string]any) Result

// readReview reads an admission.k8s.io/v1 AdmissionReview with a request, and returns the
// request's object decoded, taken out of the review (its Object.Raw left empty). The review is
// decoded once, with internal/shared/jsonlite; only what is left without the object goes through
// encoding/json into the typed review. encoding/json read the whole review, scanning the object
// twice (its validity check, then the RawExtension's skip) before the object was decoded again:
// a third of the handler's CPU for a 64 KiB pod. Now it costs 10 to 20% less CPU at 16 and
// 64 KiB, and some 25 us more at 1 KiB, whose review is mostly not the pod and is read twice
// (BENCHMARKS.md, "Beside Istio's injector").
func readReview(r *http.Request) (*admissionv1.AdmissionReview, map[string]any, error) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return nil, nil, fmt.Errorf("content type %q, want application/json", ct)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxReview+1))
	if err != nil {
		return nil, nil, err
	}
	if len(body) > MaxReview {
		return nil, nil, errors.New("the review is over " + strconv.Itoa(MaxReview) + " bytes")
	}
	v, err := manifest.DecodeJSONObject(body)
	if err != nil {
		return nil, nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	var obj map[string]any
	if req, ok := v["request"].(map[string]any); ok {
		if obj, ok = req["object"].(map[string]any); ok {
			delete(req, "object")
		}
	}
	rest, err := jsonlite.Append(nil, v)
	if err != nil {
		return nil, nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(rest, &review); err != nil {
		return nil, nil, fmt.Errorf("not an AdmissionReview: %w", err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		return nil, nil, fmt.Errorf("%s %s: want admission.k8s.io/v1 AdmissionReview", review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, nil, errors.New("the review has no request")
	}
	return &review, obj, nil
}
