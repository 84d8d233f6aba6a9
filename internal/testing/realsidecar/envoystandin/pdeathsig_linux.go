package main

import "syscall"

// dieWithParent asks the kernel for SIGKILL when the parent (the agent) dies.
func dieWithParent() {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0)
}
