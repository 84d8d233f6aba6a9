package config

import (
	"testing"
	"time"
)

// TestPeers: the peers, the state directory and this container's name, from flags, SIDESYNC_*
// variables and POD_CONTAINER_NAME; a flag or variable that names fewer than two peers is kept
// (non-nil), so that it overrides the pod's annotation.
func TestPeers(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want func(*Config)
	}{
		{"nothing: the annotation may say", nil, nil, func(*Config) {}},
		{"flags", []string{"--peers", "main,wait", "--state-dir", "/s", "--container", "main"}, nil, func(c *Config) {
			c.Peers, c.StateDir, c.Container = []string{"main", "wait"}, "/s", "main"
		}},
		{"variables", nil, []string{"SIDESYNC_PEERS=main , wait", "SIDESYNC_STATE_DIR=/s", "SIDESYNC_CONTAINER=wait", "SIDESYNC_PEER_START_TIMEOUT=0"}, func(c *Config) {
			c.Peers, c.StateDir, c.Container, c.PeerStartTimeout = []string{"main", "wait"}, "/s", "wait", 0
		}},
		{"POD_CONTAINER_NAME", []string{"--peers=main,wait", "--state-dir=/s"}, []string{"POD_CONTAINER_NAME=wait"}, func(c *Config) {
			c.Peers, c.StateDir, c.Container = []string{"main", "wait"}, "/s", "wait"
		}},
		{"SIDESYNC_CONTAINER beats POD_CONTAINER_NAME", nil, []string{"SIDESYNC_CONTAINER=main", "POD_CONTAINER_NAME=wait"}, func(c *Config) { c.Container = "main" }},
		{"the flag beats both", []string{"--container", "app"}, []string{"SIDESYNC_CONTAINER=main", "POD_CONTAINER_NAME=wait"}, func(c *Config) { c.Container = "app" }},
		{"one peer: no coordination, nothing else needed", []string{"--peers", "main"}, nil, func(c *Config) { c.Peers = []string{"main"} }},
		{"no peer, given: overrides the annotation", []string{"--peers="}, nil, func(c *Config) { c.Peers = []string{} }},
		{"one name twice is one peer", []string{"--peers", "main,main,"}, nil, func(c *Config) { c.Peers = []string{"main"} }},
		{"repeated flag", []string{"--peers", "main", "--peers", "wait", "--state-dir", "/s", "--container", "wait"}, nil, func(c *Config) {
			c.Peers, c.StateDir, c.Container = []string{"main", "wait"}, "/s", "wait"
		}},
		{"peer start timeout", []string{"--peer-start-timeout", "300ms"}, nil, func(c *Config) { c.PeerStartTimeout = 300 * time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkConfig(t, tt.args, tt.env, with(tt.want))
		})
	}
}

// TestPeersUsageErrors: every problem with the peers' settings at once, naming the flag or
// variable.
func TestPeersUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"two peers alone", []string{"--peers", "main,wait"}, nil, []string{
			`--peers "main,wait" names several wrapped containers: --state-dir (SIDESYNC_STATE_DIR) must name the directory they share`,
			`--peers "main,wait" names several wrapped containers: --container (SIDESYNC_CONTAINER, or POD_CONTAINER_NAME) must say which of them this one is`}},
		{"not among the peers", []string{"--state-dir", "/s"}, []string{"SIDESYNC_PEERS=main,wait", "SIDESYNC_CONTAINER=app"}, []string{
			`SIDESYNC_CONTAINER="app" is not among SIDESYNC_PEERS="main,wait": this container must be one of its peers`}},
		{"not among the peers, from POD_CONTAINER_NAME", []string{"--state-dir", "/s", "--peers", "main,wait"}, []string{"POD_CONTAINER_NAME=app"}, []string{
			`POD_CONTAINER_NAME="app" is not among --peers "main,wait"`}},
		{"not names", []string{"--peers", "main,Wait,a_b", "--container", "-x"}, []string{"POD_CONTAINER_NAME=ok"}, []string{
			`--peers "main,Wait,a_b": "Wait" is not a container name`, `--container "-x": "-x" is not a container name`}},
		{"bad variable", nil, []string{"SIDESYNC_PEERS=main/../x", "SIDESYNC_PEER_START_TIMEOUT=soon"}, []string{
			`SIDESYNC_PEERS="main/../x": "main/../x" is not a container name`, `SIDESYNC_PEER_START_TIMEOUT="soon": not a duration`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(ModeRun, append(tt.args, "--", "true"), envOf(tt.env...))
			checkProblems(t, err, tt.want)
		})
	}
}
