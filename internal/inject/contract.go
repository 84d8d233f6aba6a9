// Package inject is the one mutation that puts sidesync into a pod: a pure function over a Pod,
// Job or CronJob object (as decoded JSON, so that fields it does not know survive), used by
// `kubectl sidesync inject` and, later, by the admission webhook. It does no I/O: entrypoints
// that must come from a registry are resolved beforehand and passed in.
package inject

// The contract between what inject writes into a pod and what the sidesync binary and image
// expect. Changing one of these is a breaking change for pods injected before.
const (
	// ImageBinary is where the sidesync image holds the binary: its root, its entrypoint.
	ImageBinary = "/sidesync"
	// BinDir is where the binary is mounted, read-only, in every wrapped container; with an image
	// volume the image's root is mounted there, so the binary is BinDir + ImageBinary either way.
	BinDir = "/sidesync/bin"
	// Binary is the path of sidesync in a wrapped container: the first word of its command.
	Binary = BinDir + "/sidesync"
	// InstallDir is where the install init container mounts the shared volume, writable, to copy
	// the binary into it with `sidesync install InstallDir`. It is not under /sidesync: in the
	// sidesync image /sidesync is the binary, a file, and a volume cannot be mounted below it.
	InstallDir = "/sidesync-install"
	// PodInfoDir is where the downward-API volume with the pod's annotations and labels is
	// mounted; the wrapper is given --pod-info PodInfoDir.
	PodInfoDir = "/sidesync/podinfo"

	// InitContainer is the name of the init container that copies the binary (init-copy).
	InitContainer = "sidesync-install"
	// BinVolume is the name of the volume that holds the binary: an emptyDir (init-copy) or an
	// image volume (image-volume).
	BinVolume = "sidesync-bin"
	// PodInfoVolume is the name of the downward-API volume.
	PodInfoVolume = "sidesync-podinfo"

	// SidecarsAnnotation lists, on the pod template, the sidecars that inject found in the
	// manifest, in the syntax of --sidecar and SIDESYNC_SIDECARS ("cloudsql:ready-port=9190,
	// quit-port=9191,native=true"). The wrapper reads it from the downward-API volume together
	// with the annotations a mesh's webhook adds later, and needs no API credentials.
	SidecarsAnnotation = "sidesync.io/sidecars"
	// InjectedAnnotation records, on the pod template, the sidesync version and the wrapped
	// containers, so that inject can tell what it did before (idempotence).
	InjectedAnnotation = "sidesync.io/injected"

	// EnvRestartPolicy and EnvRestartRules tell the wrapper whether its container will be
	// restarted in place after an exit, in which case it must not tell the sidecars to quit:
	// the effective restartPolicy of the container (its own, else the pod's: Never, OnFailure
	// or Always) and its restartPolicyRules as JSON (Kubernetes >= 1.35). They are the
	// SIDESYNC_* variables of the wrapper's --restart-policy and --restart-rules flags.
	EnvRestartPolicy = "SIDESYNC_RESTART_POLICY"
	EnvRestartRules  = "SIDESYNC_RESTART_RULES"
	// EnvPlatformCommands carries, for a container without a command whose image has a
	// different ENTRYPOINT/CMD per platform, a JSON object from "os/arch[/variant]" to the argv;
	// the wrapper runs the one for the platform it runs on (its --platform-commands flag).
	EnvPlatformCommands = "SIDESYNC_PLATFORM_COMMANDS"
)
