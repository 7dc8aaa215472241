package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// knownGate is one feature gate as a client-go version declares it in
// features/known_features.go: the spec client-go itself uses, which for a
// versioned gate is the last (newest) entry of its VersionedSpecs
// (client-go's unversionedFeatureGates takes the same one).
type knownGate struct {
	Default bool
	// Locked is LockToDefault: client-go ignores a KUBE_FEATURE_<Name>
	// variable asking for the other value.
	Locked     bool
	PreRelease string
}

// knownGates are a client-go version's feature gates by name (the gate's
// string, the <Name> of KUBE_FEATURE_<Name>).
type knownGates map[string]knownGate

// The variables of known_features.go that hold the gates: a map of
// VersionedSpecs since client-go v0.35, of FeatureSpec before.
const (
	versionedGatesVar   = "defaultVersionedKubernetesFeatureGates"
	unversionedGatesVar = "defaultKubernetesFeatureGates"
)

// parseKnownFeatures reads the feature gates a client-go version declares
// from the text of its features/known_features.go: the `Name Feature =
// "Name"` constants name them, and the gate map (defaultVersionedKubernetes-
// FeatureGates, or defaultKubernetesFeatureGates before v0.35) gives each
// its default, pre-release stage and lock. It only parses the text (no
// type checking, no imports), so it works on any version's file.
func parseKnownFeatures(src string) (knownGates, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "known_features.go", src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse known_features.go: %w", err)
	}
	names := map[string]string{} // constant identifier -> gate name
	var versioned, unversioned *ast.CompositeLit
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			vs, ok := s.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, id := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				switch gd.Tok {
				case token.CONST:
					if !isFeatureType(vs.Type) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("known_features.go: feature constant %s is not a string literal", id.Name)
					}
					name, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, fmt.Errorf("known_features.go: feature constant %s: %w", id.Name, err)
					}
					names[id.Name] = name
				case token.VAR:
					cl, _ := vs.Values[i].(*ast.CompositeLit)
					switch id.Name {
					case versionedGatesVar:
						versioned = cl
					case unversionedGatesVar:
						unversioned = cl
					}
				}
			}
		}
	}
	gatesMap, mapName := versioned, versionedGatesVar
	if gatesMap == nil {
		gatesMap, mapName = unversioned, unversionedGatesVar
	}
	if gatesMap == nil {
		return nil, fmt.Errorf("known_features.go declares neither %s nor %s as a map literal", versionedGatesVar, unversionedGatesVar)
	}
	gates := knownGates{}
	for _, e := range gatesMap.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return nil, fmt.Errorf("known_features.go: %s has an element that is not key: value", mapName)
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			return nil, fmt.Errorf("known_features.go: %s has a key that is not a feature constant", mapName)
		}
		name, ok := names[key.Name]
		if !ok {
			return nil, fmt.Errorf("known_features.go: %s has key %s, which is no `%s Feature = \"...\"` constant of the file", mapName, key.Name, key.Name)
		}
		value, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			return nil, fmt.Errorf("known_features.go: %s[%s] is not a composite literal", mapName, key.Name)
		}
		spec := value
		if mapName == versionedGatesVar {
			// VersionedSpecs: client-go uses the last entry; none, no gate.
			if len(value.Elts) == 0 {
				continue
			}
			last, ok := value.Elts[len(value.Elts)-1].(*ast.CompositeLit)
			if !ok {
				return nil, fmt.Errorf("known_features.go: %s[%s]'s last entry is not a FeatureSpec literal", mapName, key.Name)
			}
			spec = last
		}
		g, err := parseFeatureSpec(spec)
		if err != nil {
			return nil, fmt.Errorf("known_features.go: %s[%s]: %w", mapName, key.Name, err)
		}
		gates[name] = g
	}
	return gates, nil
}

// isFeatureType says whether a constant's declared type is Feature (or
// featuregate.Feature).
func isFeatureType(t ast.Expr) bool {
	switch t := t.(type) {
	case *ast.Ident:
		return t.Name == "Feature"
	case *ast.SelectorExpr:
		return t.Sel.Name == "Feature"
	}
	return false
}

// parseFeatureSpec reads a FeatureSpec literal's Default, LockToDefault
// and PreRelease fields (absent = Go's zero value, as the compiler has it).
func parseFeatureSpec(cl *ast.CompositeLit) (knownGate, error) {
	var g knownGate
	for _, e := range cl.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			return g, errors.New("a FeatureSpec field is not Name: value")
		}
		field, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch field.Name {
		case "Default", "LockToDefault":
			v, ok := kv.Value.(*ast.Ident)
			if !ok || (v.Name != "true" && v.Name != "false") {
				return g, fmt.Errorf("%s is not true or false", field.Name)
			}
			if field.Name == "Default" {
				g.Default = v.Name == "true"
			} else {
				g.Locked = v.Name == "true"
			}
		case "PreRelease":
			switch v := kv.Value.(type) {
			case *ast.Ident:
				g.PreRelease = v.Name
			case *ast.SelectorExpr:
				g.PreRelease = v.Sel.Name
			}
		}
	}
	return g, nil
}

// notApplicable says why a gate set cannot be run on a client-go version
// with the given gates: a gate it lacks ("client-go v0.31.14 has no
// AtomicFIFO gate"), or a locked gate asked for the other value ("client-go
// v0.36.6 has InOrderInformers locked to true"); "" if it can. Asking a
// locked gate for its own value is applicable (a no-op).
func (g gateSet) notApplicable(clientGo string, known knownGates) string {
	var why []string
	for _, v := range g {
		k, ok := known[v.Name]
		switch {
		case !ok:
			why = append(why, fmt.Sprintf("client-go %s has no %s gate", clientGo, v.Name))
		case k.Locked && k.Default != v.Enabled:
			why = append(why, fmt.Sprintf("client-go %s has %s locked to %t", clientGo, v.Name, k.Default))
		}
	}
	return strings.Join(why, "; ")
}

// clientGoGates reads the feature gates of a client-go version from its
// features/known_features.go in the module cache (downloading the module
// if need be). A version without a features package (before v0.30) has no
// gates; one whose package lacks the file, or whose file does not parse as
// expected, is an error: the applicability of gate sets cannot be told.
func clientGoGates(ctx context.Context, root, version string) (knownGates, error) {
	var stdout, stderr bytes.Buffer
	download := func(env ...string) error {
		stdout.Reset()
		stderr.Reset()
		cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "k8s.io/client-go@"+version)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd.Run()
	}
	runErr := download()
	if tc := os.Getenv(EnvToolchain); tc != "" && strings.Contains(stdout.String()+stderr.String(), " requires go ") {
		// A client-go that needs a newer Go ("requires go >= ...", its
		// ">" escaped in the JSON): its source with the toolchain its
		// column runs with (toolchainFor).
		runErr = download("GOTOOLCHAIN=" + tc)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(stdout.Bytes(), &mod); err != nil {
		return nil, fmt.Errorf("go mod download k8s.io/client-go@%s: %v: %s", version, runErr, lastLines(stderr.String(), 4))
	}
	if mod.Error != "" || runErr != nil || mod.Dir == "" {
		return nil, fmt.Errorf("go mod download k8s.io/client-go@%s: %s", version, strings.TrimSpace(mod.Error+" "+lastLines(stderr.String(), 4)))
	}
	features := filepath.Join(mod.Dir, "features")
	if _, err := os.Stat(features); errors.Is(err, fs.ErrNotExist) {
		return knownGates{}, nil
	}
	src, err := os.ReadFile(filepath.Join(features, "known_features.go"))
	if err != nil {
		return nil, fmt.Errorf("client-go %s: %w", version, err)
	}
	gates, err := parseKnownFeatures(string(src))
	if err != nil {
		return nil, fmt.Errorf("client-go %s: %w", version, err)
	}
	return gates, nil
}
