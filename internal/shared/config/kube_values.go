package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// The flag.Value types of what `kubectl sidesync inject` copies from the pod into the wrapper's
// environment (internal/cluster/inject, contract.go): the restart rules and the per-platform commands.
// Empty means unknown, as for a variable.

// restartPolicyValue is a Kubernetes restartPolicy: Never, OnFailure or Always.
type restartPolicyValue struct{ p *restart.Policy }

func (v restartPolicyValue) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v restartPolicyValue) Set(s string) error {
	p, err := restart.ParsePolicy(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

// restartRulesValue is a container's restartPolicyRules as JSON.
type restartRulesValue struct{ rules *[]restart.Rule }

func (v restartRulesValue) String() string {
	if v.rules == nil || *v.rules == nil {
		return ""
	}
	return restart.FormatRules(*v.rules)
}

func (v restartRulesValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*v.rules = nil
		return nil
	}
	rules, err := restart.ParseRules(s)
	if err != nil {
		return err
	}
	*v.rules = rules
	return nil
}

// platformCommandsValue is a JSON object from "os/arch[/variant]" to a command line:
// {"linux/amd64": ["/app", "--serve"], "linux/arm64/v8": ["/app-arm64", "--serve"]}.
type platformCommandsValue struct{ m *map[string][]string }

func (v platformCommandsValue) String() string {
	if v.m == nil || *v.m == nil {
		return ""
	}
	b, _ := jsonlite.Append(nil, *v.m) // sorted keys
	return string(b)
}

func (v platformCommandsValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*v.m = nil
		return nil
	}
	m, err := ParsePlatformCommands(s)
	if err != nil {
		return err
	}
	*v.m = m
	return nil
}

// platformExample shows the expected form in messages.
const platformExample = `{"linux/amd64": ["/app", "--serve"], "linux/arm64": ["/app-arm64", "--serve"]}`

// ParsePlatformCommands reads the value of --platform-commands (SIDESYNC_PLATFORM_COMMANDS)
// strictly: every key a platform (CheckPlatform), every value a command line with a program.
// It is the wrapper's parser, and `kubectl sidesync inject` checks what it writes with it, so
// that inject never writes a value the wrapper refuses (a refused value stops the wrapper on
// every platform).
func ParsePlatformCommands(s string) (map[string][]string, error) {
	v, err := jsonlite.Decode([]byte(s))
	switch {
	case errors.Is(err, jsonlite.ErrTrailing):
		return nil, errors.New("not a JSON object from platform to command: something follows the object")
	case err != nil:
		return nil, fmt.Errorf("not a JSON object from platform to command like %s: %v", platformExample, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object from platform to command like %s", platformExample)
	}
	m := make(map[string][]string, len(obj))
	for _, key := range slices.Sorted(maps.Keys(obj)) { // sorted: the same input, the same message
		cmd := obj[key]
		words, ok := cmd.([]any)
		if !ok && cmd != nil {
			return nil, fmt.Errorf("not a JSON object from platform to command like %s: %q: the command is not a list of strings", platformExample, key)
		}
		var argv []string
		for _, w := range words {
			s, ok := w.(string)
			if !ok {
				return nil, fmt.Errorf("not a JSON object from platform to command like %s: %q: the command is not a list of strings", platformExample, key)
			}
			argv = append(argv, s)
		}
		m[key] = argv
	}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		if err := CheckPlatform(key); err != nil {
			return nil, err
		}
		if len(m[key]) == 0 || m[key][0] == "" {
			return nil, fmt.Errorf("%q: the command is empty", key)
		}
	}
	return m, nil
}

// CheckPlatform checks a key of ParsePlatformCommands: os/arch or os/arch/variant, each part
// lower-case letters, digits or underscores, as OCI image indexes name platforms (their fields
// are case-sensitive: "linux/AMD64" is no platform the wrapper runs on).
func CheckPlatform(key string) error {
	if !isPlatform(key) {
		return fmt.Errorf("%q is not a platform: write os/arch or os/arch/variant, like linux/amd64 or linux/arm/v7", key)
	}
	return nil
}

// isPlatform reports whether s is os/arch or os/arch/variant, each part lower-case letters,
// digits or underscores.
func isPlatform(s string) bool {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.IndexFunc(p, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
		}) >= 0 {
			return false
		}
	}
	return true
}
