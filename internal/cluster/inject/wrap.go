package inject

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// ownedFlags are the wrapper's flags that inject writes, and rewrites on every inject.
var ownedFlags = []string{contract.FlagPodInfo, contract.FlagStateDir, contract.FlagContainer, contract.FlagSidecar}

// flags are the wrapper's flags before "--": where the pod's annotations are; with several
// wrapped containers, where they share their state and which of them this is; and the sidecars
// the user named. The sidecars the manifest shows are not among them, since a --sidecar turns
// the wrapper's detection off, and with it the sidecars a mesh's webhook adds after inject:
// they go into contract.FoundAnnotation, which the wrapper reads with the mesh's marks.
func flags(o Options, name string, peers int) []string {
	f := []string{"--" + contract.FlagPodInfo + "=" + contract.PodInfoDir}
	if peers > 1 {
		f = append(f, "--"+contract.FlagStateDir+"="+contract.StateDir, "--"+contract.FlagContainer+"="+name)
	}
	for _, s := range o.Sidecars {
		f = append(f, "--"+contract.FlagSidecar+"="+s)
	}
	return f
}

// wrapContainer makes sidesync the container's command: command [Binary], args [flags...,
// "--", argv...], so that the user's words stay in args, where kubelet expands $(VAR). With
// per-platform argvs, nothing follows "--" and the wrapper's platform-commands variable holds
// them.
func wrapContainer(d decision, o Options, pod *manifest.PodView, peers int) error {
	c := d.c.M
	c["command"] = []any{contract.Binary}
	c["args"] = anyList(slices.Concat(flags(o, d.c.Name, peers), []string{"--"}, d.argv))
	if d.pinned != "" {
		c["image"] = d.pinned
	}
	var extra []any
	if d.byPlat != nil {
		j, err := platformCommands(d.byPlat)
		if err != nil {
			return fmt.Errorf("%s: %w", d.c.Path, err)
		}
		extra = []any{envVar(contract.Env(contract.FlagPlatformCommands), j)}
	}
	if err := setEnv(d.c, pod, extra, ownedEnv); err != nil {
		return err
	}
	return mountVolumes(d.c, peers)
}

// refreshContainer brings a container that sidesync wraps already up to date: the flags inject
// owns (the user's other flags, and what follows "--", stay as they are), its restart
// variables and its mounts. Its platform commands stay, which only a registry could renew.
func refreshContainer(d decision, o Options, pod *manifest.PodView, peers int) error {
	dash := slices.Index(d.c.Args, "--")
	if dash < 0 {
		return fmt.Errorf("%s: runs %s without \"--\" in its args, so inject cannot tell its flags from its command; put \"--\" before the command", d.c.Path, contract.Binary)
	}
	own := flags(o, d.c.Name, peers)
	d.c.M["args"] = anyList(slices.Concat(own, userFlags(d.c.Args[:dash]), d.c.Args[dash:]))
	if err := setEnv(d.c, pod, nil, restartEnv); err != nil {
		return err
	}
	return mountVolumes(d.c, peers)
}

// userFlags are the wrapper flags that inject does not own: those the user added.
func userFlags(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(words[i], "-"), "=")
		if !slices.Contains(ownedFlags, name) {
			out = append(out, words[i])
			continue
		}
		if !hasValue {
			i++ // --name VALUE
		}
	}
	return out
}

// setEnv replaces inject's variables in the container's env: first drops the entries drop tells
// (ownedEnv or restartEnv), then appends extra and the restart variables. The user's entries
// keep their place.
// The restart settings are those restart.Effective reads from the pod, checked with the
// wrapper's own parser, so that what inject writes is what the wrapper reads.
func setEnv(c *manifest.Container, pod *manifest.PodView, extra []any, drop func(any) bool) error {
	policy, rules := contract.Env(contract.FlagRestartPolicy), contract.Env(contract.FlagRestartRules)
	spec, err := restart.Effective(c.RestartPolicy, pod.RestartPolicy, c.RestartPolicyRules)
	if err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	env, err := manifest.ListAt(c.M, "env", c.Path)
	if err != nil {
		return err
	}
	env = append(without(env, drop), extra...)
	env = append(env, envVar(policy, string(spec.Policy)))
	if spec.Rules != nil {
		env = append(env, envVar(rules, restart.FormatRules(spec.Rules)))
	}
	c.M["env"] = env
	return nil
}

// platformCommands is the per-platform argvs as the value of the wrapper's platform-commands
// variable.
func platformCommands(byPlat map[string][]string) (string, error) {
	if len(byPlat) == 0 {
		return "", errors.New("no platform")
	}
	return compactJSON(byPlat)
}

func envVar(name, value string) map[string]any {
	return map[string]any{"name": name, "value": value}
}

// mountVolumes mounts the binary's volume at BinDir and the pod's annotations at PodInfoDir,
// both read-only, and with several wrapped containers their shared state at StateDir, replacing
// inject's earlier mounts.
func mountVolumes(c *manifest.Container, peers int) error {
	mounts, err := manifest.ListAt(c.M, "volumeMounts", c.Path)
	if err != nil {
		return err
	}
	mounts = append(without(mounts, ownedMount),
		map[string]any{"name": contract.BinVolume, "mountPath": contract.BinDir, "readOnly": true},
		map[string]any{"name": contract.PodInfoVolume, "mountPath": contract.PodInfoDir, "readOnly": true})
	if peers > 1 {
		mounts = append(mounts, map[string]any{"name": contract.StateVolume, "mountPath": contract.StateDir})
	}
	c.M["volumeMounts"] = mounts
	return nil
}
