package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/pod/detect"
	"github.com/sidesync/sidesync/internal/pod/peers"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// peerCheckEvery is how often the last wrapped container to end looks whether peers that had not
// started have started.
const peerCheckEvery = 100 * time.Millisecond

// joinPeers makes this container one of the pod's wrapped containers, marked running, when there
// are several (--peers, else the pod's sidesync.io/wrapped annotation): the sidecars are then told
// to quit once, by the last of them to end (internal/pod/peers). It returns nil when this container
// coordinates with none, and says why when it should but cannot.
func (s *session) joinPeers(ctx context.Context) *peers.Team {
	names, from := s.peerNames(ctx)
	if len(names) < 2 {
		return nil
	}
	attrs := []any{"peers", strings.Join(names, ","), "from", from}
	if missing := s.peersMissing(); missing != "" {
		s.log.Warn("this pod has several wrapped containers, but "+missing+
			": this one tells the sidecars to quit when its own command ends, even while another still runs", attrs...)
		return nil
	}
	if !slices.Contains(names, s.cfg.Container) {
		s.log.Warn("this container is not among the pod's wrapped containers: it tells the sidecars to quit when its own command ends",
			append(attrs, "container", s.cfg.Container)...)
		return nil
	}
	team := &peers.Team{Dir: s.cfg.StateDir, Self: s.cfg.Container, Peers: names}
	if err := team.Start(); err != nil {
		s.log.Warn("cannot mark this container running among its peers: it tells the sidecars to quit when its own command ends",
			append(attrs, "state_dir", team.Dir, "err", err)...)
		return nil
	}
	s.log.Info("one of several wrapped containers: the last to end tells the sidecars to quit",
		append(attrs, "container", team.Self, "state_dir", team.Dir)...)
	return team
}

// peerNames are the pod's wrapped containers: those of --peers or SIDESYNC_PEERS when given (even
// if fewer than two), else those of the sidesync.io/wrapped annotation in the downward-API
// volume, which `kubectl sidesync inject` writes. It returns where they come from too.
func (s *session) peerNames(ctx context.Context) ([]string, string) {
	if s.cfg.Peers != nil {
		return s.cfg.Peers, "--peers or SIDESYNC_PEERS"
	}
	pi := s.readPodInfo(ctx)
	if !s.cfg.Detect {
		for _, w := range pi.Warnings {
			s.log.Warn(w) // detection, when it runs, says the same
		}
	}
	value, ok := pi.Annotations[contract.WrappedAnnotation]
	if !ok {
		return nil, ""
	}
	from := "the annotation " + contract.WrappedAnnotation + " in " + s.cfg.PodInfoDir
	var names []string
	for name := range strings.SplitSeq(value, ",") {
		switch name = strings.TrimSpace(name); {
		case name == "" || slices.Contains(names, name):
		case manifest.CheckContainerName(name) != nil:
			s.log.Warn("ignoring a name that is no container's", "name", name, "from", from)
		default:
			names = append(names, name)
		}
	}
	return names, from
}

// readPodInfo reads the downward-API volume once, for the peers and for detection alike.
func (s *session) readPodInfo(ctx context.Context) *detect.PodInfo {
	if s.podInfo == nil {
		pi := detect.ReadPodInfo(ctx, s.cfg.PodInfoDir)
		s.podInfo = &pi
	}
	return s.podInfo
}

// peersMissing says what this container lacks to take part among several (only the annotation
// can name them without it: the configuration requires it with --peers).
func (s *session) peersMissing() string {
	var missing []string
	if s.cfg.Container == "" {
		missing = append(missing, "no --container (SIDESYNC_CONTAINER, POD_CONTAINER_NAME) names this container")
	}
	if s.cfg.StateDir == "" {
		missing = append(missing, "no --state-dir (SIDESYNC_STATE_DIR) names the directory they share")
	}
	return strings.Join(missing, " and ")
}

// peersLetQuit applies the peers' rule to a quit that the policy and the restart rules allow:
// unless the kubelet restarts this container in place (it still runs, as its mark says), it marks
// itself ended, then reads the others' marks, in this order, so that of two ending at once at
// least one sees the other ended. It keeps the sidecars while another wrapped container runs; a
// peer that never started is waited for, bounded (awaitPeerStart).
func (s *session) peersLetQuit(team *peers.Team, o outcome, skip quitSkip) quitSkip {
	if team == nil || skip.state == quitSkippedRestart {
		return skip
	}
	if err := team.End(exitCode(o)); err != nil {
		// Its mark would say running forever, and hold the others' quit: it goes, so that they
		// take this container for one that never started, which they wait for only so long.
		leaveErr := team.Leave()
		s.log.Warn("cannot mark this container ended among its peers: it tells the sidecars to quit as if it were alone",
			"state_dir", team.Dir, "err", err, "mark_removed", leaveErr == nil)
		return skip
	}
	if !skip.sends() || !s.hasQuitTargets(o.plan) {
		return skip
	}
	st := team.Others()
	if len(st.Running) == 0 && len(st.NotStarted) > 0 {
		st = s.awaitPeerStart(team, st)
	}
	switch {
	case len(st.Running) > 0:
		return quitSkip{quitSkippedPeers, "not telling the sidecars to quit: other wrapped containers still run, and the last to end tells the sidecars to quit",
			[]any{"running", strings.Join(st.Running, ",")}}
	case len(st.NotStarted) > 0:
		s.log.Warn("telling the sidecars to quit although wrapped containers never started: if one starts later, it finds no sidecar, waits for it, and exits 69",
			"never_started", strings.Join(st.NotStarted, ","))
	}
	return skip
}

// awaitPeerStart waits, up to --peer-start-timeout, while the only peers that have not ended are
// some that never started (an image still being pulled), until one starts (it tells the sidecars
// to quit when it ends) or all have ended. After a stop signal the pod is being deleted: nothing
// more will start, and it does not wait.
func (s *session) awaitPeerStart(team *peers.Team, st peers.Status) peers.Status {
	notStarted := strings.Join(st.NotStarted, ",")
	switch {
	case s.signals.gotStop():
		s.log.Info("not waiting for wrapped containers that never started: a stop signal came", "not_started", notStarted)
		return st
	case s.cfg.PeerStartTimeout == 0:
		return st
	}
	s.log.Info("waiting for wrapped containers that have not started", "not_started", notStarted, "timeout", s.cfg.PeerStartTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.PeerStartTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.signals.stopRequested():
			s.log.Info("stopped waiting for wrapped containers that never started: a stop signal came", "not_started", notStarted)
			cancel()
		case <-ctx.Done():
		}
	}()
	return team.AwaitStart(ctx, peerCheckEvery)
}
