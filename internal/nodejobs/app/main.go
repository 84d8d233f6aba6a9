// Command app stands in for the programs of the example pods on the test node
// (internal/nodejobs): a Job's app (dotnet, python, node, ledger, ...), Argo's argoexec, Tekton's
// entrypoint and a shell. It is one static binary, copied into each image at the path the pod's
// command names, and does what a real one would do as far as sidesync can tell: it starts, uses
// the network through its sidecar, and ends with an exit code.
//
// Its environment (set in the image's config, so the manifests stay as written):
//
//	APP_CHECK_URL  GET it at start and print "app: check URL STATUS" (or the error): the sidecar
//	               was ready, or not, when the app started
//	APP_SLEEP      a duration to wait before ending (Go syntax)
//	APP_EXIT       the exit code (default 0)
//	APP_EXITS      with APP_RUNS: a comma-separated exit code per run, the last one repeated
//	APP_RUNS       a file (in a volume that outlives the container) where each run appends a
//	               line: a container restarted in place knows which run it is
//	APP_IGNORE_TERM
//	               "1": ignore SIGTERM (a program that must be killed at the grace period)
//
// On SIGTERM it prints "app: SIGTERM" and exits 143, as a program that does not catch it would.
// As argoexec init and Tekton's entrypoint init it copies itself to the path given, as they do;
// as a shell running Airflow's XCom loop it waits for SIGINT and exits 0.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	fmt.Printf("app: %s started as %q\n", time.Now().UTC().Format(time.RFC3339Nano), os.Args)
	base := filepath.Base(os.Args[0])
	switch {
	case base == "argoexec" && len(os.Args) > 1 && os.Args[1] == "init":
		copySelf("/var/run/argo/argoexec")
		return
	case base == "entrypoint" && len(os.Args) > 3 && os.Args[1] == "init":
		copySelf(os.Args[3])
		return
	case base == "sh" && len(os.Args) > 2 && strings.Contains(os.Args[2], `trap "exit 0" INT`):
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT)
		<-sig
		fmt.Println("app: SIGINT")
		return
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		if os.Getenv("APP_IGNORE_TERM") == "1" {
			fmt.Println("app: SIGTERM ignored")
			return
		}
		fmt.Println("app: SIGTERM")
		os.Exit(143)
	}()
	if u := os.Getenv("APP_CHECK_URL"); u != "" {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(u)
		if err != nil {
			fmt.Printf("app: check %s %v\n", u, err)
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("app: check %s %d\n", u, resp.StatusCode)
		}
	}
	if d, err := time.ParseDuration(os.Getenv("APP_SLEEP")); err == nil {
		time.Sleep(d)
	}
	code := 0
	if s := os.Getenv("APP_EXIT"); s != "" {
		code, _ = strconv.Atoi(s)
	}
	if f := os.Getenv("APP_RUNS"); f != "" {
		before, _ := os.ReadFile(f)
		run := strings.Count(string(before), "\n")
		exits := strings.Split(os.Getenv("APP_EXITS"), ",")
		code, _ = strconv.Atoi(exits[min(run, len(exits)-1)])
		fd, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(fd, "run %d\n", run)
			fd.Close()
		}
		fmt.Printf("app: run %d\n", run)
	}
	fmt.Printf("app: exit %d\n", code)
	os.Exit(code)
}

// copySelf copies the running binary to dst, executable, as argoexec init and Tekton's
// entrypoint init copy theirs into a shared volume.
func copySelf(dst string) {
	data, err := os.ReadFile("/proc/self/exe")
	if err == nil {
		err = os.WriteFile(dst, data, 0o755)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "app: copying itself to %s: %v\n", dst, err)
		os.Exit(1)
	}
	fmt.Printf("app: copied itself to %s\n", dst)
}
