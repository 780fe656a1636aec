package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
)

// shotsDir is where TestHTMLInChromium leaves a copy of its screenshots,
// for a person to look at.
const shotsDir = "/tmp/report-shots"

// findChromium is the browser the test drives: Chromium on PATH, or
// Debian's; skipped when missing (failed in CI: scripts/setup-host.sh
// installs it).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	testenv.SkipOrFail(t, "no Chromium to open report.html in (Debian: apt-get install chromium, or scripts/setup-host.sh)")
	return ""
}

// browserLog is what the page did that it should not: console errors,
// exceptions, error entries of the browser's log, and requests for
// anything but the page itself.
type browserLog struct {
	mu       sync.Mutex
	page     string // the page's URL
	problems []string
}

func (l *browserLog) hear(ev any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			l.problems = append(l.problems, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		l.problems = append(l.problems, "exception: "+(&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			l.problems = append(l.problems, fmt.Sprintf("log (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		if u := ev.Request.URL; u != l.page && !strings.HasPrefix(u, l.page+"#") {
			l.problems = append(l.problems, "a request for "+u)
		}
	}
}

func (l *browserLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.problems
	l.problems = nil
	return p
}

// pageLayout is what the test measures of the page at a width.
type pageLayout struct {
	Inner       float64  `json:"inner"`       // window.innerWidth
	ScrollWidth float64  `json:"scrollWidth"` // of the document: more than inner is a page that scrolls sideways
	SVGWidth    float64  `json:"svgWidth"`
	BoxWidth    float64  `json:"boxWidth"` // the chart's scrolling box, inside
	Wide        []string // elements out of the screen on the right, or overflowing, outside a scrolling box
	Clipped     []string
	Overlaps    []string
	MinFont     float64 `json:"minFont"` // the smallest chart text, in CSS pixels on screen
}

// measure finds the texts of a chart (the svg that sel selects) that fall
// outside its viewBox or overlap one another, and the page's widths.
const measure = `((width, sel) => {
  const svg = document.querySelector(sel);
  const vb = svg.viewBox.baseVal;
  const texts = [...svg.querySelectorAll('text')];
  const clipped = [], overlaps = [];
  let minFont = 1e9;
  const scale = svg.getBoundingClientRect().width / vb.width;
  const boxes = texts.map(t => {
    const b = t.getBBox();
    if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > vb.width + 0.5 || b.y + b.height > vb.height + 0.5) {
      if (!t.getAttribute('transform')) clipped.push(t.textContent);
    }
    minFont = Math.min(minFont, parseFloat(getComputedStyle(t).fontSize) * scale);
    return t.getBoundingClientRect();
  });
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) {
      overlaps.push(texts[i].textContent + ' / ' + texts[j].textContent);
    }
  }
  const wide = [...document.body.querySelectorAll('*')]
    .filter(e => !e.parentElement.closest('.scroll') && (e.getBoundingClientRect().right > width + 0.5 ||
      (e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0 && getComputedStyle(e).overflowX == 'visible')))
    .slice(0, 8).map(e => e.tagName.toLowerCase() + '.' + e.getAttribute('class') + ' ' + (e.id || '') + ' ' +
      Math.round(e.getBoundingClientRect().right) + 'px: ' + e.textContent.slice(0, 60));
  const box = svg.closest('.scroll');
  return {inner: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
    svgWidth: svg.getBoundingClientRect().width, boxWidth: box.clientWidth,
    Wide: wide, Clipped: clipped, Overlaps: overlaps, minFont: minFont};
})`

// TestHTMLInChromium opens the page of the fixture's run in a headless
// Chromium: nothing goes to the console, nothing is fetched, the chart has
// a bar per condition, a transcript opens on a click, nothing of the page
// or its chart is cut at a laptop's width or a phone's; and it leaves
// full-page screenshots at both widths.
func TestHTMLInChromium(t *testing.T) {
	exe := findChromium(t)
	page, rep, runs := htmlRender(t, Options{}, htmlFixture(t))
	out := t.TempDir()
	file := filepath.Join(out, "report.html")
	require.NoError(t, os.WriteFile(file, []byte(page), 0o644))
	url := "file://" + file

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a time limit
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()

	heard := &browserLog{page: url}
	require.NoError(t, chromedp.Listen(bctx, heard.hear), "start %s", exe)
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url)))

	title, err := chromedp.Run(bctx, chromedp.Title())
	require.NoError(t, err)
	assert.Equal(t, "ctxcode report", title, "the model's script must not have run")

	// One bar of each series per condition, counted in the DOM.
	for _, series := range []string{"bar-context", "bar-output"} {
		counts, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](fmt.Sprintf(`(() => {
			const m = {};
			for (const r of document.querySelectorAll('svg.ladder rect.%s')) m[r.dataset.condition] = (m[r.dataset.condition] || 0) + 1;
			return m;
		})()`, series)))
		require.NoError(t, err)
		want := map[string]int{}
		for _, c := range runs[0].Spec.Conditions {
			want[c.Name] = 1
		}
		assert.Equal(t, want, counts, "%s: one bar per condition", series)
	}
	assert.Len(t, rep.Rows, len(runs[0].Spec.Conditions))
	// And one point per condition in the accuracy–cost plot, with both
	// error bars, laid out (a box of some size on the screen).
	points, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]int](`(() => {
		const m = {};
		for (const g of document.querySelectorAll('svg.acccost g.point')) {
			const r = g.querySelector('circle.dot').getBoundingClientRect();
			if (r.width > 4 && g.querySelectorAll('path.errbar').length == 2) m[g.dataset.condition] = (m[g.dataset.condition] || 0) + 1;
		}
		return m;
	})()`))
	require.NoError(t, err)
	want := map[string]int{}
	for _, c := range runs[0].Spec.Conditions {
		want[c.Name] = 1
	}
	assert.Equal(t, want, points, "the accuracy–cost plot: one point per condition, with its error bars")

	// A transcript is folded, and opens on a click on its summary: it
	// grows by its content, which becomes visible.
	sel := fmt.Sprintf(`[id="t-%s"]`, htmlEvilTrial)
	type state struct {
		Open    bool    `json:"open"`
		Attr    bool    `json:"attr"`
		Grown   float64 `json:"grown"` // the height of the details beyond its summary's
		Visible bool    `json:"visible"`
		Text    string  `json:"text"`
	}
	read := chromedp.Evaluate[state](fmt.Sprintf(`(() => {
		const d = document.querySelector('%s');
		const pre = d.querySelector('.cell .out pre');
		return {open: d.open, attr: d.hasAttribute('open'), visible: pre.checkVisibility(), text: pre.textContent,
			grown: d.getBoundingClientRect().height - d.querySelector('summary').getBoundingClientRect().height};
	})()`, sel))
	before, err := chromedp.Run(bctx, read)
	require.NoError(t, err)
	assert.False(t, before.Open || before.Attr || before.Visible, "folded at first: %+v", before)
	assert.Less(t, before.Grown, 4.0, "folded, a transcript is its summary line (and borders)")
	require.NoError(t, chromedp.Do(bctx, chromedp.Click(chromedp.CSS(sel+" > summary")),
		chromedp.WaitVisible(chromedp.CSS(sel+" .cell .out pre"))))
	after, err := chromedp.Run(bctx, read)
	require.NoError(t, err)
	assert.True(t, after.Open && after.Attr && after.Visible, "open after a click: %+v", after)
	assert.Greater(t, after.Grown, 100.0, "open, its content takes room")
	assert.Contains(t, after.Text, htmlEvilOutput, "the model's script is shown as text")

	// A per-task link goes to its transcript.
	link := fmt.Sprintf(`#tasks a[href="#t-%s"]`, htmlCLITrial)
	require.NoError(t, chromedp.Do(bctx, chromedp.Click(chromedp.CSS(link))))
	hash, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.hash`))
	require.NoError(t, err)
	assert.Equal(t, "#t-"+htmlCLITrial, hash)

	require.NoError(t, os.MkdirAll(shotsDir, 0o755))
	for _, w := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"laptop", 1280, 900, false}, {"phone", 390, 844, true}} {
		t.Run(w.name, func(t *testing.T) {
			vopts := []chromedp.EmulateViewportOption{}
			if w.mobile {
				vopts = append(vopts, chromedp.EmulateMobile)
			}
			// A fresh load at the width (a phone lays out anew), with a few
			// transcripts open for the screenshot: condition A's calls, the
			// model's markup, a repaired reply, a restart, a missing
			// trajectory.
			require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(w.width, w.height, vopts...), chromedp.Navigate(url)))
			for _, id := range []string{htmlCLITrial, htmlEvilTrial, htmlRepairTrial, htmlRestartTrial, htmlMissingTrial} {
				require.NoError(t, chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](
					fmt.Sprintf(`document.querySelector('[id="t-%s"]').open = true`, id))))
			}
			for _, chart := range []string{"svg.ladder", "svg.acccost"} {
				l, err := chromedp.Run(bctx, chromedp.Evaluate[pageLayout](fmt.Sprintf("%s(%d, %q)", measure, w.width, chart)))
				require.NoError(t, err)
				assert.Equal(t, float64(w.width), l.Inner, "the layout is wider than the screen: %q", l.Wide)
				assert.LessOrEqual(t, l.ScrollWidth, l.Inner, "the page scrolls sideways: %q", l.Wide)
				assert.Empty(t, l.Wide, "out of the screen")
				assert.LessOrEqual(t, l.SVGWidth, l.BoxWidth+0.5, "%s is wider than its box", chart)
				assert.Empty(t, l.Clipped, "%s: text outside the chart", chart)
				assert.Empty(t, l.Overlaps, "%s: texts on top of each other", chart)
				assert.GreaterOrEqual(t, l.MinFont, 8.0, "%s: the smallest text is too small to read", chart)
				t.Logf("%s %s: %.0f px wide, its smallest text %.1f px", w.name, chart, l.SVGWidth, l.MinFont)
			}

			png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			name := fmt.Sprintf("report-%d.png", w.width)
			path := filepath.Join(out, name)
			require.NoError(t, os.WriteFile(path, png, 0o644))
			t.Logf("screenshot at %d px: %s", w.width, path)
			if assert.NoError(t, os.WriteFile(filepath.Join(shotsDir, name), png, 0o644)) {
				t.Logf("and a copy: %s", filepath.Join(shotsDir, name))
			}
		})
	}
	assert.Empty(t, heard.take(), "the page must write no error to the console and fetch nothing")
}

// wnShot is where TestSessionsHTMLInChromium leaves the W(n) chart's
// screenshot at a laptop's width (and wnShotPhone at a phone's), for a
// person to look at.
const (
	wnShot      = "/tmp/i24-wn.png"
	wnShotPhone = "/tmp/i24-wn-phone.png"
)

// TestSessionsHTMLInChromium opens the page of a run of sessions
// (sessionFixture) in a headless Chromium: the W(n) chart has a line per
// condition with a dot and a whisker per stage, laid out; none of its text
// is cut or on top of other text at a laptop's width or a phone's;
// nothing goes to the console and nothing is fetched. It leaves the
// chart's screenshots at wnShot and wnShotPhone.
func TestSessionsHTMLInChromium(t *testing.T) {
	exe := findChromium(t)
	page, rep, _ := htmlRender(t, Options{}, sessionFixture(t))
	file := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(file, []byte(page), 0o644))
	url := "file://" + file

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a time limit
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	heard := &browserLog{page: url}
	require.NoError(t, chromedp.Listen(bctx, heard.hear), "start %s", exe)

	for _, w := range []struct {
		name          string
		width, height int64
		mobile        bool
		shot          string
	}{{"laptop", 1280, 900, false, wnShot}, {"phone", 390, 844, true, wnShotPhone}} {
		t.Run(w.name, func(t *testing.T) {
			vopts := []chromedp.EmulateViewportOption{}
			if w.mobile {
				vopts = append(vopts, chromedp.EmulateMobile)
			}
			require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(w.width, w.height, vopts...), chromedp.Navigate(url)))
			// Per series: its dots and whiskers that take room on the
			// screen, and its line's length.
			type series struct {
				Dots     int     `json:"dots"`
				Whiskers int     `json:"whiskers"`
				Line     float64 `json:"line"`
			}
			got, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]series](`(() => {
				const m = {};
				for (const g of document.querySelectorAll('svg.wn g.series')) {
					const dots = [...g.querySelectorAll('circle.dot')].filter(c => c.getBoundingClientRect().width > 3).length;
					const whiskers = [...g.querySelectorAll('path.errbar')].filter(p => p.getBoundingClientRect().height > 2).length;
					m[g.dataset.condition] = {dots, whiskers, line: g.querySelector('path.line').getTotalLength()};
				}
				return m;
			})()`))
			require.NoError(t, err)
			require.Len(t, got, len(rep.Sessions.Rows), "a line per condition")
			for _, r := range rep.Sessions.Rows {
				s := got[r.Condition]
				assert.Equal(t, rep.Sessions.MaxStage, s.Dots, "%s: a dot per stage", r.Condition)
				assert.Equal(t, rep.Sessions.MaxStage, s.Whiskers, "%s: a whisker per stage", r.Condition)
				assert.Greater(t, s.Line, 100.0, "%s: a line drawn", r.Condition)
			}
			l, err := chromedp.Run(bctx, chromedp.Evaluate[pageLayout](fmt.Sprintf("%s(%d, %q)", measure, w.width, "svg.wn")))
			require.NoError(t, err)
			assert.LessOrEqual(t, l.ScrollWidth, l.Inner, "the page scrolls sideways: %q", l.Wide)
			assert.Empty(t, l.Wide, "out of the screen")
			assert.LessOrEqual(t, l.SVGWidth, l.BoxWidth+0.5, "the chart is wider than its box")
			assert.Empty(t, l.Clipped, "text outside the chart")
			assert.Empty(t, l.Overlaps, "texts on top of each other")
			assert.GreaterOrEqual(t, l.MinFont, 8.0, "the smallest text is too small to read")
			t.Logf("%s: the chart is %.0f px wide, its smallest text %.1f px", w.name, l.SVGWidth, l.MinFont)

			png, err := chromedp.Run(bctx, chromedp.ScreenshotScale(chromedp.CSS(`#sessions figure.chart`), 2))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(w.shot, png, 0o644))
			t.Logf("the W(n) chart: %s", w.shot)
		})
	}
	assert.Empty(t, heard.take(), "the page must write no error to the console and fetch nothing")
}
