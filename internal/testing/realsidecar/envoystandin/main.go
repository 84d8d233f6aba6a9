// Command envoystandin stands in for Envoy under Istio's real pilot-agent in tests
// (realsidecar.StartIstioAgent). The agent starts it as its "binaryPath" with Envoy's command
// line, -c <bootstrap.json> --drain-time-s N ...; it reads the admin address, the "agent"
// cluster and the listeners routed to that cluster from the bootstrap the agent rendered, and
// serves what the agent asks of Envoy's admin (istio.io/istio pilot/cmd/pilot-agent/status/util
// stats.go, pkg/envoy/admin.go) plus the status listener (15021) that forwards /healthz/ready to
// the agent, as the bootstrap's route does.
//
// Knobs come from the environment, which the agent passes on to Envoy:
//
//	ENVOY_STANDIN_CONFIG_AFTER=N|never  update-stats polls answered "no CDS/LDS update yet" (0)
//	ENVOY_STANDIN_LIVE_AFTER=N|never    readiness-stats polls answered INITIALIZING, no workers (0)
//
// Counting polls rather than time keeps tests free of timers: the agent polls only when asked
// for /healthz/ready. Every request is reported on stdout (the agent's stdout) as one event
// line, "envoy-standin NAME key=value ...", written in one write.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Envoy's server states, the value of the server.state gauge (envoy admin v3 ServerInfo.State).
const (
	stateLive         = 0
	stateDraining     = 1
	stateInitializing = 3
)

func main() {
	// Envoy dies with the agent's SIGKILL of it; when the agent itself is killed, a real Envoy
	// would linger, which a test must not: die with the parent. A parent gone before that was
	// set leaves this process to the PID namespace's init: unless that init is the agent itself,
	// as in a pod's istio-proxy container, where pilot-agent is PID 1.
	parent := os.Getppid()
	dieWithParent()
	if os.Getppid() != parent || parent == 1 && !agentIsInit() {
		os.Exit(1)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("envoy", flag.ContinueOnError)
	config := fs.String("c", "", "bootstrap file")
	drain := fs.Int("drain-time-s", 600, "drain time")
	var ignored stringsFlag // the rest of Envoy's command line, taking one value each
	for _, name := range []string{"drain-strategy", "local-address-ip-version", "file-flush-interval-msec",
		"file-flush-min-size-kb", "l", "component-log-level", "concurrency", "config-yaml"} {
		fs.Var(&ignored, name, "ignored")
	}
	for _, name := range []string{"disable-hot-restart", "allow-unknown-static-fields", "skip-deprecated-logs", "enable-core-dump"} {
		fs.Bool(name, false, "ignored")
	}
	if err := fs.Parse(args); err != nil {
		return 1
	}
	s, err := newStandIn(*config)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envoy-standin: %v\n", err)
		return 1
	}
	return s.serve(*drain)
}

type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// standIn is the Envoy stand-in: its addresses from the bootstrap and its state.
type standIn struct {
	admin     string   // host:port of the admin listener
	agent     string   // host:port of the "agent" cluster's endpoint
	status    []string // host:port of the listeners that route /healthz/ready to "agent"
	configAt  int      // update polls before config; -1: never
	liveAt    int      // readiness polls before LIVE; -1: never
	mu        sync.Mutex
	updates   int  // update-stats polls so far
	readies   int  // readiness-stats polls so far
	forwarded int  // requests on the status listeners so far
	hcFailed  bool // POST /healthcheck/fail was called
	quit      chan struct{}
	quitOnce  sync.Once
	eventLock sync.Mutex
}

func newStandIn(path string) (*standIn, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var boot bootstrap
	if err := json.Unmarshal(b, &boot); err != nil {
		return nil, fmt.Errorf("bootstrap %s: %w", path, err)
	}
	s := &standIn{admin: boot.Admin.Address.hostPort(), quit: make(chan struct{})}
	for _, c := range boot.Static.Clusters {
		if c.Name == "agent" && len(c.Load.Endpoints) > 0 && len(c.Load.Endpoints[0].LB) > 0 {
			s.agent = c.Load.Endpoints[0].LB[0].Endpoint.Address.hostPort()
		}
	}
	for _, l := range boot.Static.Listeners {
		if routesTo(l.Raw, "/healthz/ready", "agent") {
			s.status = append(s.status, l.Address.hostPort())
		}
	}
	if s.admin == "" || s.agent == "" || len(s.status) == 0 {
		return nil, fmt.Errorf("bootstrap %s: admin %q, agent cluster %q, status listeners %q: something is missing", path, s.admin, s.agent, s.status)
	}
	if s.configAt, err = knob("ENVOY_STANDIN_CONFIG_AFTER"); err != nil {
		return nil, err
	}
	if s.liveAt, err = knob("ENVOY_STANDIN_LIVE_AFTER"); err != nil {
		return nil, err
	}
	return s, nil
}

// knob reads a poll count: unset is 0, "never" is -1.
func knob(name string) (int, error) {
	v := os.Getenv(name)
	switch v {
	case "":
		return 0, nil
	case "never":
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a count or \"never\"", name, v)
	}
	return n, nil
}

// serve binds every listener, reports "started", and serves until /quitquitquit or a signal.
func (s *standIn) serve(drain int) int {
	admin, err := net.Listen("tcp", s.admin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "envoy-standin: admin: %v\n", err)
		return 1
	}
	go http.Serve(admin, http.HandlerFunc(s.handleAdmin))
	for _, addr := range s.status {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "envoy-standin: status listener: %v\n", err)
			return 1
		}
		go http.Serve(l, s.statusHandler(addr))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	s.event("started", "pid", strconv.Itoa(os.Getpid()), "admin", s.admin, "agent", s.agent,
		"status", strings.Join(s.status, ","), "drain-time-s", strconv.Itoa(drain))
	select {
	case <-s.quit:
		s.event("exit", "code", "0", "why", "quitquitquit")
		return 0
	case sig := <-sigs:
		s.event("exit", "code", "0", "why", sig.String())
		return 0
	}
}

// event writes one event line in one write, so that lines never interleave with the agent's.
func (s *standIn) event(name string, kv ...string) {
	var b strings.Builder
	b.WriteString("envoy-standin " + name)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" || strings.ContainsAny(v, " \t\n\"") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + kv[i] + "=" + v)
	}
	b.WriteString("\n")
	s.eventLock.Lock()
	defer s.eventLock.Unlock()
	_, _ = io.WriteString(os.Stdout, b.String())
}

// agentIsInit reports whether PID 1 of this PID namespace is Istio's pilot-agent.
func agentIsInit() bool {
	cmdline, err := os.ReadFile("/proc/1/cmdline")
	return err == nil && strings.Contains(string(cmdline), "pilot-agent")
}
