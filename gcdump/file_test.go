package gcdump

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The baseline XML as PerfView writes it.
type xmlDump struct {
	TimeCollected string `xml:"TimeCollected"`
	MachineName   string `xml:"MachineName"`
	ProcessName   string `xml:"ProcessName"`
	WorkingSet    int64  `xml:"TotalProcessWorkingSet"`
	CollectionLog string `xml:"CollectionLog"`
	Graph         struct {
		NumNodes  int    `xml:"NumNodes,attr"`
		NumTypes  int    `xml:"NumTypes,attr"`
		TotalSize uint64 `xml:"TotalSize,attr"`
		RootIndex int    `xml:"RootIndex"`
		Types     []struct {
			Index  int    `xml:"Index,attr"`
			Name   string `xml:"Name,attr"`
			Module string `xml:"Module,attr"`
		} `xml:"NodeTypes>NodeType"`
		Nodes []struct {
			Index       int    `xml:"Index,attr"`
			TypeIndex   int    `xml:"TypeIndex,attr"`
			Size        uint64 `xml:"Size,attr"`
			NumChildren int    `xml:"NumChildren,attr"`
			Address     string `xml:"Address,attr"`
			Children    string `xml:",chardata"`
		} `xml:"Nodes>Node"`
	} `xml:"MemoryGraph"`
}

// TestReadPerfViewFile reads a .gcdump that PerfView wrote and compares
// every node with PerfView's own XML rendering of the file.
func TestReadPerfViewFile(t *testing.T) {
	data := gunzip(t, filepath.Join("testdata", "perfview", "test1.gcdump.gz"))
	var want xmlDump
	if err := xml.Unmarshal(gunzip(t, filepath.Join("testdata", "perfview", "test1_baseline.gcdump.xml.gz")), &want); err != nil {
		t.Fatal(err)
	}
	g, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	wg := want.Graph
	if g.NumNodes() != wg.NumNodes || len(g.Types) != wg.NumTypes || g.TotalSize() != wg.TotalSize || int(g.Root) != wg.RootIndex {
		t.Fatalf("nodes %d types %d total %d root %d; PerfView: %d %d %d %d", g.NumNodes(), len(g.Types), g.TotalSize(), g.Root,
			wg.NumNodes, wg.NumTypes, wg.TotalSize, wg.RootIndex)
	}
	for _, wt := range wg.Types {
		if got := g.Types[wt.Index]; got.Name != wt.Name || got.Module != wt.Module {
			t.Fatalf("type %d: %+v, PerfView %+v", wt.Index, got, wt)
		}
	}
	if len(wg.Nodes) != wg.NumNodes {
		t.Fatalf("baseline lists %d nodes of %d", len(wg.Nodes), wg.NumNodes)
	}
	edges := 0
	for _, wn := range wg.Nodes {
		n := NodeID(wn.Index)
		addr, _ := strconv.ParseUint(strings.TrimPrefix(wn.Address, "0x"), 16, 64)
		if g.TypeOf(n) != wn.TypeIndex || g.Size(n) != wn.Size || len(g.Refs(n)) != wn.NumChildren || g.Address(n) != addr {
			t.Fatalf("node %d: type %d size %d refs %d addr %#x; PerfView %+v", n, g.TypeOf(n), g.Size(n), len(g.Refs(n)), g.Address(n), wn)
		}
		var refs []NodeID
		for _, f := range strings.Fields(wn.Children) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("node %d children %q", n, wn.Children)
			}
			refs = append(refs, NodeID(v))
		}
		if len(refs) > 0 || len(g.Refs(n)) > 0 {
			if !reflect.DeepEqual(refs, g.Refs(n)) {
				t.Fatalf("node %d refs %v, PerfView %v", n, g.Refs(n), refs)
			}
		}
		edges += len(refs)
	}
	if edges == 0 {
		t.Fatal("no references compared")
	}
	if g.Info.MachineName != want.MachineName || g.Info.ProcessName != want.ProcessName ||
		g.Info.TotalProcessWorkingSet != want.WorkingSet {
		t.Errorf("info %+v, PerfView machine %q process %q working set %d", g.Info, want.MachineName, want.ProcessName, want.WorkingSet)
	}
	if !strings.Contains(want.CollectionLog, "Actual number of objects dumped") ||
		strings.ReplaceAll(g.Info.CollectionLog, "\r", "") != strings.ReplaceAll(want.CollectionLog, "\r", "") {
		t.Errorf("collection log %q, PerfView %q", g.Info.CollectionLog, want.CollectionLog)
	}
	wantTime, err := time.Parse("1/2/2006 3:04:05 PM", want.TimeCollected)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Info.Time.Truncate(time.Second).Equal(wantTime) {
		t.Errorf("time %v, PerfView %v", g.Info.Time, wantTime)
	}
	if g.Is64Bit {
		t.Error("the dump is of a 32-bit process (its log says so)")
	}
}

// TestRoundTripPerfViewFile writes what was read from PerfView's file and
// reads it back: the graph must be the same.
func TestRoundTripPerfViewFile(t *testing.T) {
	data := gunzip(t, filepath.Join("testdata", "perfview", "test1.gcdump.gz"))
	g, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	g.Info.CreationTool = "test"
	var buf bytes.Buffer
	if err := Write(&buf, g); err != nil {
		t.Fatal(err)
	}
	g2, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	assertSameGraph(t, g, g2)
}

func assertSameGraph(t *testing.T, a, b *Graph) {
	t.Helper()
	if !reflect.DeepEqual(a.Types, b.Types) {
		t.Fatalf("types differ: %d vs %d", len(a.Types), len(b.Types))
	}
	if a.Root != b.Root || a.Is64Bit != b.Is64Bit || !reflect.DeepEqual(a.Info, b.Info) {
		t.Fatalf("header differs: %v %v %+v / %v %v %+v", a.Root, a.Is64Bit, a.Info, b.Root, b.Is64Bit, b.Info)
	}
	for _, f := range []struct {
		name string
		x, y any
	}{{"types", a.typ, b.typ}, {"sizes", a.size, b.size}, {"addresses", a.addr, b.addr}, {"offsets", a.off, b.off}, {"edges", a.edges, b.edges}} {
		if !reflect.DeepEqual(f.x, f.y) {
			t.Fatalf("%s differ", f.name)
		}
	}
}

func TestReadErrors(t *testing.T) {
	data := gunzip(t, filepath.Join("testdata", "perfview", "test1.gcdump.gz"))
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrNotGCDump},
		{"nettrace", append([]byte("Nettrace\x14\x00\x00\x00"), fsSignature...), ErrNotGCDump},
		{"cut in the header", data[:40], ErrTruncated},
		{"cut in the types", data[:2000], ErrTruncated},
		{"cut in the records", data[:len(data)/2], ErrTruncated},
		{"cut before the trailer", data[:len(data)-12], ErrTruncated},
		{"trailing garbage", append(append([]byte{}, data...), 0), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.in), int64(len(tc.in)))
			if err == nil {
				t.Fatal("no error")
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%T %v is not a *FormatError", err, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("%v does not wrap %v", err, tc.want)
			}
		})
	}
}

// TestReadDotnetGCDumpFile reads a .gcdump that dotnet-gcdump wrote (a
// .NET 9 application on Windows) and compares the counts and sizes of its
// top types with those TraceEvent's reader gives for the same file; then
// writes it and reads it back.
func TestReadDotnetGCDumpFile(t *testing.T) {
	dir := filepath.Join("testdata", "gcdump-analyze")
	data := gunzip(t, filepath.Join(dir, "test1.gcdump.gz"))
	g, err := Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if g.Info.CreationTool != "dotnet-gcdump" || !g.Is64Bit || g.TypeName(g.Root) != "[.NET Roots]" {
		t.Errorf("info %+v, 64-bit %v, root %q", g.Info, g.Is64Bit, g.TypeName(g.Root))
	}
	// Per type name, over every node but the root, as the other tool
	// counts.
	type cs struct{ count, size int64 }
	byName := map[string]cs{}
	for v := range g.NumNodes() {
		if NodeID(v) == g.Root {
			continue
		}
		x := byName[g.TypeName(NodeID(v))]
		x.count++
		x.size += int64(g.Size(NodeID(v)))
		byName[g.TypeName(NodeID(v))] = x
	}
	rows := 0
	for _, f := range []string{"EndToEnd_Markdown_BySize_Snapshot_markdown-by-size.txt", "EndToEnd_Markdown_ByCount_Snapshot_markdown-by-count.txt",
		"EndToEnd_Markdown_ByName_Snapshot_markdown-by-name.txt"} {
		text, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(text), "\n")[2:] {
			cells := strings.Split(line, "|")
			if len(cells) != 4 {
				continue
			}
			num := func(s string) int64 {
				n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", f, line)
				}
				return n
			}
			name, want := strings.TrimSpace(cells[0]), cs{num(cells[1]), num(cells[2])}
			if got := byName[name]; got != want {
				t.Errorf("%s: %s count/size %v, TraceEvent %v", f, name, got, want)
			}
			rows++
		}
	}
	if rows != 17 {
		t.Fatalf("compared %d rows", rows)
	}
	var buf bytes.Buffer
	if err := Write(&buf, g); err != nil {
		t.Fatal(err)
	}
	g2, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	g.Info.CreationTool = "dotnet-gcdump" // Write kept it
	assertSameGraph(t, g, g2)
	// The analyses run on it.
	if _, err := FindPaths(context.Background(), g, "MauiApp3.LeakyPage", 5); err != nil {
		t.Error(err)
	}
}
