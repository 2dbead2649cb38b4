package transport

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseNSpid(t *testing.T) {
	tests := []struct {
		name    string
		status  string
		want    []int
		wantErr bool
	}{
		{"host", "Name:\tdotnet\nTgid:\t42\nNSpid:\t42\nPPid:\t1\n", []int{42}, false},
		{"container", "Name:\tdotnet\nNSpid:\t4242\t7\n", []int{4242, 7}, false},
		{"nested", "NSpid:\t900 80 1\n", []int{900, 80, 1}, false},
		{"no trailing newline", "Pid:\t5\nNSpid:\t5", []int{5}, false},
		{"missing (old kernel)", "Name:\tx\nPid:\t5\n", nil, false},
		{"empty", "", nil, false},
		{"empty line", "NSpid:\n", nil, true},
		{"not a number", "NSpid:\t12 x\n", nil, true},
		{"negative", "NSpid:\t-3\n", nil, true},
		{"zero", "NSpid:\t0\n", nil, true},
		{"overflow", "NSpid:\t99999999999\n", nil, true},
		{"too deep", "NSpid:" + strings.Repeat(" 1", maxNSLevels+1) + "\n", nil, true},
		{"similar key", "NSpidX:\t1 2\nNSpid:\t3\n", []int{3}, false},
	}
	for _, tt := range tests {
		got, err := parseNSpid([]byte(tt.status))
		if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: parseNSpid = %v, %v; want %v, err %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestEnvironValue(t *testing.T) {
	env := []byte("HOME=/root\x00TMPDIRX=/no\x00TMPDIR=/var/tmp\x00TMPDIR=/second\x00EMPTY=\x00")
	for _, tt := range []struct {
		key, want string
		ok        bool
	}{
		{"TMPDIR", "/var/tmp", true},
		{"HOME", "/root", true},
		{"EMPTY", "", true},
		{"TMP", "", false},
		{"PATH", "", false},
	} {
		got, ok := environValue(env, tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("environValue(%s) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if v, ok := environValue(nil, "TMPDIR"); ok || v != "" {
		t.Errorf("empty environ (kernel thread): %q, %v", v, ok)
	}
}

func TestProcessName(t *testing.T) {
	for _, tt := range []struct {
		comm string
		args []string
		want string
	}{
		{"dotnet\n", []string{"dotnet", "app.dll"}, "dotnet"},
		{"dotnet\n", []string{"/usr/share/dotnet/dotnet", "exec", "x.dll"}, "dotnet"},
		{"MyLongServiceNa\n", []string{"/opt/app/MyLongServiceName", "--port"}, "MyLongServiceName"},
		{"MyLongServiceNa\n", []string{"/opt/app/Other"}, "MyLongServiceNa"},
		{"kthreadd\n", nil, "kthreadd"},
	} {
		if got := processName(tt.comm, tt.args); got != tt.want {
			t.Errorf("processName(%q, %q) = %q, want %q", tt.comm, tt.args, got, tt.want)
		}
	}
	if got := parseCmdline([]byte("dotnet\x00app.dll\x00--urls\x00http://x\x00")); !reflect.DeepEqual(got, []string{"dotnet", "app.dll", "--urls", "http://x"}) {
		t.Errorf("parseCmdline = %q", got)
	}
	if got := parseCmdline([]byte("\x00")); got != nil {
		t.Errorf("parseCmdline of a kernel thread = %q, want nil", got)
	}
}

func TestParseEndpointName(t *testing.T) {
	for _, tt := range []struct {
		name     string
		pid      int
		dsrouter bool
		ok       bool
	}{
		{"dotnet-diagnostic-1234-5678901-socket", 1234, false, true},
		{"dotnet-diagnostic-1234", 1234, false, true}, // Windows pipe
		{"dotnet-diagnostic-dsrouter-77-123-socket", 77, true, true},
		{"dotnet-diagnostic-dsrouter-77", 77, true, true},
		{"dotnet-diagnostic-1234-socket", 0, false, false},
		{"dotnet-diagnostic-12a4-1-socket", 0, false, false},
		{"dotnet-diagnostic--1-socket", 0, false, false},
		{"dotnet-diagnostic-0-1-socket", 0, false, false},
		{"dotnet-diagnostic-1-2-3-socket", 0, false, false},
		{"dotnet-diagnostic-1-x-socket", 0, false, false},
		{"dotnet-trace-1234-20260101_120000.socket", 0, false, false},
		{"clr-debug-pipe-1234-5-in", 0, false, false},
	} {
		pid, dsr, ok := parseEndpointName(tt.name)
		if pid != tt.pid || dsr != tt.dsrouter || ok != tt.ok {
			t.Errorf("parseEndpointName(%q) = %d, %v, %v; want %d, %v, %v", tt.name, pid, dsr, ok, tt.pid, tt.dsrouter, tt.ok)
		}
	}
}

func FuzzParseNSpid(f *testing.F) {
	f.Add([]byte("Name:\tdotnet\nNSpid:\t4242\t7\n"))
	f.Add([]byte("NSpid:\t1\n"))
	f.Add([]byte("NSpid:"))
	f.Fuzz(func(t *testing.T, status []byte) {
		pids, err := parseNSpid(status)
		if err != nil {
			if pids != nil {
				t.Fatalf("error %v with pids %v", err, pids)
			}
			return
		}
		if pids == nil {
			if bytes.Contains(status, []byte("\nNSpid:")) || bytes.HasPrefix(status, []byte("NSpid:")) {
				t.Fatalf("NSpid line present but no pids and no error: %q", status)
			}
			return
		}
		if len(pids) > maxNSLevels {
			t.Fatalf("%d levels accepted", len(pids))
		}
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("non-positive pid %d from %q", p, status)
			}
		}
		// Re-encoding the parsed line parses to the same pids.
		var b strings.Builder
		b.WriteString("NSpid:")
		for _, p := range pids {
			b.WriteString("\t" + strconv.Itoa(p))
		}
		again, err := parseNSpid([]byte(b.String()))
		if err != nil || !reflect.DeepEqual(again, pids) {
			t.Fatalf("re-parse of %q = %v, %v; want %v", b.String(), again, err, pids)
		}
	})
}

func FuzzEnvironValue(f *testing.F) {
	f.Add([]byte("TMPDIR=/tmp/x\x00HOME=/root\x00"), "TMPDIR")
	f.Add([]byte(""), "TMPDIR")
	f.Add([]byte("=\x00TMPDIR\x00TMPDIR="), "TMPDIR")
	f.Fuzz(func(t *testing.T, env []byte, key string) {
		v, ok := environValue(env, key)
		if !ok {
			if v != "" {
				t.Fatalf("not found but value %q", v)
			}
			return
		}
		if strings.ContainsRune(v, 0) {
			t.Fatalf("value %q contains NUL", v)
		}
		if !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+key+"="+v)) {
			t.Fatalf("value %q for %q is not an assignment in %q", v, key, env)
		}
	})
}

func FuzzParseEndpointName(f *testing.F) {
	f.Add("dotnet-diagnostic-1234-5678-socket")
	f.Add("dotnet-diagnostic-dsrouter-1")
	f.Fuzz(func(t *testing.T, name string) {
		pid, _, ok := parseEndpointName(name)
		if ok && (pid <= 0 || !strings.Contains(name, strconv.Itoa(pid))) {
			t.Fatalf("parseEndpointName(%q) = pid %d", name, pid)
		}
	})
}

func TestParseStatState(t *testing.T) {
	for _, tt := range []struct {
		stat string
		want byte
		ok   bool
	}{
		{"42 (dotnet) S 1 42 42 0 -1 4194560", 'S', true},
		{"42 (a) Z) (b) Z 1 2", 'Z', true},
		{"42 (we ird) R 1", 'R', true},
		{"42 (x)", 0, false},
		{"42 (x) ", 0, false},
		{"42 x S", 0, false},
		{"42 (x)S 1", 0, false},
		{"", 0, false},
	} {
		got, err := parseStatState([]byte(tt.stat))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseStatState(%q) = %q, %v; want %q, ok=%v", tt.stat, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseStatState(f *testing.F) {
	f.Add([]byte("42 (dotnet) S 1 42 42 0 -1"))
	f.Add([]byte("1 ()) Z"))
	f.Fuzz(func(t *testing.T, stat []byte) {
		st, err := parseStatState(stat)
		if err != nil {
			return
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != st {
			t.Fatalf("state %q is not the byte after the last ') ' in %q", st, stat)
		}
	})
}

func TestParseOwnershipFields(t *testing.T) {
	uids, err := parseStatusUIDs([]byte("Name:\tdotnet\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n"))
	if err != nil || uids != [4]uint32{1000, 1001, 1002, 1003} {
		t.Errorf("parseStatusUIDs = %v, %v", uids, err)
	}
	for _, bad := range []string{"", "Name:\tx\n", "Uid:\t1 2 3\n", "Uid:\t1 2 3 x\n", "Uid:\t1 2 3 99999999999\n"} {
		if _, err := parseStatusUIDs([]byte(bad)); err == nil {
			t.Errorf("parseStatusUIDs(%q) succeeded", bad)
		}
	}
	line := "42 (a) b) c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10\n"
	if st, err := parseStatStart([]byte(line)); err != nil || st != 123456 {
		t.Errorf("parseStatStart = %d, %v", st, err)
	}
	for _, bad := range []string{"", "42 x S 1", "42 (x) S 1 2 3", "42 (x) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 1\n"} {
		if _, err := parseStatStart([]byte(bad)); err == nil {
			t.Errorf("parseStatStart(%q) succeeded", bad)
		}
	}
	if bt, err := parseBootTime([]byte("cpu  1 2\nintr 5\nbtime 1795456337\nprocesses 9\n")); err != nil || bt != 1795456337 {
		t.Errorf("parseBootTime = %d, %v", bt, err)
	}
	for _, bad := range []string{"", "btime\n", "btime x\n", "btime -4\n", "xbtime 5\n"} {
		if _, err := parseBootTime([]byte(bad)); err == nil {
			t.Errorf("parseBootTime(%q) succeeded", bad)
		}
	}
	for name, want := range map[string]uint64{"dotnet-diagnostic-42-66246-socket": 66246, "dotnet-diagnostic-dsrouter-1-7-socket": 7} {
		if k, ok := socketKey(name); !ok || k != want {
			t.Errorf("socketKey(%s) = %d, %v", name, k, ok)
		}
	}
	for _, name := range []string{"dotnet-diagnostic-42", "dotnet-diagnostic-42-x-socket", "socket"} {
		if _, ok := socketKey(name); ok {
			t.Errorf("socketKey(%s) succeeded", name)
		}
	}
}

func FuzzParseStatusUIDs(f *testing.F) {
	f.Add([]byte("Uid:\t0\t0\t0\t0\n"))
	f.Add([]byte("Name:\tx\nUid:\t1 2 3 4"))
	f.Fuzz(func(t *testing.T, status []byte) {
		uids, err := parseStatusUIDs(status)
		if err != nil {
			return
		}
		again, err := parseStatusUIDs(fmt.Appendf(nil, "Uid:\t%d\t%d\t%d\t%d\n", uids[0], uids[1], uids[2], uids[3]))
		if err != nil || again != uids {
			t.Fatalf("re-parse of %v = %v, %v", uids, again, err)
		}
	})
}

func FuzzParseStatStart(f *testing.F) {
	f.Add([]byte("42 (dotnet) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000\n"))
	f.Add([]byte("1 ()) Z"))
	f.Fuzz(func(t *testing.T, stat []byte) {
		st, err := parseStatStart(stat)
		if err != nil {
			return
		}
		if !bytes.Contains(stat, []byte(strconv.FormatUint(st, 10))) {
			t.Fatalf("start %d is not in %q", st, stat)
		}
	})
}

func FuzzParseBootTime(f *testing.F) {
	f.Add([]byte("cpu 1\nbtime 1795456337\n"))
	f.Fuzz(func(t *testing.T, stat []byte) {
		bt, err := parseBootTime(stat)
		if err == nil && bt <= 0 {
			t.Fatalf("btime %d accepted from %q", bt, stat)
		}
	})
}

func FuzzListensOn(f *testing.F) {
	f.Add([]byte("Num RefCount Protocol Flags Type St Inode Path\n0: 00000002 00000000 00010000 0001 01 11807 /tmp/dotnet-diagnostic-1-2-socket\n"), "dotnet-diagnostic-1-2-socket")
	f.Add([]byte("0: 2 0 zz 1 1 1 /x\n"), "x")
	f.Fuzz(func(t *testing.T, table []byte, base string) {
		if listensOn(table, base) && !bytes.Contains(table, []byte(base)) {
			t.Fatalf("listening on %q, a name the table does not hold", base)
		}
	})
}
