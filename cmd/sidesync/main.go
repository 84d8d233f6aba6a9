// Command sidesync keeps an application in step with the sidecars of its Kubernetes pod: it
// waits until the sidecar is ready, runs the command, forwards signals to it, reaps zombies when
// it is PID 1, tells the sidecar to quit when the command ends, and exits with the command's
// exit code. Run "sidesync --help" for usage.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr))
}
