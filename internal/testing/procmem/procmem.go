// Package procmem reads a live process's memory figures from /proc/PID/status, for the
// benchmarks and the soaks (never for the pod binary).
package procmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is what /proc/PID/status says of a process's memory, in KiB.
type Memory struct {
	HWM  int64 // VmHWM: the peak resident set
	RSS  int64 // VmRSS: the resident set now
	Anon int64 // RssAnon: of which private memory
	File int64 // RssFile: of which file pages (the binary's own, shared and reclaimable)
}

// Read reads the memory figures of process pid. It fails when the process is gone, or has no
// memory any more (a zombie's status has no VmHWM).
func Read(pid int) (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	found := false
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			m.HWM, found = n, true
		case "VmRSS":
			m.RSS = n
		case "RssAnon":
			m.Anon = n
		case "RssFile":
			m.File = n
		}
	}
	if !found {
		return Memory{}, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}
