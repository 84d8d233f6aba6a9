package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/pod/peers"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// peerCheckEvery is how often the last wrapped container to end looks whether peers that had not
// started have started.
const peerCheckEvery = 100 * time.Millisecond

// peering is this container among the pod's wrapped containers (internal/pod/peers): when there
// are several, it joins them before anything waits, and at the end applies their rule to the
// quit, so that the sidecars are told to quit once, by the last of them to end.
type peering struct {
	cfg     *config.Config
	log     *slog.Logger
	signals *signals    // a stop signal ends the wait for peers that never started
	pod     *podVolume  // shared with the resolver, so that the volume is read once
	team    *peers.Team // nil while this container coordinates with none
}

func newPeering(s *session, pod *podVolume) *peering {
	return &peering{cfg: s.cfg, log: s.log, signals: s.signals, pod: pod}
}

// join makes this container one of the pod's wrapped containers, marked running, when there
// are several (--peers, else the pod's sidesync.io/wrapped annotation). It leaves the team nil
// when this container coordinates with none, and says why when it should but cannot.
func (p *peering) join(ctx context.Context) {
	names, from := p.names(ctx)
	if len(names) < 2 {
		return
	}
	attrs := []any{"peers", strings.Join(names, ","), "from", from}
	if missing := p.missing(); missing != "" {
		p.log.Warn("this pod has several wrapped containers, but "+missing+
			": this one tells the sidecars to quit when its own command ends, even while another still runs", attrs...)
		return
	}
	if !slices.Contains(names, p.cfg.Container) {
		p.log.Warn("this container is not among the pod's wrapped containers: it tells the sidecars to quit when its own command ends",
			append(attrs, "container", p.cfg.Container)...)
		return
	}
	team := &peers.Team{Dir: p.cfg.StateDir, Self: p.cfg.Container, Peers: names}
	if err := team.Start(); err != nil {
		p.log.Warn("cannot mark this container running among its peers: it tells the sidecars to quit when its own command ends",
			append(attrs, "state_dir", team.Dir, "err", err)...)
		return
	}
	p.log.Info("one of several wrapped containers: the last to end tells the sidecars to quit",
		append(attrs, "container", team.Self, "state_dir", team.Dir)...)
	p.team = team
}

// names are the pod's wrapped containers: those of --peers or SIDESYNC_PEERS when given (even
// if fewer than two), else those of the sidesync.io/wrapped annotation in the downward-API
// volume, which `kubectl sidesync inject` writes. It returns where they come from too.
func (p *peering) names(ctx context.Context) ([]string, string) {
	if p.cfg.Peers != nil {
		return p.cfg.Peers, "--peers or SIDESYNC_PEERS"
	}
	pi := p.pod.read(ctx)
	if !p.cfg.Detect {
		for _, w := range pi.Warnings {
			p.log.Warn(w) // detection, when it runs, says the same
		}
	}
	value, ok := pi.Annotations[contract.WrappedAnnotation]
	if !ok {
		return nil, ""
	}
	from := "the annotation " + contract.WrappedAnnotation + " in " + p.cfg.PodInfoDir
	var names []string
	for name := range strings.SplitSeq(value, ",") {
		switch name = strings.TrimSpace(name); {
		case name == "" || slices.Contains(names, name):
		case manifest.CheckContainerName(name) != nil:
			p.log.Warn("ignoring a name that is no container's", "name", name, "from", from)
		default:
			names = append(names, name)
		}
	}
	return names, from
}

// missing says what this container lacks to take part among several (only the annotation
// can name them without it: the configuration requires it with --peers).
func (p *peering) missing() string {
	var missing []string
	if p.cfg.Container == "" {
		missing = append(missing, "no --container (SIDESYNC_CONTAINER, POD_CONTAINER_NAME) names this container")
	}
	if p.cfg.StateDir == "" {
		missing = append(missing, "no --state-dir (SIDESYNC_STATE_DIR) names the directory they share")
	}
	return strings.Join(missing, " and ")
}

// letQuit applies the peers' rule to a quit that the policy and the restart rules allow (skip;
// hasTargets says whether it would tell any sidecar to quit): unless the kubelet restarts this
// container in place (it still runs, as its mark says), it marks itself ended, then reads the
// others' marks, in this order, so that of two ending at once at least one sees the other ended.
// It keeps the sidecars while another wrapped container runs; a peer that never started is
// waited for, bounded (awaitStart).
func (p *peering) letQuit(o outcome, skip quitSkip, hasTargets bool) quitSkip {
	team := p.team
	if team == nil || skip.state == quitSkippedRestart {
		return skip
	}
	if err := team.End(exitCode(o)); err != nil {
		// Its mark would say running forever, and hold the others' quit: it goes, so that they
		// take this container for one that never started, which they wait for only so long.
		leaveErr := team.Leave()
		p.log.Warn("cannot mark this container ended among its peers: it tells the sidecars to quit as if it were alone",
			"state_dir", team.Dir, "err", err, "mark_removed", leaveErr == nil)
		return skip
	}
	if !skip.sends() || !hasTargets {
		return skip
	}
	st := team.Others()
	if len(st.Running) == 0 && len(st.NotStarted) > 0 {
		st = p.awaitStart(st)
	}
	switch {
	case len(st.Running) > 0:
		return quitSkip{quitSkippedPeers, "not telling the sidecars to quit: other wrapped containers still run, and the last to end tells the sidecars to quit",
			[]any{"running", strings.Join(st.Running, ",")}}
	case len(st.NotStarted) > 0:
		p.log.Warn("telling the sidecars to quit although wrapped containers never started: if one starts later, it finds no sidecar, waits for it, and exits 69",
			"never_started", strings.Join(st.NotStarted, ","))
	}
	return skip
}

// awaitStart waits, up to --peer-start-timeout, while the only peers that have not ended are
// some that never started (an image still being pulled), until one starts (it tells the sidecars
// to quit when it ends) or all have ended. After a stop signal the pod is being deleted: nothing
// more will start, and it does not wait.
func (p *peering) awaitStart(st peers.Status) peers.Status {
	notStarted := strings.Join(st.NotStarted, ",")
	switch {
	case p.signals.gotStop():
		p.log.Info("not waiting for wrapped containers that never started: a stop signal came", "not_started", notStarted)
		return st
	case p.cfg.PeerStartTimeout == 0:
		return st
	}
	p.log.Info("waiting for wrapped containers that have not started", "not_started", notStarted, "timeout", p.cfg.PeerStartTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.PeerStartTimeout)
	defer cancel()
	go func() {
		select {
		case <-p.signals.stopRequested():
			p.log.Info("stopped waiting for wrapped containers that never started: a stop signal came", "not_started", notStarted)
			cancel()
		case <-ctx.Done():
		}
	}()
	return p.team.AwaitStart(ctx, peerCheckEvery)
}
