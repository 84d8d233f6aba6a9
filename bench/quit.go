package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// quitResult is the quit latency with n sidecars.
type quitResult struct {
	sidecars int
	request  []time.Duration // the command's exit -> the last sidecar got its quit request
	exited   []time.Duration // the command's exit -> the last sidecar process exited
}

// measureQuit runs a command that exits at once, with one and with three sidecars.
func (s *suite) measureQuit(r *results) error {
	for _, n := range []int{1, 3} {
		res := quitResult{sidecars: n}
		for run := 0; run < s.o.quitRuns; run++ {
			req, exited, err := s.quitOnce(n)
			if err != nil {
				return fmt.Errorf("%d sidecars, run %d: %w", n, run+1, err)
			}
			res.request = append(res.request, req)
			res.exited = append(res.exited, exited)
		}
		r.quit = append(r.quit, res)
	}
	return nil
}

// quitOnce starts n ready sidecars and sidesync with a command that prints the time and exits,
// and measures from that time to the sidecars' quit requests and exits.
func (s *suite) quitOnce(n int) (request, exited time.Duration, err error) {
	var ems []*emulator
	defer func() {
		for _, em := range ems {
			em.kill()
		}
	}()
	args := []string{}
	for i := 0; i < n; i++ {
		em, err := s.startEmulator()
		if err != nil {
			return 0, 0, err
		}
		ems = append(ems, em)
		args = append(args, "--sidecar", fmt.Sprintf("envoy:port=%s,name=envoy-%d", em.port, i+1))
	}
	cmd := exec.Command(s.binary, append(args, "--", s.self, stampArg, "exit")...)
	cmd.Env = s.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("sidesync: %v\n%s", err, stderr.String())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(stdout.String()), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("the command printed %q", stdout.String())
	}
	exitAt := time.Unix(0, ns) // printed just before the command exits
	for _, em := range ems {
		gone, err := em.wait(10 * time.Second)
		if err != nil {
			return 0, 0, err
		}
		q, ok := em.find("quit", nil)
		if !ok {
			return 0, 0, fmt.Errorf("a sidecar got no quit request")
		}
		request, exited = max(request, q.Time.Sub(exitAt)), max(exited, gone.Sub(exitAt))
	}
	return request, exited, nil
}
