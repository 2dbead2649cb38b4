package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/clrdiag/clrdiag/internal/counterview"
	"golang.org/x/term"
)

// monitorKey is what a key pressed during counters monitor asks for.
type monitorKey uint8

const (
	keyNone monitorKey = iota
	keyPause
	keyResume
	keyQuit
)

// keysTitle is the title line of the redrawn view when keys are read.
const keysTitle = "Press p to pause, r to resume, q to quit."

// keyOf maps a byte read from the raw terminal to its action, as
// dotnet-counters does: p pauses, r resumes, q quits. Raw mode turns
// Ctrl-C into a byte (no signal), so it quits too.
func keyOf(b byte) monitorKey {
	switch b {
	case 'p', 'P':
		return keyPause
	case 'r', 'R':
		return keyResume
	case 'q', 'Q', 0x03:
		return keyQuit
	}
	return keyNone
}

// readKeys reads keys from r and calls on with each action until on
// returns false, r ends (nil at EOF) or fails, or ctx ends between reads.
// A Read that blocks is not interrupted by ctx: the caller need not wait
// for readKeys once ctx is cancelled.
func readKeys(ctx context.Context, r io.Reader, on func(monitorKey) bool) error {
	var buf [64]byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := r.Read(buf[:])
		for _, b := range buf[:n] {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if k := keyOf(b); k != keyNone && !on(k) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read keys: %w", err)
		}
	}
}

// monitorView serializes the view between the session, the refresh ticker
// and the keys, and keeps the status line: Running, Paused or Stopped,
// followed by the latest warning.
type monitorView struct {
	mu      sync.Mutex
	v       *counterview.View
	w       io.Writer
	state   string
	warning string
	paused  bool
	err     error // first write error
}

func newMonitorView(v *counterview.View, w io.Writer) *monitorView {
	return &monitorView{v: v, w: w, state: "Running"}
}

// render redraws unless the display is paused.
func (m *monitorView) render() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.paused {
		m.draw()
	}
}

// draw redraws; m.mu is held.
func (m *monitorView) draw() {
	if m.v.Terminal {
		m.v.Status = m.state
		if m.warning != "" {
			m.v.Status += ". Warning: " + m.warning
		}
	}
	if err := m.v.Render(m.w); err != nil && m.err == nil {
		m.err = err
	}
}

// key applies a pause or resume key and redraws; it reports false for quit.
func (m *monitorView) key(k monitorKey) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch k {
	case keyQuit:
		return false
	case keyPause:
		if !m.paused {
			m.state = "Paused"
			m.draw() // the latest values, frozen under "Paused"
			m.paused = true
		}
	case keyResume:
		if m.paused {
			m.paused = false
			m.state = "Running"
			m.draw()
		}
	}
	return true
}

// stop shows the final state, paused or not.
func (m *monitorView) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = false
	m.state = "Stopped"
	m.draw()
}

// rawStdin puts stdin in raw mode for single-key input when both stdin and
// stdout are terminals. It returns the terminal to read keys from and a
// function that restores the terminal (it must always be called), or a
// nil reader when keys are not read.
func rawStdin(e *env) (keys io.Reader, restore func(), err error) {
	in, ok := e.stdin.(*os.File)
	if !ok || !isTerminal(e.stdout) || !term.IsTerminal(int(in.Fd())) {
		return nil, func() {}, nil
	}
	fd := int(in.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return nil, func() {}, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	var once sync.Once
	return in, func() { once.Do(func() { _ = term.Restore(fd, old) }) }, nil
}

// crlfWriter writes "\r\n" for every "\n": a terminal in raw mode no
// longer returns the carriage by itself at a line feed.
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}
