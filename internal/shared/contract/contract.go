// Package contract is the contract between what puts sidesync into a pod (`kubectl sidesync
// inject`, the admission webhook) and the sidesync binary and image in it: paths, volume and
// container names, annotations, the names of the wrapper's flags that injection writes, and how
// a flag's environment variable is named. Both sides import it, so each name is written once
// (as Tekton's pkg/pod and pkg/entrypoint share theirs). It is a leaf: standard library only.
//
// Changing a value is a breaking change for pods injected before.
package contract

import (
	"path"
	"strconv"
	"strings"
)

// Paths, in the sidesync image and in a wrapped container.
const (
	// BinaryName is the name of the sidesync binary, in the image and in a wrapped container:
	// a word of ASCII letters, so that a regular expression takes it as it is (RunsSidesyncCEL).
	BinaryName = "sidesync"
	// ImageBinary is where the sidesync image holds the binary: its root, its entrypoint.
	ImageBinary = "/" + BinaryName
	// BinDir is where the binary is mounted, read-only, in every wrapped container; with an image
	// volume the image's root is mounted there, so the binary is BinDir + ImageBinary either way.
	BinDir = "/sidesync/bin"
	// Binary is the path of sidesync in a wrapped container: the first word of its command.
	Binary = BinDir + ImageBinary
	// InstallDir is where the install init container mounts the binary's volume, writable, to
	// copy the binary into it with `sidesync install InstallDir`. It is not under /sidesync: in
	// the sidesync image /sidesync is the binary, a file, and no volume can be mounted below it.
	InstallDir = "/sidesync-install"
	// PodInfoDir is where the downward-API volume with the pod's annotations and labels is
	// mounted in a wrapped container.
	PodInfoDir = "/sidesync/podinfo"
	// StateDir is where the pod's wrappers share their state (a small emptyDir): each marks there
	// that its command runs or has ended, so that the sidecars are told to quit once, by the last.
	StateDir = "/sidesync/state"
	// Owned is the directory below which every path above but InstallDir lies: a mount of the
	// user's there would clash with sidesync's.
	Owned = "/sidesync"
)

// Files of the downward-API volume, below PodInfoDir (or the wrapper's --pod-info).
const (
	PodInfoAnnotations = "annotations" // metadata.annotations, one key="value" per line
	PodInfoLabels      = "labels"      // metadata.labels, likewise
)

// Names of what injection adds to a pod.
const (
	// InitContainer copies the binary into BinVolume (the init-copy delivery).
	InitContainer = "sidesync-install"
	// BinVolume holds the binary: an emptyDir (init-copy) or the sidesync image (image-volume).
	BinVolume = "sidesync-bin"
	// PodInfoVolume is the downward-API volume with the pod's annotations and labels.
	PodInfoVolume = "sidesync-podinfo"
	// StateVolume is the emptyDir the wrappers share, mounted at StateDir.
	StateVolume = "sidesync-state"
)

// Annotations on the pod (a Pod's own metadata, or a pod template's).
const (
	// SidecarsAnnotation is the user's own list of the pod's sidecars, in the syntax of --sidecar
	// and SIDESYNC_SIDECARS ("vault:quit-port=8201,cloudsql"). Injection never writes it.
	SidecarsAnnotation = "sidesync.io/sidecars"
	// FoundAnnotation is the list, in the same syntax, of the sidecars injection found in the
	// manifest ("cloudsql:ready-port=9190,quit-port=9191,native=true"). The wrapper reads both
	// from the downward-API volume, with the marks a mesh's webhook adds later, and needs no API
	// credentials; where both name a profile, the user's entry wins.
	FoundAnnotation = "sidesync.io/found-sidecars"
	// InjectedAnnotation records the sidesync version and the delivery ("v0.1.0 init-copy"), so
	// that injection can tell what it added before (idempotence, ownership).
	InjectedAnnotation = "sidesync.io/injected"
	// WrappedAnnotation names the pod's wrapped containers ("main,wait"): the wrappers' peers.
	// The sidecars are told to quit after the last of them has ended.
	WrappedAnnotation = "sidesync.io/wrapped"
	// ClassicAnnotation is the user's list of the pod's containers that stay as they are written
	// ("cloud-sql-proxy,fluent-bit"): inject never turns one of them into a native sidecar.
	// Injection never writes it.
	ClassicAnnotation = "sidesync.io/classic"
)

// Flags of the wrapper that injection writes, or that tools read from a wrapped container. The
// flag table of internal/shared/config uses these names.
const (
	FlagPodInfo          = "pod-info"
	FlagSidecar          = "sidecar"
	FlagStateDir         = "state-dir"
	FlagPeers            = "peers"
	FlagContainer        = "container"
	FlagRestartPolicy    = "restart-policy"
	FlagRestartRules     = "restart-rules"
	FlagPlatformCommands = "platform-commands"
)

// Env is the SIDESYNC_* variable that mirrors the wrapper's flag: --quit-url is
// SIDESYNC_QUIT_URL. Injection sets the restart and platform settings this way.
func Env(flag string) string {
	return "SIDESYNC_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// RunsSidesync reports whether a container whose command is command runs sidesync: the first
// word is a program called BinaryName, in any directory (Binary, which inject writes, or a
// sidesync the user baked into an image and wrote by hand). Inject leaves such a container as it
// is (wrapping it would put one sidesync inside another), lint reads its command line as
// sidesync's, and the admission policies leave it as inject does (RunsSidesyncCEL).
func RunsSidesync(command []string) bool {
	return len(command) > 0 && path.Base(command[0]) == BinaryName
}

// RunsSidesyncCEL is RunsSidesync in CEL, for the container that the CEL expression c names (as
// the API server hands it: no command field when it has none). path.Base drops trailing
// slashes, so "/opt/sidesync/" runs sidesync too. It is written with strings and strconv only,
// and the pod binary, which never calls it, does not link it.
func RunsSidesyncCEL(c string) string {
	return "(has(" + c + ".command) && size(" + c + ".command) > 0 && " + c + ".command[0].matches(" +
		strconv.Quote("(^|/)"+BinaryName+"/*$") + "))"
}
