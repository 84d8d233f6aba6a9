//go:build !linux

package main

// dieWithParent does nothing where there is no PR_SET_PDEATHSIG; pilot-agent is run on Linux only.
func dieWithParent() {}
