// Command pause is the sandbox ("pause") image of the test node's pods (kubetest.StartNode):
// it holds the pod's namespaces, reaps what is given to it, and exits on SIGTERM or SIGINT.
// It is built static and put alone in a scratch image by kubetest.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
