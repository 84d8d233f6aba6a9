package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// stampArg makes this program the wrapped command: it prints the time it started running (as
// early as a Go program can), or with "exit" the time just before it exits, and exits 0.
const stampArg = "stamp"

var startedAt = time.Now() // package initialisation: as early as main's package can look

func stamp(args []string) int {
	t := startedAt
	if len(args) > 0 && args[0] == "exit" {
		t = time.Now()
	}
	fmt.Println(t.UnixNano())
	return 0
}

// policy is a waiting policy to compare.
type policy struct {
	name  string
	flags func(admin string) (args, env []string)
}

func policies() []policy {
	return []policy{
		{"sidesync default (constant 20 ms)", func(admin string) ([]string, []string) {
			return []string{"--admin", admin}, nil
		}},
		{"the article's (Polly decorrelated jitter, interval=1, maxRetries=10)", func(admin string) ([]string, []string) {
			return nil, []string{"PROXY=true", "proxyEndpoint=" + admin + "/", "interval=1", "maxRetries=10"}
		}},
	}
}

// lagResult is one policy's ready-to-start lags.
type lagResult struct {
	policy   string
	launched []time.Duration // sidecar LIVE -> sidesync has exec'd the command
	running  []time.Duration // sidecar LIVE -> the command's first instruction in main's package
	rate     []float64       // probes per second while waiting
}

// measureLag runs each policy against sidecars that turn ready after the same seeded random
// delays, interleaved so that both see the same machine.
func (s *suite) measureLag(r *results) error {
	rng := rand.New(rand.NewPCG(s.o.seed, 0x5eed))
	ps := policies()
	r.lag = make([]lagResult, len(ps))
	for i := range ps {
		r.lag[i].policy = ps[i].name
	}
	for run := 0; run < s.o.runs; run++ {
		delay := time.Duration((s.o.minReady + rng.Float64()*(s.o.maxReady-s.o.minReady)) * float64(time.Second))
		for i, p := range ps {
			launched, running, rate, err := s.lagOnce(p, delay)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", p.name, run+1, err)
			}
			r.lag[i].launched = append(r.lag[i].launched, launched)
			r.lag[i].running = append(r.lag[i].running, running)
			r.lag[i].rate = append(r.lag[i].rate, rate)
		}
	}
	return nil
}

// lagOnce starts a sidecar that turns LIVE after delay and sidesync with the policy, and
// measures from LIVE to the command.
func (s *suite) lagOnce(p policy, delay time.Duration) (launched, running time.Duration, rate float64, err error) {
	em, err := s.startEmulator("--ready-after", delay.String())
	if err != nil {
		return 0, 0, 0, err
	}
	defer em.kill()
	args, env := p.flags("http://" + em.addr)
	cmd := exec.Command(s.binary, append(append(args, "--log-format", "json", "--quit", "never", "--"), s.self, stampArg)...)
	cmd.Env = s.env(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, 0, fmt.Errorf("sidesync: %v\n%s", err, stderr.String())
	}
	live, ok := em.find("state", func(f map[string]string) bool { return f["state"] == "LIVE" })
	if !ok {
		return 0, 0, 0, fmt.Errorf("the sidecar never turned LIVE")
	}
	started, err := logTime(stderr.Bytes(), "command started")
	if err != nil {
		return 0, 0, 0, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(stdout.String()), 10, 64)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("the command printed %q", stdout.String())
	}
	return started.Sub(live.Time), time.Unix(0, ns).Sub(live.Time), probeRate(em.all("request", isReadyProbe)), nil
}

// logTime finds the time of sidesync's JSON log line with message msg.
func logTime(log []byte, msg string) (time.Time, error) {
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		var line struct {
			Time time.Time `json:"time"`
			Msg  string    `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == msg {
			return line.Time, nil
		}
	}
	return time.Time{}, fmt.Errorf("no %q in sidesync's log:\n%s", msg, log)
}

// probeRate is probes per second between the first probe and the last.
func probeRate(probes []event) float64 {
	if len(probes) < 2 {
		return 0
	}
	span := probes[len(probes)-1].Time.Sub(probes[0].Time).Seconds()
	return float64(len(probes)-1) / span
}
