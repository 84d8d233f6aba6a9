package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// suite holds what every measurement needs.
type suite struct {
	o       options
	dir     string // scratch directory
	log     io.Writer
	binary  string   // the release build of sidesync
	small   string   // the release build with -tags nokubeapi
	emu     []string // the emulator's command, up to the profile
	minimal string   // a minimal Go fork/exec/wait wrapper: what any Go wrapper costs here
	size    int64
	smallSz int64
	self    string // this program, run as the wrapped command in stamp mode
	goVer   string
	started time.Time
}

// results is everything measured.
type results struct {
	machine  machine
	size     int64
	smallSz  int64
	lag      []lagResult
	quit     []quitResult
	overhead overheadResult
	memory   []memoryResult
	micro    []microResult
	took     time.Duration
}

// prepare builds the release binary as it ships (static, trimmed, stripped), the same without
// the Kubernetes API (-tags nokubeapi), and a minimal Go wrapper as a reference point.
func (s *suite) prepare() error {
	s.started = time.Now()
	s.binary, s.small = filepath.Join(s.dir, "sidesync"), filepath.Join(s.dir, "sidesync-nokubeapi")
	if err := s.build(".", s.binary, "./cmd/sidesync"); err != nil {
		return fmt.Errorf("building sidesync (run from the repository root): %w", err)
	}
	if err := s.build(".", s.small, "-tags", "nokubeapi", "./cmd/sidesync"); err != nil {
		return err
	}
	if err := s.buildMinimal(); err != nil {
		return err
	}
	if err := s.buildEmulator(); err != nil {
		return err
	}
	var err error
	if s.size, err = fileSize(s.binary); err != nil {
		return err
	}
	if s.smallSz, err = fileSize(s.small); err != nil {
		return err
	}
	if s.self, err = os.Executable(); err != nil {
		return err
	}
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	s.goVer = strings.TrimSpace(string(out))
	if err != nil || s.goVer == "" {
		s.goVer = runtime.Version()
	}
	return nil
}

// build runs go build in dir with the release settings.
func (s *suite) build(dir, out string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags=-s -w", "-o", out}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	return cmd.Run()
}

// minimalWrapper is the least a Go wrapper can do: fork/exec its command and wait for it.
const minimalWrapper = `package main

import (
	"os"
	"os/exec"
	"syscall"
)

func main() {
	path, _ := exec.LookPath(os.Args[1])
	pid, err := syscall.ForkExec(path, os.Args[1:], &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		os.Exit(127)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	os.Exit(ws.ExitStatus())
}
`

func (s *suite) buildMinimal() error {
	dir := filepath.Join(s.dir, "minimal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module minimal\n\ngo 1.26\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(minimalWrapper), 0o644); err != nil {
		return err
	}
	s.minimal = filepath.Join(s.dir, "minimal-wrapper")
	return s.build(dir, s.minimal, ".")
}

// buildEmulator builds cmd/sidesync-emulator, the emulated sidecars' program.
func (s *suite) buildEmulator() error {
	path := filepath.Join(s.dir, "sidesync-emulator")
	s.emu = []string{path, "emulate"}
	return s.build(".", path, "./cmd/sidesync-emulator")
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// step is one measurement.
type step struct {
	name string
	run  func(*suite, *results) error
}

var steps = []step{
	{"lag", (*suite).measureLag},
	{"quit", (*suite).measureQuit},
	{"overhead", (*suite).measureOverhead},
	{"memory", (*suite).measureMemory},
	{"micro", (*suite).measureMicro},
}

func stepNames() []string {
	var names []string
	for _, st := range steps {
		names = append(names, st.name)
	}
	return names
}

// measure runs every measurement in turn, never two at once: they would disturb each other.
func (s *suite) measure() (*results, error) {
	r := &results{machine: describeMachine(s.goVer), size: s.size, smallSz: s.smallSz}
	for _, st := range steps {
		if s.o.only != nil && !s.o.only[st.name] {
			continue
		}
		start := time.Now()
		fmt.Fprintf(s.log, "bench: %s...\n", st.name)
		if err := st.run(s, r); err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
		fmt.Fprintf(s.log, "bench: %s took %v\n", st.name, time.Since(start).Round(time.Second))
	}
	r.took = time.Since(s.started)
	return r, nil
}

// env is the environment of every sidesync run: nothing of any contract leaks in from the
// machine, and no termination message is written.
func (s *suite) env(extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "SIDESYNC_TERMINATION_LOG=", "SIDESYNC_POD_INFO=" + s.dir + "/none"}, extra...)
}

// machine describes where the numbers were taken.
type machine struct {
	cpus   int
	model  string
	kernel string
	goVer  string
}

func describeMachine(goVer string) machine {
	m := machine{cpus: runtime.NumCPU(), goVer: goVer, model: "unknown CPU", kernel: "unknown kernel"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for l := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}
