package profileserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// browser is headless Chromium driven over the DevTools protocol through
// its pipe (--remote-debugging-pipe: commands in on fd 3, answers out on
// fd 4, each a JSON message ended by a NUL byte), the transport
// Puppeteer uses. A pipe needs no port and no WebSocket client.
type browser struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser

	mu      sync.Mutex
	next    int
	waiting map[int]chan cdpReply
	done    chan struct{} // closed when the answer pipe closes
	session string        // the page's session (Target.attachToTarget, flatten)
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser starts headless Chromium with a page of width × height
// pixels, or skips the test (naming the setup script) when there is no
// chromium and DEVPROF_REQUIRE_CHROMIUM is not set.
func startBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("DEVPROF_REQUIRE_CHROMIUM") != "" {
			t.Fatalf("DEVPROF_REQUIRE_CHROMIUM is set but there is no chromium (%v): run scripts/browser-deps", err)
		}
		t.Skipf("no chromium (%v): run scripts/browser-deps (Debian's chromium), or scripts/test", err)
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-extensions", "--mute-audio",
		"--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=%d,%d", width, height), "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW} // fds 3 and 4
	var stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	b := &browser{t: t, cmd: cmd, in: cmdW, waiting: map[int]chan cdpReply{}, done: make(chan struct{})}
	go b.read(outR)
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmdW.Close() // Chromium exits when its command pipe closes
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		<-b.done
		if t.Failed() {
			t.Logf("chromium's output:\n%.4000s", stderr.String())
		}
	})

	var target struct{ TargetID string }
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	b.do("Page.enable", nil, nil)
	b.do("Runtime.enable", nil, nil)
	// A headless page has no window focus of its own: without this, the
	// focused input gets no typing.
	b.do("Emulation.setFocusEmulationEnabled", map[string]any{"enabled": true}, nil)
	b.do("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return b
}

// read hands each answer to the call waiting for its id; events are
// not needed.
func (b *browser) read(r io.ReadCloser) {
	defer close(b.done)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		msg, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m struct {
			ID int `json:"id"`
			cdpReply
		}
		if json.Unmarshal(bytes.TrimSuffix(msg, []byte{0}), &m) != nil || m.ID == 0 {
			continue
		}
		b.mu.Lock()
		ch := b.waiting[m.ID]
		delete(b.waiting, m.ID)
		b.mu.Unlock()
		if ch != nil {
			ch <- m.cdpReply
		}
	}
}

// call sends a command to session ("" for the browser) and decodes its
// result into out (if not nil); an error answer fails the test.
func (b *browser) call(session, method string, params, out any) {
	b.t.Helper()
	if err := b.try(session, method, params, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) try(session, method string, params, out any) error {
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan cdpReply, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	data, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(data, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, r.Error.Message, r.Error.Code)
		}
		if out != nil {
			return json.Unmarshal(r.Result, out)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("%s: chromium closed its pipe", method)
	case <-time.After(time.Minute):
		return fmt.Errorf("%s: no answer within a minute", method)
	}
}

// do sends a command to the page.
func (b *browser) do(method string, params, out any) {
	b.t.Helper()
	b.call(b.session, method, params, out)
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its JSON value into out.
func (b *browser) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := b.try(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("%s: %s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// waitFor evaluates expr (a JavaScript expression giving JSON) until its
// value decodes into out and ok(out) holds, or fails the test after
// timeout with what, and the last value it saw.
func (b *browser) waitFor(ctx context.Context, what, expr string, out any, ok func() bool) {
	b.t.Helper()
	var last error
	for {
		if err := b.eval(expr, out); err == nil && ok() {
			return
		} else if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("waiting for %s: %v (last error %v, last value %+v)", what, ctx.Err(), last, out)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// click presses and releases the left mouse button at (x, y), as a user
// does: the page gets real mouse events, not a synthetic element.click().
func (b *browser) click(x, y float64) {
	b.t.Helper()
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		b.do("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}, nil)
	}
}

// clickOn clicks the middle of the element that the JavaScript expression
// elem finds, once it is there, enabled and has stopped moving (dialogs
// animate in: a rectangle read mid-animation misses).
func (b *browser) clickOn(ctx context.Context, what, elem string) {
	b.t.Helper()
	type box struct {
		X, Y, W, H float64
		Disabled   bool
	}
	expr := `(() => { const e = (` + elem + `); if (!e) return null; const r = e.getBoundingClientRect();
		return {X: r.x, Y: r.y, W: r.width, H: r.height, Disabled: !!e.disabled}; })()`
	var prev, cur box
	b.waitFor(ctx, what, expr, &cur, func() bool {
		stable := cur.W > 0 && !cur.Disabled && cur == prev
		prev = cur
		return stable
	})
	b.click(cur.X+cur.W/2, cur.Y+cur.H/2)
}

// typeText types s into the focused element (Input.insertText: the page
// sees input events, as from a keyboard).
func (b *browser) typeText(s string) {
	b.t.Helper()
	b.do("Input.insertText", map[string]any{"text": s}, nil)
}

// screenshot saves the page as a PNG at path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var r struct{ Data []byte }
	b.do("Page.captureScreenshot", map[string]any{"format": "png"}, &r)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, r.Data, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
