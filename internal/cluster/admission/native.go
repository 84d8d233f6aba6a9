package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
)

// Native choice reasons: bounded, as they label a metric.
const (
	NativeGiven      = "given"       // --native always or never
	NativeKubelets   = "kubelets"    // auto: every node that can run the pod runs native sidecars
	NativeOldKubelet = "old-kubelet" // auto: a node that can run the pod runs a kubelet too old (or unreadable)
	NativeNoNode     = "no-node"     // auto: no node can run the pod (none yet, or none its placement matches)
	NativeUnreadable = "unreadable"  // auto: the nodes (the cache not synced, RBAC missing) or the pod's placement unreadable
)

// NativeChoice is, for one pod, whether injection makes native sidecars (inject.Options.Native)
// and why.
type NativeChoice struct {
	Native bool
	Mode   inject.NativeMode
	// Reason is one of the Native* reasons.
	Reason string
	// Why is the sentence the pod's NativeAnnotation and the log give.
	Why string
}

// Annotation is the choice as NativeAnnotation's value: "native (auto): ..." or
// "classic (auto): ...".
func (c NativeChoice) Annotation() string { return fmt.Sprintf("%s (%s): %s", c.way(), c.Mode, c.Why) }

// way is "native" or "classic".
func (c NativeChoice) way() string {
	if c.Native {
		return "native"
	}
	return "classic"
}

// Nodes is the cluster's nodes as the injector knows them (from a cache), or why they are not
// known.
type Nodes func() ([]*corev1.Node, error)

// NativeChooser chooses, per pod, whether injection makes native sidecars: as the mode says, and
// for NativeAuto from the nodes that can run the pod.
type NativeChooser struct {
	Mode  inject.NativeMode
	Nodes Nodes // read for NativeAuto only
}

// Choose decides for a pod (decoded JSON). With NativeAuto it is native only when at least one
// node can run the pod and every node that can runs a kubelet with native sidecars on by
// default (kubeversion.NativeSidecars): a native sidecar on an older kubelet is an init
// container that never ends, and the pod never starts (docs/KUBERNETES.md 9). The nodes that can run the pod are its
// spec.nodeName's, else those its nodeSelector and required node affinity match (matched as the
// scheduler matches them, by component-helpers' nodeaffinity), else all. Taints and
// tolerations are not read: a node they would keep the pod off still counts, which can only
// make the choice classic.
func (c *NativeChooser) Choose(pod map[string]any) NativeChoice {
	ch := NativeChoice{Mode: c.Mode, Reason: NativeGiven}
	switch c.Mode {
	case inject.NativeAlways:
		ch.Native, ch.Why = true, "--native always"
		return ch
	case inject.NativeNever, "":
		ch.Mode, ch.Why = inject.NativeNever, "--native never"
		return ch
	}
	placed, err := placement(pod)
	if err != nil {
		ch.Reason, ch.Why = NativeUnreadable, "the pod's placement is unreadable: "+err.Error()
		return ch
	}
	nodes, err := c.Nodes()
	if err != nil {
		ch.Reason, ch.Why = NativeUnreadable, "the nodes are unreadable: "+err.Error()
		return ch
	}
	cand, by := candidates(placed, nodes)
	if len(cand) == 0 {
		ch.Reason, ch.Why = NativeNoNode, fmt.Sprintf("no node can run the pod (%s, of %d)", by, len(nodes))
		return ch
	}
	var old []string
	has := map[string]bool{} // by kubelet version: a cluster has few
	for _, n := range cand {
		kv := n.Status.NodeInfo.KubeletVersion
		ok, seen := has[kv]
		if !seen {
			v, err := kubeversion.Parse(kv)
			ok = err == nil && kubeversion.NativeSidecars.In(v)
			has[kv] = ok
		}
		if !ok {
			old = append(old, fmt.Sprintf("%s (kubelet %q)", n.Name, kv))
		}
	}
	if len(old) > 0 {
		slices.Sort(old)
		more := ""
		if len(old) > 1 {
			more = fmt.Sprintf(" and %d more", len(old)-1)
		}
		ch.Reason = NativeOldKubelet
		ch.Why = fmt.Sprintf("node %s%s, of %s that can run the pod (%s), has no kubelet of %s or newer, which native sidecars need",
			old[0], more, nodesCount(len(cand)), by, kubeversion.NativeSidecars.Since)
		return ch
	}
	ch.Native, ch.Reason = true, NativeKubelets
	ch.Why = fmt.Sprintf("%s can run the pod (%s), with kubelets of %s or newer", nodesCount(len(cand)), by, kubeversion.NativeSidecars.Since)
	return ch
}

// nodesCount is "1 node", "3 nodes".
func nodesCount(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// candidates are the nodes that can run the pod, and by what they were chosen.
func candidates(pod *corev1.Pod, nodes []*corev1.Node) ([]*corev1.Node, string) {
	if name := pod.Spec.NodeName; name != "" {
		i := slices.IndexFunc(nodes, func(n *corev1.Node) bool { return n.Name == name })
		if i < 0 {
			return nil, "nodeName " + name
		}
		return nodes[i : i+1], "nodeName " + name
	}
	var by []string
	if len(pod.Spec.NodeSelector) > 0 {
		by = append(by, "nodeSelector")
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		by = append(by, "required node affinity")
	}
	if len(by) == 0 {
		return nodes, "any node"
	}
	req := nodeaffinity.GetRequiredNodeAffinity(pod)
	var out []*corev1.Node
	for _, n := range nodes {
		if ok, err := req.Match(n); ok && err == nil { // a term the scheduler cannot parse matches no node
			out = append(out, n)
		}
	}
	return out, strings.Join(by, " and ")
}

// placement is the pod's spec.nodeName, nodeSelector and affinity, typed.
func placement(pod map[string]any) (*corev1.Pod, error) {
	spec, _ := pod["spec"].(map[string]any)
	part := map[string]any{}
	for _, k := range []string{"nodeName", "nodeSelector", "affinity"} {
		if v, ok := spec[k]; ok {
			part[k] = v
		}
	}
	b, err := json.Marshal(part)
	if err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := json.Unmarshal(b, &p.Spec); err != nil {
		return nil, err
	}
	return &p, nil
}
