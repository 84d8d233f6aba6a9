// Command app stands in for the programs of the example pods on the test node
// (internal/testing/nodejobs): a Job's app (dotnet, python, node, ledger, ...), Argo's argoexec, Tekton's
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
//	APP_TERM_EXIT  the exit code on SIGTERM (default 143): 0 for a log shipper that ends
//	               cleanly when told to
//
// On SIGTERM it prints "app: SIGTERM" and exits 143 (APP_TERM_EXIT), as a program that does not
// catch it would.
// As argoexec init and Tekton's entrypoint init it copies itself to the path given, as they do;
// as a shell running Airflow's XCom loop it waits for SIGINT and exits 0.
//
// It also keeps the orchestrators' order of work, as far as it shows in a pod:
//
//   - as `argoexec emissary` (Argo's main) it writes its exit code to
//     /var/run/argo/ctr/$ARGO_CONTAINER_NAME/exitcode when it ends, as the emissary does;
//   - as `argoexec wait` it waits for /var/run/argo/ctr/main/exitcode, then "uploads the
//     outputs": it GETs APP_CHECK_URL argoUploads times over about 2 s and exits 1 if one fails,
//     as wait uses the network after main has ended;
//   - as Tekton's entrypoint (not init) it waits for its -wait_file before the step, and writes
//     its -post_file (-post_file.err on failure) after it, so steps run one after another;
//   - as a shell without arguments it first runs the lines of its stdin that are
//     `kill -s SIGNAL PID` (Airflow's operator execs /bin/sh and writes `kill -s SIGINT 1` to stop
//     its XCom sidecar); with no stdin (/dev/null) it goes on at once.
package main

import (
	"bufio"
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
	case base == "sh" && len(os.Args) == 1:
		runKills(os.Stdin)
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
		code := 143
		if s := os.Getenv("APP_TERM_EXIT"); s != "" {
			code, _ = strconv.Atoi(s)
		}
		os.Exit(code)
	}()
	if u := os.Getenv("APP_CHECK_URL"); u != "" {
		check(u)
	}
	argo := ""
	if base == "argoexec" && len(os.Args) > 1 {
		argo = os.Args[1]
	}
	var postFile string
	if base == "entrypoint" {
		postFile = tektonWait()
	}
	if d, err := time.ParseDuration(os.Getenv("APP_SLEEP")); err == nil {
		time.Sleep(d)
	}
	code := 0
	if s := os.Getenv("APP_EXIT"); s != "" {
		code, _ = strconv.Atoi(s)
	}
	if argo == "wait" {
		code = argoWait()
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
	switch {
	case argo == "emissary":
		argoExitCode(code)
	case postFile != "":
		tektonPost(postFile, code)
	}
	fmt.Printf("app: exit %d\n", code)
	os.Exit(code)
}

// check GETs u and prints "app: check URL STATUS" (or the error); it reports a 2xx.
func check(u string) bool {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		fmt.Printf("app: check %s %v\n", u, err)
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	fmt.Printf("app: check %s %d\n", u, resp.StatusCode)
	return resp.StatusCode/100 == 2
}

// argoDir is Argo's shared volume, where the emissary writes each container's exit code.
const argoDir = "/var/run/argo/ctr"

// argoUploads is how many times argoexec wait uses the network after main ended, 500 ms apart.
const argoUploads = 5

// argoExitCode writes the exit code as argoexec emissary does, for argoexec wait.
func argoExitCode(code int) {
	dir := filepath.Join(argoDir, os.Getenv("ARGO_CONTAINER_NAME"))
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "exitcode"), []byte(strconv.Itoa(code)), 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "app: writing the exit code: %v\n", err)
	}
}

// argoWait is argoexec wait's work: it waits for main's exit code, then uploads the outputs
// through the sidecar (GETs APP_CHECK_URL), and returns its exit code: 1 if an upload failed.
func argoWait() int {
	f := filepath.Join(argoDir, "main", "exitcode")
	for {
		if b, err := os.ReadFile(f); err == nil {
			fmt.Printf("app: %s main ended with exit code %s\n", time.Now().UTC().Format(time.RFC3339Nano), b)
			break
		}
		time.Sleep(100 * time.Millisecond) // polling the file, as argoexec wait does
	}
	u := os.Getenv("APP_CHECK_URL")
	if u == "" {
		return 0
	}
	code := 0
	for i := range argoUploads {
		if i > 0 {
			time.Sleep(500 * time.Millisecond)
		}
		fmt.Printf("app: upload %d at %s\n", i, time.Now().UTC().Format(time.RFC3339Nano))
		if !check(u) {
			code = 1
		}
	}
	return code
}

// tektonWait waits for the step's -wait_file, as Tekton's entrypoint does (with
// -wait_file_content, for content in it), and returns its -post_file.
func tektonWait() (postFile string) {
	var waitFile string
	content := false
	for i := 1; i < len(os.Args) && os.Args[i] != "--"; i++ {
		switch os.Args[i] {
		case "-wait_file":
			if i+1 < len(os.Args) {
				waitFile = os.Args[i+1]
			}
		case "-post_file":
			if i+1 < len(os.Args) {
				postFile = os.Args[i+1]
			}
		case "-wait_file_content":
			content = true
		}
	}
	if waitFile == "" {
		return postFile
	}
	for {
		if fi, err := os.Stat(waitFile); err == nil && (!content || fi.Size() > 0) {
			break
		}
		if _, err := os.Stat(waitFile + ".err"); err == nil {
			fmt.Printf("app: %s says the step before failed\n", waitFile+".err")
			tektonPost(postFile, 1)
			fmt.Println("app: exit 1")
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond) // polling the file, as the entrypoint does
	}
	fmt.Printf("app: %s found %s\n", time.Now().UTC().Format(time.RFC3339Nano), waitFile)
	return postFile
}

// tektonPost writes the step's post file, as Tekton's entrypoint does: FILE after success,
// FILE.err after a failure.
func tektonPost(postFile string, code int) {
	if postFile == "" {
		return
	}
	if code != 0 {
		postFile += ".err"
	}
	if err := os.WriteFile(postFile, nil, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "app: writing %s: %v\n", postFile, err)
	}
}

// runKills runs the lines of r that are `kill -s SIGNAL PID`, as a shell would, until r ends.
func runKills(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "kill" || f[1] != "-s" {
			fmt.Printf("app: sh: ignoring %q\n", sc.Text())
			continue
		}
		sig, ok := map[string]syscall.Signal{"SIGINT": syscall.SIGINT, "INT": syscall.SIGINT,
			"SIGTERM": syscall.SIGTERM, "TERM": syscall.SIGTERM}[f[2]]
		pid, err := strconv.Atoi(f[3])
		if !ok || err != nil {
			fmt.Printf("app: sh: cannot run %q\n", sc.Text())
			continue
		}
		err = syscall.Kill(pid, sig)
		fmt.Printf("app: sh: %s: %v\n", sc.Text(), err)
	}
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
