package profilertest_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/clrdiag/clrdiag/internal/profilertest"
)

func TestParseLog(t *testing.T) {
	log := "load pid=42\n" +
		"get-class-object hr=0x80040111 clsid-mismatch\n" +
		"initialize-for-attach len=3 mode=stay data=000aff\n" +
		"initialize-for-attach len=0 mode=stay data=\n" +
		"unl" // still being written
	evs, err := profilertest.ParseLog([]byte(log))
	if err != nil {
		t.Fatal(err)
	}
	if got := profilertest.Names(evs); len(got) != 4 || got[0] != "load" || got[3] != "initialize-for-attach" {
		t.Fatalf("names %v", got)
	}
	if evs[0].Fields["pid"] != "42" {
		t.Fatalf("pid field %q", evs[0].Fields["pid"])
	}
	hr, err := evs[1].HR()
	if err != nil || hr != 0x80040111 {
		t.Fatalf("HR() = %#x, %v", hr, err)
	}
	if len(evs[1].Flags) != 1 || evs[1].Flags[0] != "clsid-mismatch" {
		t.Fatalf("flags %v", evs[1].Flags)
	}
	d, err := evs[2].ClientData()
	if err != nil || !bytes.Equal(d, []byte{0, 10, 255}) {
		t.Fatalf("ClientData() = % x, %v", d, err)
	}
	d, err = evs[3].ClientData()
	if err != nil || len(d) != 0 {
		t.Fatalf("empty ClientData() = % x, %v", d, err)
	}
	if profilertest.Count(evs, "initialize-for-attach") != 2 {
		t.Fatal("Count")
	}
	if last, ok := profilertest.Last(evs, "initialize-for-attach"); !ok || last.Fields["len"] != "0" {
		t.Fatalf("Last = %+v", last)
	}
}

func TestParseLogErrors(t *testing.T) {
	if _, err := profilertest.ParseLog([]byte("load\n\n")); !errors.Is(err, profilertest.ErrBadLog) {
		t.Fatalf("empty line: %v", err)
	}
	bad := []string{
		"initialize-for-attach len=2 mode=stay data=00\n", // length mismatch
		"initialize-for-attach len=1 mode=stay data=zz\n", // not hex
		"initialize-for-attach len=x mode=stay data=00\n", // bad length
		"initialize-for-attach len=1 mode=stay\n",         // no data
		"attach-complete len=1 mode=stay data=00\n",       // wrong event
	}
	for _, line := range bad {
		evs, err := profilertest.ParseLog([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := evs[0].ClientData(); !errors.Is(err, profilertest.ErrBadLog) {
			t.Errorf("%q: ClientData error %v, want ErrBadLog", line, err)
		}
	}
	evs, _ := profilertest.ParseLog([]byte("request-detach hr=nope\nunload\n"))
	for _, ev := range evs {
		if _, err := ev.HR(); !errors.Is(err, profilertest.ErrBadLog) {
			t.Errorf("%q: HR error %v, want ErrBadLog", ev.Line, err)
		}
	}
}

func TestGUIDBytes(t *testing.T) {
	// IID_IClassFactory, whose Windows layout is well known.
	g, err := profilertest.GUIDBytes("{00000001-0000-0000-C000-000000000046}")
	if err != nil {
		t.Fatal(err)
	}
	want := [16]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46}
	if g != want {
		t.Fatalf("got % x, want % x", g, want)
	}
	g, err = profilertest.GUIDBytes("4fd2ed52-7731-4b8d-9469-03d2cc3086c5")
	if err != nil {
		t.Fatal(err)
	}
	want = [16]byte{0x52, 0xed, 0xd2, 0x4f, 0x31, 0x77, 0x8d, 0x4b, 0x94, 0x69, 0x03, 0xd2, 0xcc, 0x30, 0x86, 0xc5}
	if g != want {
		t.Fatalf("got % x, want % x", g, want)
	}
	for _, bad := range []string{"", "4fd2ed52", "4fd2ed52-7731-4b8d-9469-03d2cc3086c", "4fd2ed52-7731-4b8d-9469-03d2cc3086cg", "4fd2ed5277314b8d946903d2cc3086c5"} {
		if _, err := profilertest.GUIDBytes(bad); err == nil {
			t.Errorf("GUIDBytes(%q) accepted", bad)
		}
	}
}
