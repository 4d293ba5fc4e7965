// Package chromium drives a headless Chromium through its DevTools protocol,
// with the standard library only: start the browser, open a page, navigate,
// evaluate JavaScript, take screenshots. The tests of the web view use it to
// look at the pages as a user's browser renders them.
package chromium

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PathEnv names the environment variable that points at the browser binary
// when it is not on PATH as chromium, chromium-browser or google-chrome.
const PathEnv = "PULSARSIM_CHROMIUM"

// Find returns the path of a Chromium binary.
func Find() (string, error) {
	if p := os.Getenv(PathEnv); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on PATH (install Debian's chromium package, or set " + PathEnv + ")")
}

// Browser is a running headless Chromium with a fresh profile.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	http    string // the DevTools HTTP endpoint, "127.0.0.1:PORT"
	ws      string // the browser's DevTools WebSocket URL
	waited  chan struct{}
}

// flags keep the browser headless and quiet: no sandbox (tests may run as
// root), no GPU, and no connection of its own to the internet (updates,
// sync, QUIC probes), which a closed network refuses anyway.
var flags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
	"--disable-sync", "--disable-extensions", "--disable-default-apps", "--disable-dev-shm-usage",
	"--hide-scrollbars", "--mute-audio", "--disable-features=Translate,MediaRouter,OptimizationHints",
	"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
}

// Start starts the browser at path with a new, temporary profile.
func Start(ctx context.Context, path string) (*Browser, error) {
	profile, err := os.MkdirTemp("", "pulsarsim-chromium-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, append(flags, "--user-data-dir="+profile, "about:blank")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	b := &Browser{cmd: cmd, profile: profile, waited: make(chan struct{})}
	found := make(chan string, 1)
	var tail strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "DevTools listening on ws://"); ok {
				found <- rest
				continue
			}
			if tail.Len() < 4096 {
				tail.WriteString(line + "\n")
			}
		}
		close(found)
		io.Copy(io.Discard, stderr)
	}()
	go func() { cmd.Wait(); close(b.waited) }()
	select {
	case addr, ok := <-found:
		if !ok {
			b.Close()
			return nil, fmt.Errorf("chromium exited before listening: %s", tail.String())
		}
		b.http, b.ws = addr[:strings.Index(addr, "/")], "ws://"+addr
		return b, nil
	case <-ctx.Done():
		b.Close()
		return nil, ctx.Err()
	case <-time.After(60 * time.Second):
		b.Close()
		return nil, errors.New("chromium did not open its DevTools port within 60 s")
	}
}

// Close ends the browser and every process it started, and removes its
// profile. It asks the browser to close first, so that it reaps its own
// children, then kills whatever is left of its process group.
func (b *Browser) Close() error {
	if b.ws != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if ws, err := dialWS(ctx, b.ws); err == nil {
			ws.WriteText([]byte(`{"id":1,"method":"Browser.close"}`))
			select {
			case <-b.waited:
			case <-ctx.Done():
			}
			ws.Close()
		}
		cancel()
	}
	if b.cmd.Process != nil {
		syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-b.waited
	return os.RemoveAll(b.profile)
}

// NewPage opens a new tab and connects to it.
func (b *Browser) NewPage(ctx context.Context) (*Page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+b.http+"/json/new?about:blank", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var target struct {
		ID  string `json:"id"`
		WS  string `json:"webSocketDebuggerUrl"`
		Err string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil {
		return nil, fmt.Errorf("new tab: %s: %w", resp.Status, err)
	}
	ws, err := dialWS(ctx, target.WS)
	if err != nil {
		return nil, err
	}
	p := &Page{ws: ws, pending: map[int64]chan reply{}, waiters: map[string][]chan json.RawMessage{},
		done: make(chan struct{})}
	go p.read()
	if err := p.Call(ctx, "Page.enable", nil, nil); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.Call(ctx, "Runtime.enable", nil, nil); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Page is one browser tab.
type Page struct {
	ws *wsConn

	mu      sync.Mutex
	next    int64
	pending map[int64]chan reply
	waiters map[string][]chan json.RawMessage
	err     error
	done    chan struct{}
}

type reply struct {
	result json.RawMessage
	err    error
}

// read hands each message to the call or the event waiter it is for.
func (p *Page) read() {
	defer close(p.done)
	for {
		raw, err := p.ws.ReadMessage()
		if err != nil {
			p.mu.Lock()
			p.err = err
			for id, ch := range p.pending {
				ch <- reply{err: err}
				delete(p.pending, id)
			}
			p.mu.Unlock()
			return
		}
		var msg struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw, &msg) != nil {
			continue
		}
		p.mu.Lock()
		if msg.Method != "" {
			for _, ch := range p.waiters[msg.Method] {
				ch <- msg.Params
			}
			delete(p.waiters, msg.Method)
		} else if ch := p.pending[msg.ID]; ch != nil {
			delete(p.pending, msg.ID)
			r := reply{result: msg.Result}
			if msg.Error != nil {
				r.err = fmt.Errorf("devtools: %s (%d)", msg.Error.Message, msg.Error.Code)
			}
			ch <- r
		}
		p.mu.Unlock()
	}
}

// Call sends a DevTools command and decodes its result into result (unless
// nil).
func (p *Page) Call(ctx context.Context, method string, params, result any) error {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return p.err
	}
	p.next++
	id := p.next
	ch := make(chan reply, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	body, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		return err
	}
	if err := p.ws.WriteText(body); err != nil {
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil || result == nil {
			return r.err
		}
		return json.Unmarshal(r.result, result)
	case <-ctx.Done():
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// on returns a channel that receives the parameters of the next event of a
// kind.
func (p *Page) on(method string) chan json.RawMessage {
	ch := make(chan json.RawMessage, 1)
	p.mu.Lock()
	p.waiters[method] = append(p.waiters[method], ch)
	p.mu.Unlock()
	return ch
}

// Navigate loads url and waits for the page's load event.
func (p *Page) Navigate(ctx context.Context, url string) error {
	loaded := p.on("Page.loadEventFired")
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := p.Call(ctx, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigate to %s: %s", url, nav.ErrorText)
	}
	select {
	case <-loaded:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s to load: %w", url, ctx.Err())
	}
}

// Eval evaluates a JavaScript expression in the page, waiting for it if it
// is a promise, and decodes its value (as JSON) into out (unless nil).
func (p *Page) Eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.Call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true,
		"awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("javascript: %s %s", r.Exception.Text, r.Exception.Exception.Description)
	}
	if out == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// SetViewport sets the page's width and height in CSS pixels, and how many
// device pixels make one.
func (p *Page) SetViewport(ctx context.Context, width, height int, scale float64) error {
	return p.Call(ctx, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height,
		"deviceScaleFactor": scale, "mobile": false}, nil)
}

// Screenshot returns a PNG of the page's top, as wide as the viewport and at
// most maxHeight CSS pixels high (the whole page when it is shorter).
func (p *Page) Screenshot(ctx context.Context, maxHeight int) ([]byte, error) {
	var size struct {
		W float64 `json:"w"`
		H float64 `json:"h"`
	}
	if err := p.Eval(ctx, `({w: document.documentElement.clientWidth, h: document.documentElement.scrollHeight})`, &size); err != nil {
		return nil, err
	}
	var shot struct {
		Data string `json:"data"`
	}
	clip := map[string]any{"x": 0, "y": 0, "width": size.W, "height": min(size.H, float64(maxHeight)), "scale": 1}
	if err := p.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png", "clip": clip,
		"captureBeyondViewport": true}, &shot); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(shot.Data)
}

// Close closes the connection to the tab.
func (p *Page) Close() error {
	err := p.ws.Close()
	<-p.done
	return err
}
