package main

import (
	"fmt"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// command decides, once, the command line to run: the one after "--", else the one that
// --platform-commands gives for the platform sidesync runs on (an image whose entrypoint differs
// by platform, which `kubectl sidesync inject` resolved from the registry; nothing follows "--"
// then). Everything after looks at what it returns, never at the configuration again.
func (r *runner) command() (command, error) {
	if len(r.cfg.Command) > 0 || r.cfg.PlatformCommands == nil {
		return command{argv: r.cfg.Command}, nil
	}
	argv, platform, err := pickPlatform(r.cfg.PlatformCommands, platformCandidates(runtime.GOOS, runtime.GOARCH, armVersion()))
	if err != nil {
		return command{}, err
	}
	r.log.Info("running the command of this platform", "platform", platform)
	return command{argv: slices.Clone(argv), platform: platform}, nil
}

// noPlatformError is a platform-commands map without an entry for this platform: as for a
// command that is not found, the exit code is 127.
type noPlatformError struct {
	platform string   // this platform, as it is looked up first
	have     []string // the platforms the map has
}

func (e *noPlatformError) Error() string {
	return fmt.Sprintf("no command for this platform (%s) in --platform-commands (SIDESYNC_PLATFORM_COMMANDS); it has %s",
		e.platform, strings.Join(e.have, ", "))
}

// pickPlatform returns the command of the first candidate platform that cmds has.
func pickPlatform(cmds map[string][]string, candidates []string) ([]string, string, error) {
	for _, c := range candidates {
		if argv, ok := cmds[c]; ok {
			return argv, c, nil
		}
	}
	return nil, "", &noPlatformError{platform: candidates[0], have: slices.Sorted(maps.Keys(cmds))}
}

// platformCandidates are the names under which an OCI image index may list the platform
// sidesync runs on, best first. arm64 is written with or without its only variant, v8. A 32-bit
// ARM built for version N runs the code of every older version, and a bare "arm" means v7 (as
// containerd normalises it).
func platformCandidates(goos, goarch string, armVersion int) []string {
	base := goos + "/" + goarch
	switch goarch {
	case "arm64":
		return []string{base, base + "/v8"}
	case "arm":
		var out []string
		for v := armVersion; v >= 5; v-- {
			out = append(out, base+"/v"+strconv.Itoa(v))
			if v == 7 {
				out = append(out, base)
			}
		}
		return out
	}
	return []string{base}
}

// armVersion is the ARM version sidesync was built for (GOARM, "7" or "6,softfloat" in the
// build settings); 7, Go's default, when it was not recorded. It matters only on 32-bit ARM.
func armVersion() int {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOARM" {
				v, _, _ := strings.Cut(s.Value, ",")
				if n, err := strconv.Atoi(v); err == nil {
					return n
				}
			}
		}
	}
	return 7
}
