// Package celeval evaluates CEL as the Kubernetes API server does, for the tests that check the CEL
// of the admission policies against the Go it renders (internal/shared/catalog,
// internal/shared/restart, internal/cluster/inject): the API server's own environment
// (k8s.io/apiserver/pkg/cel/environment, the version of cel-go it runs and the Kubernetes library
// functions the policies call, such as find() and a list's indexOf()), so that a function the API
// server lacks fails to compile here too. Tests only: production code writes CEL and never runs it,
// and this environment is heavy.
package celeval

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Env compiles expressions once and evaluates them over pods.
type Env struct {
	env *cel.Env

	mu       sync.Mutex
	programs map[string]cel.Program
}

// KubernetesVersion is the Kubernetes release whose CEL the expressions are checked against as
// new expressions: MutatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1) from 1.36.
var KubernetesVersion = version.MajorMinor(1, 36)

// New is the environment of an admission policy's expressions: object (the pod, as the API server
// hands it: JSON without nulls) and variables (the policy's variables, by name).
func New() (*Env, error) {
	set, err := environment.MustBaseEnvSet(KubernetesVersion).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions: []cel.EnvOption{
			cel.Variable("object", cel.DynType),
			cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
		},
	})
	if err != nil {
		return nil, err
	}
	env, err := set.Env(environment.NewExpressions)
	if err != nil {
		return nil, err
	}
	return &Env{env: env, programs: map[string]cel.Program{}}, nil
}

var (
	sharedOnce sync.Once
	shared     *Env
	sharedErr  error
)

// For is the environment of New, made once for all the tests of a test binary (it is heavy, and
// safe for concurrent use); an error to make it fails t.
func For(t testing.TB) *Env {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = New() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// program compiles expr, or returns it compiled before.
func (e *Env) program(expr string) (cel.Program, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.programs[expr]; ok {
		return p, nil
	}
	ast, iss := e.env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compiling %s: %w", expr, iss.Err())
	}
	p, err := e.env.Program(ast)
	if err != nil {
		return nil, fmt.Errorf("planning %s: %w", expr, err)
	}
	e.programs[expr] = p
	return p, nil
}

// Eval evaluates expr with object and variables (either may be nil), and returns its value as
// cel-go gives it: bool, int64 or string for those types (a list or a map stays cel-go's).
func (e *Env) Eval(expr string, object map[string]any, variables map[string]any) (any, error) {
	p, err := e.program(expr)
	if err != nil {
		return nil, err
	}
	if variables == nil {
		variables = map[string]any{}
	}
	if object == nil {
		object = map[string]any{}
	}
	out, _, err := p.Eval(map[string]any{"object": object, "variables": variables})
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", expr, err)
	}
	return out.Value(), nil
}

// Bool, Int and String evaluate expr to a value of that type.
func (e *Env) Bool(expr string, object, variables map[string]any) (bool, error) {
	return typed[bool](e, expr, object, variables)
}

// Int evaluates expr to an int.
func (e *Env) Int(expr string, object, variables map[string]any) (int64, error) {
	return typed[int64](e, expr, object, variables)
}

// String evaluates expr to a string.
func (e *Env) String(expr string, object, variables map[string]any) (string, error) {
	return typed[string](e, expr, object, variables)
}

func typed[T any](e *Env, expr string, object, variables map[string]any) (T, error) {
	var zero T
	v, err := e.Eval(expr, object, variables)
	if err != nil {
		return zero, err
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%s is %T %v, not a %T", expr, v, v, zero)
	}
	return t, nil
}

// Object is a decoded JSON value as the API server hands it to CEL: numbers as int64 or float64,
// and no null (the API server decodes a pod into its types, which drop them).
func Object(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e != nil {
				out[k] = Object(e)
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(v))
		for _, e := range v {
			if e != nil {
				out = append(out, Object(e))
			}
		}
		return out
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	}
	return v
}
