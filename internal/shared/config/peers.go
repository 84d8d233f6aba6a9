package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Flags of the pod's several wrapped containers (internal/pod/peers).
const (
	flagPeers            = contract.FlagPeers
	flagStateDir         = contract.FlagStateDir
	flagContainer        = contract.FlagContainer
	flagPeerStartTimeout = "peer-start-timeout"
)

// podContainerEnv is the older variable that names this container, read when neither
// --container nor SIDESYNC_CONTAINER is set (detection of the restart rules read it first).
const podContainerEnv = "POD_CONTAINER_NAME"

// peerListValue is a list of container names: repeat the flag, or separate them with commas.
// Empty entries are dropped and repeats are kept once. Setting it, even to nothing, makes the
// list non-nil: a flag or variable that names no peers still overrides the pod's annotation.
type peerListValue struct{ list *[]string }

func (v peerListValue) String() string {
	if v.list == nil {
		return ""
	}
	return strings.Join(*v.list, ",")
}

func (v peerListValue) Set(s string) error {
	if *v.list == nil {
		*v.list = []string{}
	}
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name == "" || slices.Contains(*v.list, name) {
			continue
		}
		if err := manifest.CheckContainerName(name); err != nil {
			return err
		}
		*v.list = append(*v.list, name)
	}
	return nil
}

// containerValue is a container's name.
type containerValue struct{ s *string }

func (v containerValue) String() string { return stringValue(v).String() }

func (v containerValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if err := manifest.CheckContainerName(s); err != nil {
		return err
	}
	*v.s = s
	return nil
}

// applyPodContainerName sets --container from POD_CONTAINER_NAME when no flag or SIDESYNC_*
// variable set it.
func (p *parser) applyPodContainerName() {
	if v, ok := p.env(podContainerEnv); ok {
		p.setDefault(flagContainer, podContainerEnv, v)
	}
}

// checkPeers checks that a container told of two or more peers can take part: it needs the
// directory they share and its own name, which must be one of them. Fewer than two peers mean
// no coordination, and nothing else is needed.
func (p *parser) checkPeers(cfg *Config) {
	if len(cfg.Peers) < 2 {
		return
	}
	peersFrom := describe(p.sourceOr(flagPeers), strings.Join(cfg.Peers, ","))
	if cfg.StateDir == "" {
		p.problem(fmt.Errorf("%s names several wrapped containers: --%s (%s) must name the directory they share (an emptyDir mounted in each)",
			peersFrom, flagStateDir, EnvName(flagStateDir)))
	}
	switch {
	case cfg.Container == "":
		p.problem(fmt.Errorf("%s names several wrapped containers: --%s (%s, or %s) must say which of them this one is",
			peersFrom, flagContainer, EnvName(flagContainer), podContainerEnv))
	case !slices.Contains(cfg.Peers, cfg.Container):
		p.problem(fmt.Errorf("%s is not among %s: this container must be one of its peers",
			describe(p.sourceOr(flagContainer), cfg.Container), peersFrom))
	}
}
