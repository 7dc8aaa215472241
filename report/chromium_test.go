package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// HTMLReportEnv names the HTML report of a real run for
// TestHTMLReportInChromium (make report-check sets it after make e2e).
const HTMLReportEnv = "INFORMER_CONFORMANCE_HTML_REPORT"

// knownSpec is a spec of the default run whose timeline must show its
// fault window (the injected ERROR event) and the relist it causes.
const (
	knownSpec      = "S4 error classes on a watch re-initialise exactly when the error calls for it 410 Gone event: relist"
	knownFault     = `class="fault" data-kind="injected HTTP answer"`
	knownReinit    = `class="reinit" data-cause="410 Gone"`
	maxReportBytes = 5 << 20
	chromiumBound  = 90 * time.Second
)

// chromium finds a headless-capable Chromium (Debian: apt-get install
// chromium).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium on PATH (chromium, chromium-browser, google-chrome): apt-get install chromium")
	return ""
}

// consoleLine is a console message Chromium logs with --enable-logging:
// ":INFO:CONSOLE:1]" (Chromium 156) or ":INFO:CONSOLE(1)]" (older).
var consoleLine = regexp.MustCompile(`(?m)^.*:CONSOLE(?::\d+|\(\d+\))\].*$`)

// loadInChromium loads the page headless, writes a screenshot next to it
// (<page>.png) and returns the DOM after the load and the console messages.
func loadInChromium(t *testing.T, page string) (dom string, console []string) {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	bin := chromium(t)
	run := func(args ...string) (stdout, stderr string) {
		ctx, cancel := context.WithTimeout(context.Background(), chromiumBound)
		defer cancel()
		profile := t.TempDir()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu",
			"--user-data-dir=" + profile, "--enable-logging=stderr", "--log-level=0"}, append(args, "file://"+abs)...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v (within %s)\n%s", bin, args, err, chromiumBound, errb.String())
		}
		return out.String(), errb.String()
	}
	dom, stderr := run("--dump-dom")
	_, shotErr := run("--window-size=1300,2400", "--screenshot="+abs+".png")
	for _, s := range []string{stderr, shotErr} {
		console = append(console, consoleLine.FindAllString(s, -1)...)
	}
	return dom, console
}

// specSection is the <details> of spec in the page's DOM (the first: a
// failed spec is also listed among the failing ones).
func specSection(dom, spec string) string {
	start := strings.Index(dom, fmt.Sprintf(`data-spec="%s"`, spec))
	if start < 0 {
		return ""
	}
	end := strings.Index(dom[start:], "</details>")
	if end < 0 {
		return dom[start:]
	}
	return dom[start : start+end]
}

// pageProblems is what is wrong with a report page loaded in Chromium (dom,
// console): console messages, a page that did not load, no known spec, or
// a timeline of the known spec without its svg, fault window or
// re-initialisation.
func pageProblems(dom string, console []string) []string {
	var problems []string
	if len(console) > 0 {
		problems = append(problems, "console messages while loading:\n"+strings.Join(console, "\n"))
	}
	if !strings.Contains(dom, `id="summary"`) {
		return append(problems, fmt.Sprintf("the page did not load: no summary in its DOM (%d bytes)", len(dom)))
	}
	section := specSection(dom, knownSpec)
	if section == "" {
		return append(problems, fmt.Sprintf("the report has no spec %q: run the default make e2e (or a label filter that keeps it) before make report-check", knownSpec))
	}
	for _, want := range []string{"<svg", knownFault, knownReinit} {
		if !strings.Contains(section, want) {
			problems = append(problems, fmt.Sprintf("the timeline of %q lacks %s", knownSpec, want))
		}
	}
	return problems
}

// TestHTMLReportInChromium checks the HTML report of a real run as a
// person opens it: it loads in headless Chromium with no console message,
// stays under 5 MB, and the timeline of a known spec shows its fault window
// and its re-initialisation. Look at the screenshot it leaves next to the
// report too.
func TestHTMLReportInChromium(t *testing.T) {
	page := os.Getenv(HTMLReportEnv)
	if page == "" {
		t.Skipf("%s is not set: make report-check sets it to the HTML report of the last make e2e", HTMLReportEnv)
	}
	info, err := os.Stat(page)
	if err != nil {
		t.Fatalf("%s: %v (run make e2e first)", HTMLReportEnv, err)
	}
	if info.Size() > maxReportBytes {
		t.Errorf("%s is %d bytes, over %d", page, info.Size(), maxReportBytes)
	}
	dom, console := loadInChromium(t, page)
	for _, p := range pageProblems(dom, console) {
		t.Error(p)
	}
	t.Logf("%s: %d bytes; screenshot %s.png", page, info.Size(), page)
}

// TestChromiumCheckSeesConsoleErrors is the check's negative control: a
// page that logs to the console, and one without the known spec's fault,
// must not pass.
func TestChromiumCheckSeesConsoleErrors(t *testing.T) {
	if os.Getenv(HTMLReportEnv) == "" {
		t.Skipf("%s is not set (make report-check runs this with the Chromium check)", HTMLReportEnv)
	}
	page := filepath.Join(t.TempDir(), "broken.html")
	body := fmt.Sprintf(`<!DOCTYPE html><html><body><div id="summary"></div><details data-spec="%s"><svg>%s</svg></details><script>console.error("broken report")</script></body></html>`, knownSpec, knownReinit)
	if err := os.WriteFile(page, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := loadInChromium(t, page)
	if len(console) == 0 {
		t.Errorf("the console message of %s was not seen", page)
	}
	problems := strings.Join(pageProblems(dom, console), "\n")
	for _, want := range []string{"console messages while loading", "lacks " + knownFault} {
		if !strings.Contains(problems, want) {
			t.Errorf("the report check passed a page it must fail: no %q among its problems:\n%s", want, problems)
		}
	}
}
