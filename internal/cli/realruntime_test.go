//go:build linux

package cli

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/internal/dotnettest"
	"github.com/clrdiag/clrdiag/internal/profilertest"
	"github.com/clrdiag/clrdiag/ipc"
	"github.com/clrdiag/clrdiag/ipctest"
	"github.com/clrdiag/clrdiag/transport"
)

func startBasic(t *testing.T) *dotnettest.Target {
	t.Helper()
	rt := dotnettest.Find(t)
	return rt.Start(t, rt.Build(t, "Basic"), nil, nil)
}

// startBasicOn starts the Basic target on rt.
func startBasicOn(t *testing.T, rt *dotnettest.Runtime, opts *dotnettest.Options) *dotnettest.Target {
	t.Helper()
	return rt.Start(t, rt.Build(t, "Basic"), nil, opts)
}

func TestRealPSFindsTargetNotDeadOne(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, func(t *testing.T, rt *dotnettest.Runtime) {
		live := startBasicOn(t, rt, nil)
		dead := startBasicOn(t, rt, nil)
		deadPID := dead.PID
		// SIGKILL leaves the socket file behind: ps must not list the pid.
		if err := syscall.Kill(deadPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-dead.Done()
		if _, err := os.Stat(dead.Socket); err != nil {
			t.Fatalf("expected the killed target's socket to stay behind: %v", err)
		}
		code, out, errOut := run(t, "ps", "--json")
		if code != 0 {
			t.Fatalf("ps exit %d: %s", code, errOut)
		}
		var entries []psEntry
		if err := json.Unmarshal([]byte(out), &entries); err != nil {
			t.Fatalf("ps --json output does not parse: %v\n%s", err, out)
		}
		var found bool
		for _, e := range entries {
			if e.PID == deadPID {
				t.Errorf("ps lists pid %d, killed with its socket left behind", deadPID)
			}
			if e.PID == live.PID {
				found = true
				if e.Socket != live.Socket || e.Name == "" || e.CommandLine != procCmdline(t, live.PID) {
					t.Errorf("entry for the live target = %+v (socket %s, command line %q)", e, live.Socket, procCmdline(t, live.PID))
				}
			}
		}
		if !found {
			t.Fatalf("ps does not list the live target %d:\n%s", live.PID, out)
		}
		// The plain table too.
		code, out, _ = run(t, "ps")
		if code != 0 || !strings.Contains(out, fmt.Sprint(live.PID)) || !strings.Contains(out, "COMMAND LINE") || !strings.Contains(out, "SOCKET") || !strings.Contains(out, live.Socket) {
			t.Fatalf("ps table (exit %d):\n%s", code, out)
		}
	})
}

// procCmdline is a process's command line as the operating system has it,
// its arguments joined by spaces.
func procCmdline(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ")
}

// mappedRuntimeVersion is the version of the Microsoft.NETCore.App whose
// libcoreclr.so process pid has mapped, from the directory it was loaded
// from (/proc/PID/maps): the runtime's version as the file system says.
func mappedRuntimeVersion(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 6 && filepath.Base(f[5]) == "libcoreclr.so" {
			return filepath.Base(filepath.Dir(f[5]))
		}
	}
	t.Fatalf("process %d maps no libcoreclr.so", pid)
	return ""
}

// elfArch is the .NET name of the architecture of an ELF executable
// (RuntimeInformation.ProcessArchitecture), from its header.
func elfArch(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "x64"
	case elf.EM_AARCH64:
		return "arm64"
	case elf.EM_386:
		return "x86"
	case elf.EM_ARM:
		return "arm"
	}
	return f.Machine.String()
}

// TestRealInfo checks ProcessInfo3 on .NET 8 and later against what the
// operating system says about the process: its pid, its command line
// (/proc/PID/cmdline), its architecture (the ELF header of /proc/PID/exe)
// and the runtime's version (the directory its libcoreclr.so was mapped
// from).
func TestRealInfo(t *testing.T) {
	dotnettest.ForEachSmoke(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startBasicOn(t, rt, nil)
		pid := fmt.Sprint(tg.PID)
		code, out, errOut := run(t, "info", "-p", pid, "--json")
		if code != 0 {
			t.Fatalf("info --json: exit %d %s", code, errOut)
		}
		var j infoJSON
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		arch := elfArch(t, fmt.Sprintf("/proc/%d/exe", tg.PID))
		version := mappedRuntimeVersion(t, tg.PID)
		if version != rt.Version {
			t.Fatalf("the target mapped the CoreCLR of %s, not of %s", version, rt.Version)
		}
		// The runtime names its host by the path the kernel has for it
		// (.NET 10 and later resolve symbolic links, as /proc/PID/exe).
		cmdline := procCmdline(t, tg.PID)
		argv0, args, _ := strings.Cut(cmdline, " ")
		if host, _, _ := strings.Cut(j.CommandLine, " "); host != argv0 {
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", tg.PID)); err == nil && host == exe {
				cmdline = exe + " " + args
			}
		}
		want := infoJSON{
			PID: uint64(tg.PID), RuntimeCookie: j.RuntimeCookie, CommandLine: cmdline, OS: "Linux", Arch: arch,
			EntrypointAssembly: "Basic", ClrProductVersion: version, RuntimeIdentifier: "linux-" + arch,
			ProcessInfoVersion: 3, ProcessInfo3Payload: 1, DiagnosticSocketPath: tg.Socket, Source: "ProcessInfo",
		}
		if j != want {
			t.Errorf("info --json = %+v\nwant          %+v", j, want)
		}
		if g, err := ipc.ParseGUID(j.RuntimeCookie); err != nil || g == (ipc.GUID{}) {
			t.Errorf("runtime cookie %q is not a GUID: %v", j.RuntimeCookie, err)
		}
		// The cookie names this runtime instance: the same on every ask.
		_, again, _ := run(t, "info", "-p", pid, "--json")
		var j2 infoJSON
		if err := json.Unmarshal([]byte(again), &j2); err != nil || j2.RuntimeCookie != j.RuntimeCookie {
			t.Errorf("second info: cookie %q, want %q (%v)", j2.RuntimeCookie, j.RuntimeCookie, err)
		}
		code, out, _ = run(t, "info", "-p", pid)
		wantOutput(t, "info", out, "Process ID:          "+pid+"\n", "Runtime version:     "+version+"\n",
			"Architecture:        "+arch+"\n", "Answered by:         ProcessInfo3\n", "Command line:        "+cmdline+"\n")
		if code != 0 {
			t.Errorf("info: exit %d", code)
		}
	})
}

func TestRealInfoNeedsNET5(t *testing.T) {
	tg := startBasic(t)
	code, out, errOut := run(t, "info", "-p", fmt.Sprint(tg.PID))
	if code != exitRuntime {
		t.Fatalf("info on 3.1: exit %d, want exitRuntime:\n%s", code, out)
	}
	if !strings.Contains(errOut, "needs .NET 5 or later") {
		t.Errorf("info stderr does not say why:\n%s", errOut)
	}
	for _, want := range []string{fmt.Sprint(tg.PID), "Basic.dll", tg.Socket} {
		if !strings.Contains(out, want) {
			t.Errorf("info stdout lacks %q:\n%s", want, out)
		}
	}
	// --json: the operating system's facts, as the monitor gives them.
	code, out, _ = run(t, "info", "-p", fmt.Sprint(tg.PID), "--json")
	var j infoJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != exitRuntime {
		t.Fatalf("info --json on 3.1: exit %d, %v:\n%s", code, err, out)
	}
	if j.PID != uint64(tg.PID) || j.Source != "os" || j.Name != "dotnet" || !strings.Contains(j.CommandLine, "Basic.dll") || j.DiagnosticSocketPath != tg.Socket {
		t.Errorf("info --json on 3.1 = %+v", j)
	}
}

// TestRealDump writes each type of dump on every runtime (the runtime's
// createdump writes it) and reads each back as an ELF core file of the
// target: its process id, its main thread, sizes that grow from mini to
// full.
func TestRealDump(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Majors, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startBasicOn(t, rt, nil)
		dir := t.TempDir()
		sizes := map[string]int64{}
		for _, typ := range []string{"mini", "triage", "heap", "full"} {
			path := filepath.Join(dir, "core."+typ)
			code, out, errOut := run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", typ, "-o", path)
			if code != 0 {
				t.Fatalf("dump --type %s: exit %d: %s %s", typ, code, out, errOut)
			}
			st, err := os.Lstat(path)
			if err != nil {
				t.Fatalf("dump --type %s: %v", typ, err)
			}
			// createdump makes it 0644; a dump holds the process's secrets.
			if st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
				t.Errorf("dump mode %v, want a regular file 0600", st.Mode())
			}
			if !strings.Contains(out, path) || !strings.Contains(out, fmt.Sprintf("(%d bytes", st.Size())) {
				t.Errorf("dump does not say where the dump went and its size (%d): %s", st.Size(), out)
			}
			checkCore(t, path, tg.PID)
			sizes[typ] = st.Size()
			t.Logf("%s dump: %d bytes", typ, st.Size())
			if typ == "full" {
				os.Remove(path) // ~100 MB: do not keep it to the end of the test
			}
		}
		// A mini dump holds the threads' stacks and the runtime's own data
		// (megabytes); a heap dump adds the GC heap; a full one every page.
		if sizes["mini"] < 1<<20 || sizes["triage"] < 1<<20 || sizes["heap"] <= sizes["mini"] || sizes["full"] <= sizes["heap"] {
			t.Errorf("implausible dump sizes: %v", sizes)
		}
		// The runtime follows a link planted at the path (it overwrote the
		// link's target before the check): refused, the target untouched.
		link := filepath.Join(t.TempDir(), "core.link")
		victim := plantLink(t, link)
		code, _, errOut := run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", "mini", "-o", link)
		if code != exitIO || !strings.Contains(errOut, "symbolic link") {
			t.Errorf("dump onto a link: exit %d %s", code, errOut)
		}
		checkVictim(t, victim)
		// A directory that does not exist is refused before the runtime is
		// asked (3.1 would answer a bare E_FAIL).
		code, _, errOut = run(t, "dump", "-p", fmt.Sprint(tg.PID), "-o", "/nonexistent/dir/x")
		if code != exitIO || !strings.Contains(errOut, "/nonexistent/dir does not exist") {
			t.Errorf("dump into a missing directory: exit %d %s", code, errOut)
		}
		// The target keeps running.
		tg.Send(t, "ping")
		tg.Expect(t, "PONG", 10*time.Second)
	})
}

// checkCore reads a dump as an ELF core file: the process it describes
// (NT_PRPSINFO) is pid, and it holds the registers (NT_PRSTATUS) of the
// main thread, whose id is pid, and memory (PT_LOAD) within the file. It
// reads the program headers itself: debug/elf refuses the section header
// count .NET Core 3.1's createdump writes (e_shnum 0 with sh_size 1), which
// a core file's reader never needs.
func checkCore(t *testing.T, path string, pid int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	var eh [64]byte
	if _, err := io.ReadFull(f, eh[:]); err != nil || string(eh[:4]) != elf.ELFMAG || elf.Class(eh[4]) != elf.ELFCLASS64 || elf.Data(eh[5]) != elf.ELFDATA2LSB {
		t.Fatalf("%s is not a little-endian 64-bit ELF file (%v): % x", path, err, eh[:8])
	}
	le := binary.LittleEndian
	if typ := elf.Type(le.Uint16(eh[16:])); typ != elf.ET_CORE {
		t.Fatalf("%s is an ELF %v, not a core file", path, typ)
	}
	phoff, phentsize, phnum := int64(le.Uint64(eh[32:])), int64(le.Uint16(eh[54:])), int64(le.Uint16(eh[56:]))
	if phentsize < 56 || phnum == 0 || phoff+phnum*phentsize > st.Size() {
		t.Fatalf("%s: program headers %d x %d bytes at %d do not fit its %d bytes", path, phnum, phentsize, phoff, st.Size())
	}
	ph := make([]byte, phnum*phentsize)
	if _, err := f.ReadAt(ph, phoff); err != nil {
		t.Fatal(err)
	}
	var psPID int32 = -1
	var threads []int32
	loads := 0
	for i := int64(0); i < phnum; i++ {
		h := ph[i*phentsize:]
		off, filesz := le.Uint64(h[8:]), le.Uint64(h[32:])
		if off+filesz > uint64(st.Size()) {
			t.Fatalf("%s: segment %d ends at %d, past the end of the file (%d)", path, i, off+filesz, st.Size())
		}
		switch elf.ProgType(le.Uint32(h)) {
		case elf.PT_LOAD:
			loads++
		case elf.PT_NOTE:
			b := make([]byte, filesz)
			if _, err := f.ReadAt(b, int64(off)); err != nil {
				t.Fatal(err)
			}
			for len(b) >= 12 {
				namesz, descsz, typ := le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
				doff := 12 + uint64(namesz+3)&^3
				end := doff + uint64(descsz+3)&^3
				if end > uint64(len(b)) {
					t.Fatalf("%s: a note runs past its segment", path)
				}
				desc := b[doff : doff+uint64(descsz)]
				switch elf.NType(typ) {
				case elf.NT_PRSTATUS: // struct elf_prstatus: pr_pid at 32
					if len(desc) >= 36 {
						threads = append(threads, int32(le.Uint32(desc[32:])))
					}
				case elf.NT_PRPSINFO: // struct elf_prpsinfo: pr_pid at 24
					if len(desc) >= 28 {
						psPID = int32(le.Uint32(desc[24:]))
					}
				}
				b = b[end:]
			}
		}
	}
	if psPID != int32(pid) {
		t.Errorf("%s describes process %d, want %d", path, psPID, pid)
	}
	if !slices.Contains(threads, int32(pid)) {
		t.Errorf("%s holds the registers of threads %v, not of the main thread %d", path, threads, pid)
	}
	if loads == 0 {
		t.Errorf("%s holds no memory (no PT_LOAD segment)", path)
	}
}

func TestRealDumpRelativePathMadeAbsolute(t *testing.T) {
	tg := startBasic(t)
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	code, _, errOut := run(t, "dump", "-p", fmt.Sprint(tg.PID), "--type", "triage", "-o", "rel.dmp")
	if code != 0 {
		t.Fatalf("dump exit %d: %s", code, errOut)
	}
	if st, err := os.Stat(filepath.Join(dir, "rel.dmp")); err != nil || st.Size() == 0 {
		t.Fatalf("relative dump path not resolved against our directory: %v", err)
	}
}

func TestRealBadMagic(t *testing.T) {
	tg := startBasic(t)
	c := diag.NewClient(transport.Endpoint{Network: "unix", Address: tg.Socket, PID: tg.PID}, nil)
	raw := make([]byte, 20)
	copy(raw, "DOTNET_IPC_V2\x00")
	raw[14] = 20 // size
	raw[16], raw[17] = 0x04, 0x00
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.DoRaw(ctx, raw)
	var se *ipc.ServerError
	if !errors.As(err, &se) || se.HRESULT != 0x80131386 {
		t.Fatalf("bad magic: %v, want UNKNOWN_MAGIC", err)
	}
	if !strings.Contains(err.Error(), "UNKNOWN_MAGIC") {
		t.Errorf("error does not name UNKNOWN_MAGIC: %v", err)
	}
}

func TestRealEnvNeedsNET5(t *testing.T) {
	tg := startBasic(t)
	code, _, errOut := run(t, "env", "-p", fmt.Sprint(tg.PID))
	if code == 0 || !strings.Contains(errOut, ".NET 5") {
		t.Fatalf("env on 3.1: exit %d, %s", code, errOut)
	}
}

// TestRealGCDumpCollect takes a heap snapshot of a .NET 8+ process (a
// non-lossy Block session on .NET 11, a lossy one before): it holds the
// objects the target made. (The gcdump tests go further, against
// dotnet-gcdump.)
func TestRealGCDumpCollect(t *testing.T) {
	dotnettest.ForEachSmoke(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := rt.Start(t, rt.Build(t, "Heap"), nil, nil)
		tg.Send(t, "grow 100")
		tg.Expect(t, "GROWN 100", 30*time.Second)
		tg.WaitReading(t, time.Minute)
		out := filepath.Join(t.TempDir(), "heap.gcdump")
		code, _, errOut := run(t, "gcdump", "collect", "-p", fmt.Sprint(tg.PID), "-o", out)
		if code != 0 || !strings.Contains(errOut, "Heap walked:") || !strings.Contains(errOut, "Wrote "+out) {
			t.Fatalf("gcdump collect: exit %d\n%s", code, errOut)
		}
		code, js, _ := run(t, "gcdump", "report", out, "--json")
		var rep reportJSON
		if err := json.Unmarshal([]byte(js), &rep); code != 0 || err != nil {
			t.Fatalf("gcdump report: exit %d %v\n%s", code, err, js)
		}
		counts := map[string]int64{}
		for _, ty := range rep.Types {
			counts[ty.Name] = ty.Count
		}
		if counts["Heap.Leak"] != 100 || counts["Heap.Leak[]"] != 1 || counts["System.String"] == 0 || rep.Objects < 100 {
			t.Errorf("report: Heap.Leak %d, Heap.Leak[] %d, System.String %d, %d objects",
				counts["Heap.Leak"], counts["Heap.Leak[]"], counts["System.String"], rep.Objects)
		}
	})
}

// procEnviron is the environment process pid started with
// (/proc/PID/environ).
func procEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range strings.Split(strings.TrimRight(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// TestRealEnv reads a .NET 8+ runtime's environment (equal to the one the
// operating system started it with), sets a variable in it and removes one,
// and reads both back through the runtime itself: the target's own
// Environment.GetEnvironmentVariable.
func TestRealEnv(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startBasicOn(t, rt, &dotnettest.Options{Env: []string{"CLRDIAG_LIVE_ENV=a=b c", "CLRDIAG_LIVE_GONE=x"}})
		pid := fmt.Sprint(tg.PID)
		code, out, errOut := run(t, "env", "-p", pid, "--json")
		if code != 0 {
			t.Fatalf("env --json: exit %d %s", code, errOut)
		}
		var got map[string]string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		want := procEnviron(t, tg.PID)
		if !maps.Equal(got, want) {
			t.Errorf("env --json differs from /proc/%d/environ:\n got %v\nwant %v", tg.PID, got, want)
		}
		code, out, _ = run(t, "env", "-p", pid)
		if code != 0 || !strings.Contains(out, "\nCLRDIAG_LIVE_ENV=a=b c\n") {
			t.Errorf("env: exit %d\n%s", code, out)
		}

		code, out, errOut = run(t, "env", "set", "-p", pid, "CLRDIAG_LIVE_SET=hello, world")
		if code != 0 || out != "set CLRDIAG_LIVE_SET in process "+pid+"\n" {
			t.Fatalf("env set: exit %d %q %s", code, out, errOut)
		}
		tg.Send(t, "env CLRDIAG_LIVE_SET")
		if line := tg.Expect(t, "ENV CLRDIAG_LIVE_SET", 10*time.Second); line != "ENV CLRDIAG_LIVE_SET=hello, world" {
			t.Errorf("the target reads %q", line)
		}
		if code, out, errOut = run(t, "env", "set", "-p", pid, "CLRDIAG_LIVE_GONE="); code != 0 {
			t.Fatalf("env set NAME=: exit %d %q %s", code, out, errOut)
		}
		tg.Send(t, "env CLRDIAG_LIVE_GONE")
		if line := tg.Expect(t, "ENV CLRDIAG_LIVE_GONE", 10*time.Second); line != "ENV CLRDIAG_LIVE_GONE unset" {
			t.Errorf("after env set CLRDIAG_LIVE_GONE= the target reads %q", line)
		}
		_, out, _ = run(t, "env", "-p", pid, "--json")
		got = nil
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		if v, ok := got["CLRDIAG_LIVE_SET"]; !ok || v != "hello, world" {
			t.Errorf("env after set: CLRDIAG_LIVE_SET=%q (%v)", v, ok)
		}
		if v, ok := got["CLRDIAG_LIVE_GONE"]; ok {
			t.Errorf("env after removal still has CLRDIAG_LIVE_GONE=%q", v)
		}
	})
}

// TestRealPerfMap turns a .NET 8+ runtime's perf map on and off: the
// runtime then writes /tmp/perf-PID.map (the file perf reads), naming the
// methods it compiles while it is on and not those it compiles after; the
// jitdump type writes /tmp/jit-PID.dump instead. (.NET 8 and 10 write each
// line as they compile; .NET 11 buffers the file and writes it out at the
// latest when the map is disabled, so the files are read after that.)
func TestRealPerfMap(t *testing.T) {
	dotnettest.ForEach(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		tg := startBasicOn(t, rt, nil)
		pid := fmt.Sprint(tg.PID)
		perfMap := fmt.Sprintf("/tmp/perf-%d.map", tg.PID)
		jitDump := fmt.Sprintf("/tmp/jit-%d.dump", tg.PID)
		t.Cleanup(func() {
			for _, f := range []string{perfMap, fmt.Sprintf("/tmp/perfinfo-%d.map", tg.PID), jitDump} {
				os.Remove(f)
			}
		})
		if _, err := os.Stat(perfMap); err == nil {
			t.Fatalf("%s exists before perfmap enable", perfMap)
		}
		jit := func(m string) {
			t.Helper()
			tg.Send(t, "jit "+m)
			tg.Expect(t, "JITTED "+m, 10*time.Second)
		}
		code, out, errOut := run(t, "perfmap", "enable", "-p", pid, "--type", "perfmap")
		if code != 0 || !strings.Contains(out, "perf map (perfmap) enabled in process "+pid) {
			t.Fatalf("perfmap enable: exit %d %s %s", code, out, errOut)
		}
		jit("A")
		code, out, errOut = run(t, "perfmap", "disable", "-p", pid)
		if code != 0 || !strings.Contains(out, "perf map disabled in process "+pid) {
			t.Fatalf("perfmap disable: exit %d %s %s", code, out, errOut)
		}
		jit("B")
		// A line "ADDRESS SIZE NAME" for each method compiled while on.
		b, err := os.ReadFile(perfMap)
		if err != nil {
			t.Fatalf("no perf map after enable and disable: %v", err)
		}
		if !strings.Contains(string(b), "[Basic] Basic::JitA(int32)") {
			t.Errorf("%s does not name JitA, compiled while the map was on:\n%.3000s", perfMap, b)
		}
		if strings.Contains(string(b), "Basic::JitB") {
			t.Errorf("%s names JitB, compiled after perfmap disable", perfMap)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(line); len(f) < 3 || !strings.HasPrefix(f[0], "0x") {
				t.Errorf("%s: line %q is not ADDRESS SIZE NAME", perfMap, line)
				break
			}
		}

		if code, out, errOut = run(t, "perfmap", "enable", "-p", pid, "--type", "jitdump"); code != 0 {
			t.Fatalf("perfmap enable --type jitdump: exit %d %s %s", code, out, errOut)
		}
		jit("C")
		if code, _, errOut = run(t, "perfmap", "disable", "-p", pid); code != 0 {
			t.Fatalf("perfmap disable: exit %d %s", code, errOut)
		}
		// A jitdump file starts with the magic 0x4A695444 ("JiTD") in the
		// writer's byte order; each code-load record carries the name.
		b, err = os.ReadFile(jitDump)
		if err != nil || !strings.HasPrefix(string(b), "DTiJ") || !strings.Contains(string(b), "Basic::JitC") {
			t.Errorf("%s (%v): no jitdump magic or no JitC: % x", jitDump, err, b[:min(len(b), 8)])
		}
		tg.Send(t, "ping")
		tg.Expect(t, "PONG", 10*time.Second)
	})
}

// TestRealStartupHook applies a startup hook to a .NET 8+ runtime paused at
// startup, the two ways a runtime pauses: connecting to a port clrdiag
// listens on (DOTNET_DiagnosticPorts=PATH, which suspends; clrdiag resumes it
// when done), and waiting on its own socket (DOTNET_DefaultDiagnosticPortSuspend=1)
// for startup commands and 'clrdiag resume'. The hook's Initialize sets a
// variable the program reads in Main.
func TestRealStartupHook(t *testing.T) {
	dotnettest.ForEachSmoke(t, dotnettest.Modern, func(t *testing.T, rt *dotnettest.Runtime) {
		hook := rt.BuildWith(t, "StartupHook", dotnettest.BuildOptions{Library: true})
		dll := rt.Build(t, "Basic")
		hookRan := func(tg *dotnettest.Target) {
			t.Helper()
			tg.Send(t, "env CLRDIAG_HOOK_RAN")
			if line := tg.Expect(t, "ENV CLRDIAG_HOOK_RAN", 10*time.Second); line != fmt.Sprintf("ENV CLRDIAG_HOOK_RAN=pid %d", tg.PID) {
				t.Errorf("the hook's side effect: %q", line)
			}
		}

		t.Run("listen", func(t *testing.T) {
			sock := ipctest.SocketPath(t)
			r := startCLI("startup-hook", "--diagnostic-port", sock, hook)
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(r.stderr.String(), "Waiting for a runtime to connect"); {
				if time.Now().After(deadline) {
					t.Fatalf("clrdiag does not listen:\n%s", r.stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			tg := rt.Start(t, dll, nil, &dotnettest.Options{NoWaitReady: true, Env: []string{"DOTNET_DiagnosticPorts=" + sock}})
			r.wait(t, 60*time.Second)
			if r.code != 0 || !strings.Contains(r.stdout.String(), hook) {
				t.Fatalf("startup-hook: exit %d\n%s%s", r.code, r.stdout.String(), r.stderr.String())
			}
			tg.WaitReady(t, 60*time.Second)
			hookRan(tg)
		})

		t.Run("running", func(t *testing.T) {
			// A runtime that never paused runs a hook at once, and takes a
			// startup profiler it will never load.
			lib := profilertest.Build(t, profilertest.Standard)
			tg := rt.Start(t, dll, nil, &dotnettest.Options{Env: []string{"CORECLR_ENABLE_PROFILING=0"}})
			pid := fmt.Sprint(tg.PID)
			tg.Send(t, "env CLRDIAG_HOOK_RAN")
			tg.Expect(t, "ENV CLRDIAG_HOOK_RAN unset", 10*time.Second)
			code, out, errOut := run(t, "startup-hook", "-p", pid, hook)
			if code != 0 || !strings.Contains(out, "a running one has just run it") {
				t.Fatalf("startup-hook on a running runtime: exit %d %s %s", code, out, errOut)
			}
			hookRan(tg)
			code, out, errOut = run(t, "startup-profiler", "-p", pid, "--profiler", lib, "--clsid", profilertest.CLSID)
			if code != 0 || !strings.Contains(out, "a running one never will") {
				t.Errorf("startup-profiler on a running runtime: exit %d %s %s", code, out, errOut)
			}
			if m, err := profilertest.Mapped(tg.PID, lib); err != nil || m {
				t.Errorf("the startup profiler is mapped in a running runtime: %v %v", m, err)
			}
		})

		t.Run("own socket, resume", func(t *testing.T) {
			lib := profilertest.Build(t, profilertest.Standard)
			logPath := filepath.Join(t.TempDir(), "profiler.log")
			tg := rt.Start(t, dll, nil, &dotnettest.Options{NoWaitReady: true, Env: []string{
				"DOTNET_DefaultDiagnosticPortSuspend=1", profilertest.LogEnv + "=" + logPath, "CORECLR_ENABLE_PROFILING=0"}})
			tg.WaitSocket(t)
			pid := fmt.Sprint(tg.PID)
			// A hook the runtime cannot load would end the program at
			// resume (an unhandled FileNotFoundException): not sent.
			code, out, errOut := run(t, "startup-hook", "-p", pid, "/nonexistent/Hook.dll")
			if code != exitUsage || !strings.Contains(errOut, "/nonexistent/Hook.dll does not exist in the file system of process "+pid) {
				t.Errorf("startup-hook of a missing file: exit %d %s %s", code, out, errOut)
			}
			code, out, errOut = run(t, "startup-hook", "-p", pid, hook)
			if code != 0 || !strings.Contains(out, "a runtime paused at startup runs it when resumed") {
				t.Fatalf("startup-hook: exit %d %s %s", code, out, errOut)
			}
			code, out, errOut = run(t, "startup-profiler", "-p", pid, "--profiler", lib, "--clsid", profilertest.CLSID)
			if code != 0 || !strings.Contains(out, "profiler "+lib+" registered") {
				t.Fatalf("startup-profiler: exit %d %s %s", code, out, errOut)
			}
			// (Both were accepted: the runtime was paused, for a running
			// one refuses them, as checked below.)
			code, out, errOut = run(t, "resume", "-p", pid)
			if code != 0 || out != "resumed process "+pid+"\n" {
				t.Fatalf("resume: exit %d %q %s", code, out, errOut)
			}
			tg.WaitReady(t, 60*time.Second)
			hookRan(tg)
			// The profiler was loaded at resume (it refuses to run at
			// startup, by design: it is an attach profiler).
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			evs, err := profilertest.WaitLog(ctx, logPath, func(evs []profilertest.Event) bool {
				return profilertest.Count(evs, "initialize-at-startup-refused") > 0
			})
			if err != nil || profilertest.Count(evs, "load") == 0 {
				t.Errorf("profiler log after resume: %v (%v)", profilertest.Names(evs), err)
			}
			// Once resumed, StartupProfiler is refused.
			code, _, errOut = run(t, "startup-profiler", "-p", pid, "--profiler", lib, "--clsid", profilertest.CLSID)
			if code != exitRuntime || !strings.Contains(errOut, "E_INVALIDARG") || !strings.Contains(errOut, "startup-profiler only works while the runtime is paused at startup") {
				t.Errorf("startup-profiler after resume: exit %d %s", code, errOut)
			}
			tg.Send(t, "ping")
			tg.Expect(t, "PONG", 10*time.Second)
		})
	})
}

func TestRealNameSelection(t *testing.T) {
	tg := startBasic(t)
	// Every dotnet target is named "dotnet": -n must refuse to guess when
	// there are several, and pick the one when it is alone. Other
	// packages' tests start and stop targets meanwhile, so what the
	// command found is judged by what it says: ours dumped when alone,
	// ours among the pids it names when not.
	code, out, errOut := run(t, "dump", "-n", "dotnet", "--type", "mini", "-o", filepath.Join(t.TempDir(), "n.core"))
	switch {
	case code == 0:
		if !strings.Contains(errOut, fmt.Sprintf("dump of process %d to", tg.PID)) {
			t.Fatalf("dump -n dotnet dumped another process: %s %s", out, errOut)
		}
	case code == exitUsage && strings.Contains(errOut, "pick one with -p"):
		if !strings.Contains(errOut, fmt.Sprint(tg.PID)) {
			t.Fatalf("several dotnet processes, ours not named: %s", errOut)
		}
	default:
		t.Fatalf("dump -n dotnet: exit %d %s %s", code, out, errOut)
	}
	code, _, errOut = run(t, "dump", "-n", "no-such-process-name")
	if code != exitNotFound || !strings.Contains(errOut, `no .NET process is named "no-such-process-name"`) || !strings.Contains(errOut, fmt.Sprint(tg.PID)) {
		t.Fatalf("unknown name: exit %d %s", code, errOut)
	}
	// The app's own name: a 'dotnet Basic.dll' process is named dotnet.
	code, _, errOut = run(t, "dump", "-n", "Basic")
	if code != exitNotFound || !strings.Contains(errOut, fmt.Sprintf("pid %d (", tg.PID)) || !strings.Contains(errOut, "named dotnet") {
		t.Fatalf("-n Basic: exit %d %s", code, errOut)
	}
}

// TestRealStartupCommandsNeedNewerRuntime: .NET Core 3.1 does not know
// StartupProfiler (it answers BAD_ENCODING) nor ApplyStartupHook; the
// message says which runtime is needed, not to retry. (A profiler path
// that does not exist is only warned about: it is sent all the same.)
func TestRealStartupCommandsNeedNewerRuntime(t *testing.T) {
	tg := startBasic(t)
	pid := fmt.Sprint(tg.PID)
	code, _, errOut := run(t, "startup-profiler", "-p", pid, "--profiler", "/opt/prof/libprof.so", "--clsid", "8A5E2A55-1C8E-4C7B-9A3B-0D3E4F5A6B7C")
	if code != exitRuntime || !strings.Contains(errOut, "startup-profiler needs .NET 6 or later") || strings.Contains(errOut, "retry") {
		t.Errorf("startup-profiler on 3.1: exit %d %s", code, errOut)
	}
	// A file that exists (clrdiag refuses a hook path the target does not
	// have before it asks): 3.1 refuses the command before reading it.
	hook := filepath.Join(t.TempDir(), "Hook.dll")
	if err := os.WriteFile(hook, []byte("not read"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "startup-hook", "-p", pid, hook)
	if code != exitRuntime || !strings.Contains(errOut, "startup-hook needs .NET 8 or later") {
		t.Errorf("startup-hook on 3.1: exit %d %s", code, errOut)
	}
	tg.Send(t, "ping")
	tg.Expect(t, "PONG", 10*time.Second)
}

// TestRealCompletePID: -p and -n complete from the live .NET processes.
func TestRealCompletePID(t *testing.T) {
	tg := startBasic(t)
	_, out, _ := run(t, "__complete", "stack", "-p", "")
	if !strings.Contains(out, fmt.Sprintf("%d\tdotnet ", tg.PID)) || !strings.Contains(out, "Basic.dll") {
		t.Errorf("-p completions lack pid %d:\n%s", tg.PID, out)
	}
	_, out, _ = run(t, "__complete", "dump", "-n", "")
	if !strings.Contains(out, "dotnet\tpid ") || !strings.Contains(out, fmt.Sprint(tg.PID)) {
		t.Errorf("-n completions lack dotnet (pid %d):\n%s", tg.PID, out)
	}
}

// TestRealRecordReplay: sessions with the real 3.1 runtime (a stack
// snapshot, counters, a trace) recorded and replayed give the same output
// with the process gone.
func TestRealRecordReplay(t *testing.T) {
	tg := startBasic(t)
	pid := fmt.Sprint(tg.PID)
	type rc struct {
		name string
		args []string
		file string // output file compared instead of stdout
	}
	for _, c := range []rc{
		{"stack", []string{"stack"}, ""},
		{"counters collect", []string{"counters", "collect", "--duration", "2s", "--refresh-interval", "1", "-o", "OUT"}, "OUT"},
		{"trace collect", []string{"trace", "collect", "--profile", "gc-collect", "--duration", "1s", "-o", "OUT"}, "OUT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "rec")
			with := func(suffix string) []string {
				var out []string
				for _, a := range c.args {
					if a == "OUT" {
						a = filepath.Join(dir, "out."+suffix)
					}
					out = append(out, a)
				}
				return out
			}
			code, live, errOut := run(t, append(append([]string{"--record-ipc", rec}, with("live")...), "-p", pid)...)
			if code != 0 {
				t.Fatalf("recorded: exit %d %s", code, errOut)
			}
			code, replayed, errOut := run(t, append([]string{"--replay-ipc", rec}, with("replay")...)...)
			if code != 0 {
				t.Fatalf("replayed: exit %d %s", code, errOut)
			}
			if c.file == "" {
				if live != replayed || live == "" {
					t.Errorf("stdout differs:\n%s\nvs\n%s", live, replayed)
				}
				return
			}
			a, err1 := os.ReadFile(filepath.Join(dir, "out.live"))
			b, err2 := os.ReadFile(filepath.Join(dir, "out.replay"))
			if err1 != nil || err2 != nil || len(a) == 0 || string(a) != string(b) {
				t.Errorf("outputs differ: %v %v, %d and %d bytes", err1, err2, len(a), len(b))
			}
		})
	}
}
