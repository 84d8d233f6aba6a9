//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// proc is a sidesync-rescuer process: the test binary run again as the command.
type proc struct {
	name    string
	cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []string
	metrics string // its bound metrics address
	probes  string
	exited  chan struct{}
	code    int
}

// startRescuer runs sidesync-rescuer with args (the metrics and probes on loopback port 0,
// JSON logs) and waits until it serves.
func startRescuer(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	args = append([]string{"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0", "--log-format=json"}, args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), execEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	go func() {
		var once sync.Once
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var rec struct {
				Msg, Metrics, Probes string
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "serving" {
				p.mu.Lock()
				p.metrics, p.probes = rec.Metrics, rec.Probes
				p.mu.Unlock()
				once.Do(func() { close(serving) })
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		p.code = cmd.ProcessState.ExitCode()
		_ = err
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() || testing.Verbose() {
			t.Logf("%s's log:\n%s", p.name, strings.Join(p.log(), "\n"))
		}
	})
	select {
	case <-serving:
	case <-p.exited:
		t.Fatalf("%s exited %d before serving:\n%s", name, p.code, strings.Join(p.log(), "\n"))
	case <-time.After(waitLimit):
		t.Fatalf("%s does not serve after %s:\n%s", name, waitLimit, strings.Join(p.log(), "\n"))
	}
	return p
}

func (p *proc) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// logged counts the log lines whose message holds msg, in any case (client-go's leader
// election writes "Successfully acquired lease", earlier releases "successfully ...").
func (p *proc) logged(msg string) int {
	n := 0
	for _, line := range p.log() {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil && strings.Contains(strings.ToLower(rec.Msg), strings.ToLower(msg)) {
			n++
		}
	}
	return n
}

// stop sends SIGTERM and waits for the exit (SIGKILL after waitLimit); it returns the exit code.
func (p *proc) stop(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(waitLimit):
		p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("%s did not stop on SIGTERM within %s", p.name, waitLimit)
	}
	return p.code
}

// scrape reads the process's metrics.
func (p *proc) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + p.metrics + metricsPath)
	if err != nil {
		t.Fatalf("%s's metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s's metrics: %v", p.name, err)
	}
	return fams
}

// value is the value of the series of family name that carries every label of want; 0 when
// there is none.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	sum := 0.0
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// metric is one series' value from a fresh scrape.
func (p *proc) metric(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	return value(p.scrape(t), name, labels)
}

// waitMetric waits until the series is want.
func (p *proc) waitMetric(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s's %s%v to be %v", p.name, name, labels, want), func() (bool, string) {
		got := p.metric(t, name, labels)
		return got == want, fmt.Sprint(got)
	})
}

// reconciles is how many reconciles the process's controller has finished.
func (p *proc) reconciles(t *testing.T) float64 {
	return p.metric(t, "controller_runtime_reconcile_total", map[string]string{"controller": controllerName})
}

// waitIdle waits until the controller has finished more than after reconciles and has nothing
// queued or in hand: whatever it was to make of the changes before, it has made.
func (p *proc) waitIdle(t *testing.T, after float64) {
	t.Helper()
	waitFor(t, p.name+" to reconcile and go idle", func() (bool, string) {
		fams := p.scrape(t)
		done := value(fams, "controller_runtime_reconcile_total", map[string]string{"controller": controllerName})
		depth := value(fams, "workqueue_depth", map[string]string{"name": controllerName})
		active := value(fams, "controller_runtime_active_workers", map[string]string{"controller": controllerName})
		return done > after && depth == 0 && active == 0, fmt.Sprintf("reconciles %v (before: %v), queue %v, active %v", done, after, depth, active)
	})
}
