//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the terminal end a command writes to,
// and the end that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	// Raw: the terminal passes bytes as they are (no \n -> \r\n).
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err == nil {
		tio.Oflag &^= unix.OPOST
		_ = unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return s, m
}

// runOnTerminal runs the CLI with standard output on a terminal and returns
// what reached it.
func runOnTerminal(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	term, reader := openPTY(t)
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, reader) // until the terminal end closes (EIO)
		got <- b.Bytes()
	}()
	var errb bytes.Buffer
	code := Main(args, strings.NewReader(""), term, &errb)
	term.Close()
	return code, string(<-got), errb.String()
}

// trace convert to a terminal: method names from a crafted trace used to
// reach it raw (setting the window title, clearing the screen). Text
// formats are escaped now, JSON stays valid JSON, and a binary format is
// refused.
func TestConvertToTerminalEscaped(t *testing.T) {
	in := writeHostileTrace(t)
	code, out, errOut := runOnTerminal(t, "trace", "convert", "-f", "folded", "-o", "-", in)
	if code != 0 {
		t.Fatalf("folded: exit %d\n%s", code, errOut)
	}
	for _, raw := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, raw) {
			t.Errorf("folded: %q reaches the terminal raw:\n%q", raw, out)
		}
	}
	// Folded stacks separate frames with ';', which names lose (as ',').
	if !strings.Contains(out, "App.Type"+strings.ReplaceAll(hostileEscaped, ";", ",")) {
		t.Errorf("folded: the escaped name is not shown:\n%s", out)
	}
	code, out, errOut = runOnTerminal(t, "trace", "convert", "-f", "speedscope", "-o", "-", in)
	if code != 0 || strings.ContainsAny(out, "\x1b\x07\u009b\u202e") || !strings.Contains(out, `\u009b31m\u202e`) {
		t.Errorf("speedscope: exit %d, raw controls or no escapes:\n%q\n%s", code, out, errOut)
	}
	code, out, errOut = runOnTerminal(t, "trace", "convert", "-f", "pprof", "-o", "-", in)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "binary") {
		t.Errorf("pprof to a terminal: exit %d, %d bytes\n%s", code, len(out), errOut)
	}
	// Not a terminal: the bytes as they are (what a pipe or file wants).
	code, out, _ = run(t, "trace", "convert", "-f", "folded", "-o", "-", in)
	if code != 0 || !strings.Contains(out, strings.ReplaceAll(hostile, ";", ",")) {
		t.Errorf("folded to a pipe: exit %d, the names changed:\n%q", code, out)
	}
}

// -o DIR writes into the directory with the default name; a directory as
// input is a local I/O failure (exit 6), not damaged input (5).
func TestConvertDirectories(t *testing.T) {
	in := writeHostileTrace(t)
	dir := t.TempDir()
	code, _, errOut := run(t, "trace", "convert", "-f", "folded", "-o", dir, in)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	want := filepath.Join(dir, strings.TrimSuffix(filepath.Base(in), ".nettrace")+".folded")
	if _, err := os.Stat(want); err != nil {
		t.Errorf("no %s: %v", want, err)
	}
	for _, args := range [][]string{
		{"trace", "convert", dir}, {"trace", "report", dir}, {"trace", "stats", dir}, {"trace", "events", dir}, {"gcdump", "report", dir},
	} {
		code, _, errOut := run(t, args...)
		checkClass(t, code, exitIO, errOut)
		if !strings.Contains(errOut, "is a directory") {
			t.Errorf("%v: %s", args, errOut)
		}
	}
	code, _, errOut = run(t, "trace", "convert", "-f", "folded", "-o", filepath.Join(dir, "no", "x.folded"), in)
	checkClass(t, code, exitIO, errOut)
}
