package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/client-go/tools/cache"
)

// ClientGoModule is what a run knows of the k8s.io/client-go its specs
// were compiled with: the version the module under test requires, what
// replaces it there, and what could not be told.
type ClientGoModule struct {
	// Version is k8s.io/client-go's version as the module under test
	// requires it (for a replaced client-go, the version the replacement
	// stands for); "" when it cannot be known (Unknown says why).
	Version string
	// Replacement names what replaces k8s.io/client-go in the go.mod of the
	// module under test, as downstream repositories with patched forks do:
	// a fork ("github.com/acme/client-go v0.36.6-acme.1") or a local
	// directory ("../client-go (a local directory)"); "" when it is not
	// replaced, or when that cannot be known (Unknown says so).
	Replacement string
	// Unknown says what of the above could not be known and why; "" when
	// everything is known.
	Unknown string
}

// ClientGoInUse is the k8s.io/client-go this binary was built with,
// learnt where the suite was compiled, not from the working directory of
// the run (ginkgo runs a precompiled suite from the binary's directory,
// outside any module):
//
//   - the path client-go's code was compiled from (runtime.FuncForPC of one
//     of its functions): k8s.io/client-go@v0.36.6/ in the module cache is
//     the version itself; a fork's module path and version there name the
//     replacement; any other directory is a local replacement (with
//     -trimpath: k8s.io/client-go@<required version>/ whatever replaces it);
//   - go list -m of the module under test, where the path alone does not
//     tell: in the directory of the test package (recorded by RunSpecs from
//     its caller's file), else in the working directory; an answer counts
//     only from the module the binary was built from (its build info's main
//     module) and only where it agrees with the compiled path.
//
// Test binaries carry no dependency list in their build info (Go 1.26:
// cmd/go/internal/load/test.go TestPackagesAndErrors sets the test main
// package's build info before its imports are loaded, so
// debug.ReadBuildInfo's Deps is empty), hence the paths.
func ClientGoInUse() ClientGoModule {
	process.clientGo.Lock()
	defer process.clientGo.Unlock()
	if !process.clientGo.done || process.clientGo.dir != testPackageDir() {
		process.clientGo.dir = testPackageDir()
		process.clientGo.m = resolveClientGo(parseCompiledPath(clientGoFile()), func() (goModule, error) {
			return listClientGo(process.clientGo.dir)
		})
		process.clientGo.done = true
	}
	return process.clientGo.m
}

// ClientGoVersion is ClientGoInUse's Version: the k8s.io/client-go version
// this binary was built with (a downstream module's own, in library mode);
// "" if it cannot be known.
func ClientGoVersion() string { return ClientGoInUse().Version }

// ClientGoReplacement is ClientGoInUse's Replacement. The report's header
// names it beside the version.
func ClientGoReplacement() string { return ClientGoInUse().Replacement }

// ClientGoName names the client-go in use in a message: "client-go
// v0.36.6", "client-go v0.36.6 (replaced by ../client-go (a local
// directory))", "client-go of unknown version".
func ClientGoName() string {
	m := ClientGoInUse()
	name := "client-go " + m.Version
	if m.Version == "" {
		name = "client-go of unknown version"
	}
	if m.Replacement != "" {
		name += " (replaced by " + m.Replacement + ")"
	}
	return name
}

// clientGoFile is the source file client-go's informers were compiled
// from.
func clientGoFile() string {
	pc := reflect.ValueOf(cache.NewSharedIndexInformer).Pointer()
	if fn := runtime.FuncForPC(pc); fn != nil {
		file, _ := fn.FileLine(pc)
		return file
	}
	return ""
}

// clientGoPackageDir is where clientGoFile's package sits in client-go.
const clientGoPackageDir = "/tools/cache"

// compiledKind says what the path client-go was compiled from tells.
type compiledKind int

const (
	// compiledUnknown: a path of no known layout.
	compiledUnknown compiledKind = iota
	// compiledModuleCache: <GOMODCACHE>/<module>@<version>/: the module and
	// version whose code it is.
	compiledModuleCache
	// compiledTrimmed: -trimpath's k8s.io/client-go@<version>/, the version
	// the module under test requires, replaced or not
	// (cmd/go/internal/work/gc.go, the -trimpath rewrite: module path and
	// version of the package's module, never the replacement's).
	compiledTrimmed
	// compiledDirectory: a directory outside the module cache: a local
	// replacement.
	compiledDirectory
	// compiledVendored: <module>/vendor/k8s.io/client-go/: go mod vendor.
	compiledVendored
)

// compiledFrom is what the path client-go was compiled from says.
type compiledFrom struct {
	kind    compiledKind
	module  string // compiledModuleCache, compiledTrimmed
	version string // compiledModuleCache, compiledTrimmed
	dir     string // compiledDirectory, compiledVendored: client-go's root
	file    string
}

// parseCompiledPath reads the file client-go's tools/cache package was
// compiled from.
func parseCompiledPath(file string) compiledFrom {
	c := compiledFrom{file: file}
	slashed := filepath.ToSlash(file)
	root, ok := strings.CutSuffix(path.Dir(slashed), clientGoPackageDir)
	if file == "" || !ok || root == "" {
		return c
	}
	abs := strings.HasPrefix(root, "/") || filepath.IsAbs(file) || len(root) > 2 && root[1] == ':' && root[2] == '/'
	at := strings.LastIndex(root, "@")
	switch {
	case at > 0 && !strings.Contains(root[at:], "/") && strings.HasPrefix(root[at+1:], "v"):
		c.module, c.version = root[:at], root[at+1:]
		c.kind = compiledTrimmed
		if abs {
			c.kind = compiledModuleCache
			c.module = moduleInCache(c.module)
		}
	case !abs:
		// -trimpath without a version: client-go is a main module (a
		// workspace's) or otherwise versionless.
	case strings.HasSuffix(root, "/vendor/k8s.io/client-go"):
		c.kind, c.dir = compiledVendored, filepath.FromSlash(root)
	default:
		c.kind, c.dir = compiledDirectory, filepath.FromSlash(root)
	}
	return c
}

// moduleInCache is the module path of a module cache directory
// (<GOMODCACHE>/github.com/!acme/client-go: github.com/Acme/client-go,
// golang.org/x/mod/module's case encoding undone); where GOMODCACHE is not
// the default <GOPATH>/pkg/mod, the whole directory.
func moduleInCache(dir string) string {
	const cacheDir = "/pkg/mod/"
	if i := strings.LastIndex(dir, cacheDir); i >= 0 {
		dir = dir[i+len(cacheDir):]
	} else if strings.HasSuffix(dir, "/k8s.io/client-go") {
		return "k8s.io/client-go"
	}
	var b strings.Builder
	for i := 0; i < len(dir); i++ {
		if dir[i] == '!' && i+1 < len(dir) {
			i++
			b.WriteString(strings.ToUpper(dir[i : i+1]))
			continue
		}
		b.WriteByte(dir[i])
	}
	return b.String()
}

// resolveClientGo is ClientGoInUse from the compiled path c and, where it
// does not tell, list: go list -m of k8s.io/client-go in the module under
// test.
func resolveClientGo(c compiledFrom, list func() (goModule, error)) ClientGoModule {
	if c.kind == compiledModuleCache && c.module == "k8s.io/client-go" {
		return ClientGoModule{Version: c.version} // its own code: not replaced
	}
	listed, err := list()
	if err == nil && listed.Path != "k8s.io/client-go" {
		err = fmt.Errorf("go list named %q, not k8s.io/client-go", listed.Path)
	}
	if err == nil {
		err = agrees(c, listed)
	}
	fromList := ClientGoModule{Version: listed.Version, Replacement: replacementOf(listed)}
	switch c.kind {
	case compiledModuleCache: // a fork
		if err != nil {
			return ClientGoModule{Replacement: c.module + " " + c.version, Unknown: "the k8s.io/client-go version its replacement stands for: " + err.Error()}
		}
		return fromList
	case compiledDirectory:
		if err != nil {
			return ClientGoModule{Replacement: c.dir + " (a local directory)", Unknown: "the k8s.io/client-go version its replacement stands for: " + err.Error()}
		}
		return fromList
	case compiledTrimmed:
		if err != nil {
			return ClientGoModule{Version: c.version, Unknown: "whether k8s.io/client-go is replaced (built with -trimpath, which names the required version only): " + err.Error()}
		}
		return fromList
	}
	if err != nil {
		return ClientGoModule{Unknown: fmt.Sprintf("the k8s.io/client-go version (compiled from %q, a path that does not tell): %v", c.file, err)}
	}
	return fromList
}

// agrees is nil when go list's k8s.io/client-go is the one compiled in:
// the go.mod may have changed since the suite was built, or the answer
// may be another module's.
func agrees(c compiledFrom, listed goModule) error {
	r := listed.Replace
	switch c.kind {
	case compiledModuleCache:
		if r == nil || r.Path != c.module || r.Version != c.version {
			return fmt.Errorf("go list says k8s.io/client-go %s, but the suite was compiled from %s %s", describe(listed), c.module, c.version)
		}
	case compiledDirectory:
		if r == nil || r.Version != "" || !sameDir(r.Dir, c.dir) {
			return fmt.Errorf("go list says k8s.io/client-go %s, but the suite was compiled from the directory %s", describe(listed), c.dir)
		}
	case compiledTrimmed:
		if listed.Version != c.version {
			return fmt.Errorf("go list says k8s.io/client-go %s, but the suite was compiled with %s", describe(listed), c.version)
		}
	}
	return nil
}

func describe(m goModule) string {
	if r := replacementOf(m); r != "" {
		return m.Version + " replaced by " + r
	}
	return m.Version
}

// sameDir reports whether a and b are one directory.
func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// replacementOf names m's replacement as its go.mod writes it; "" if none.
func replacementOf(m goModule) string {
	switch {
	case m.Replace == nil:
		return ""
	case m.Replace.Version != "":
		return m.Replace.Path + " " + m.Replace.Version
	}
	return m.Replace.Path + " (a local directory)"
}

// goListTimeout bounds asking go list for client-go's module.
const goListTimeout = 30 * time.Second

// goModule is what go list -m -json says of a module.
type goModule struct {
	Path    string
	Version string
	Main    bool
	Dir     string
	Replace *goModule
}

func testPackageDir() string {
	process.testPackage.Lock()
	defer process.testPackage.Unlock()
	return process.testPackage.dir
}

// recordTestPackage records the directory of file, the test package's
// source file that called RunSpecs, where go list asks for its module's
// client-go. A path -trimpath made relative records nothing.
func recordTestPackage(file string) {
	if !filepath.IsAbs(file) {
		return
	}
	process.testPackage.Lock()
	defer process.testPackage.Unlock()
	process.testPackage.dir = filepath.Dir(file)
}

// listClientGo is go list -m -json of k8s.io/client-go in the module this
// binary was built from: asked in dir (the test package's directory, if
// known), else in the working directory; an answer from another module
// (a precompiled suite run from elsewhere) is refused.
func listClientGo(dir string) (goModule, error) {
	mainModule := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		mainModule = bi.Main.Path
	}
	ctx, cancel := context.WithTimeout(context.Background(), goListTimeout)
	defer cancel()
	var errs []error
	if dir == "" {
		errs = append(errs, errors.New("the test package's directory is unknown (e2e.RunSpecs records it from its caller's file, a path -trimpath leaves relative)"))
	} else {
		m, err := goListModuleOf(ctx, dir, mainModule, "k8s.io/client-go")
		if err == nil {
			return m, nil
		}
		errs = append(errs, fmt.Errorf("in the test package's directory %s: %w", dir, err))
	}
	m, err := goListModuleOf(ctx, "", mainModule, "k8s.io/client-go")
	if err == nil {
		return m, nil
	}
	wd, _ := os.Getwd()
	errs = append(errs, fmt.Errorf("in the working directory %s: %w", wd, err))
	// One line: it goes into the report's header.
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return goModule{}, errors.New(strings.Join(msgs, "; "))
}

// goListModuleOf runs go list -m -json path in dir ("" = the working
// directory) where mainModule ("" = any) is the main module (or one of
// the workspace's).
func goListModuleOf(ctx context.Context, dir, mainModule, path string) (goModule, error) {
	args := []string{"list", "-m", "-json"}
	if mainModule != "" {
		args = append(args, mainModule)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, path)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		why := strings.Join(strings.Fields(stderr.String()), " ") // one line
		if why == "" {
			why = err.Error()
		}
		return goModule{}, fmt.Errorf("go list -m %s: %s", strings.Join(cmd.Args[4:], " "), why)
	}
	return parseGoList(out, mainModule)
}

// parseGoList reads go list -m -json's output of mainModule ("" = none
// asked) and then of the module asked for.
func parseGoList(out []byte, mainModule string) (goModule, error) {
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var mods []goModule
	for {
		var m goModule
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return goModule{}, fmt.Errorf("read go list's output: %w", err)
		}
		mods = append(mods, m)
	}
	want := 1
	if mainModule != "" {
		want = 2
	}
	if len(mods) != want {
		return goModule{}, fmt.Errorf("go list printed %d modules, want %d", len(mods), want)
	}
	if mainModule != "" {
		if mods[0].Path != mainModule || !mods[0].Main {
			return goModule{}, fmt.Errorf("this is not the module the suite was built from (%s): go list calls it a dependency", mainModule)
		}
		return mods[1], nil
	}
	return mods[0], nil
}
