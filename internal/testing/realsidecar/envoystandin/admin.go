package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// handleAdmin serves the admin endpoints the agent uses (docs/SIDECARS.md §1).
func (s *standIn) handleAdmin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.Header().Set("Cache-Control", "no-cache, max-age=0")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	mutating := map[string]bool{"/quitquitquit": true, "/drain_listeners": true, "/healthcheck/fail": true, "/healthcheck/ok": true}
	if mutating[r.URL.Path] && r.Method != http.MethodPost {
		s.event("admin", "method", r.Method, "path", r.URL.Path, "status", "405")
		// Not checked against Envoy's own wording: the agent never sends these with GET.
		w.WriteHeader(http.StatusMethodNotAllowed)
		fmt.Fprintf(w, "Method %s not allowed, POST required.\n", r.Method)
		return
	}
	switch r.URL.Path {
	case "/stats":
		s.handleStats(w, r)
	case "/ready":
		state := s.state()
		code := http.StatusOK
		if state != stateLive {
			code = http.StatusServiceUnavailable
		}
		s.event("admin", "method", r.Method, "path", r.URL.Path, "status", strconv.Itoa(code), "state", stateName(state))
		w.WriteHeader(code)
		io.WriteString(w, stateName(state)+"\n")
	case "/drain_listeners":
		s.event("admin", "method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery, "status", "200")
		io.WriteString(w, "OK\n")
	case "/healthcheck/fail", "/healthcheck/ok":
		s.mu.Lock()
		s.hcFailed = r.URL.Path == "/healthcheck/fail"
		s.mu.Unlock()
		s.event("admin", "method", r.Method, "path", r.URL.Path, "status", "200")
		io.WriteString(w, "OK\n")
	case "/quitquitquit":
		s.event("admin", "method", r.Method, "path", r.URL.Path, "status", "200")
		io.WriteString(w, "OK\n")
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		s.quitOnce.Do(func() { close(s.quit) })
	default:
		s.event("admin", "method", r.Method, "path", r.URL.Path, "status", "404")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "invalid path. admin commands are: /drain_listeners /healthcheck/fail /healthcheck/ok /quitquitquit /ready /stats\n")
	}
}

// state is the server.state gauge: INITIALIZING until the readiness polls have counted down,
// DRAINING after /healthcheck/fail, else LIVE.
func (s *standIn) state() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

func (s *standIn) stateLocked() int {
	switch {
	case s.liveAt < 0 || s.readies <= s.liveAt:
		return stateInitializing
	case s.hcFailed:
		return stateDraining
	}
	return stateLive
}

func stateName(state int) string {
	return map[int]string{stateLive: "LIVE", stateDraining: "DRAINING", 2: "PRE_INITIALIZING", stateInitializing: "INITIALIZING"}[state]
}

// handleStats answers GET /stats?usedonly&filter=RE2 in Envoy's text format, "name: value" per
// line in name order. A poll whose filter names server.state counts as a readiness poll, one
// that names cds or lds update_success as an update poll; the knobs count those.
func (s *standIn) handleStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	filter := q.Get("filter")
	re, err := regexp.Compile(filter)
	if err != nil {
		s.event("stats", "filter", filter, "status", "400")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "Invalid re2 regex\n")
		return
	}
	s.mu.Lock()
	kind := ""
	switch {
	case re.MatchString("server.state"):
		kind = "ready"
		s.readies++
	case re.MatchString("cluster_manager.cds.update_success"):
		kind = "update"
		s.updates++
	}
	stats := s.statsLocked()
	n := map[string]int{"ready": s.readies, "update": s.updates}[kind]
	s.mu.Unlock()

	names := make([]string, 0, len(stats))
	for name := range stats {
		if re.MatchString(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	var shown []string
	for _, name := range names {
		v := stats[name]
		if _, used := q["usedonly"]; used && v.counter && v.value == 0 {
			continue // a counter never incremented is unused
		}
		fmt.Fprintf(&b, "%s: %d\n", name, v.value)
		shown = append(shown, fmt.Sprintf("%s=%d", name, v.value))
	}
	s.event("stats", "kind", kind, "n", strconv.Itoa(n), "shown", strings.Join(shown, ","))
	io.WriteString(w, b.String())
}

type statValue struct {
	value   int
	counter bool
}

// statsLocked is the stats table as Envoy would have it now, for the polls counted so far.
func (s *standIn) statsLocked() map[string]statValue {
	config := 0
	if s.configAt >= 0 && s.updates > s.configAt {
		config = 1
	}
	state := s.stateLocked()
	workers := 0
	if state != stateInitializing {
		workers = 1
	}
	return map[string]statValue{
		"cluster_manager.cds.update_attempt":      {config + 1, true},
		"cluster_manager.cds.update_success":      {config, true},
		"cluster_manager.cds.update_rejected":     {0, true},
		"listener_manager.lds.update_attempt":     {config + 1, true},
		"listener_manager.lds.update_success":     {config, true},
		"listener_manager.lds.update_rejected":    {0, true},
		"listener_manager.total_listeners_active": {len(s.status), false},
		"listener_manager.workers_started":        {workers, false},
		"server.concurrency":                      {2, false},
		"server.live":                             {map[bool]int{true: 1}[state == stateLive], false},
		"server.state":                            {state, false},
	}
}
