package gcdump_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/clrdiag/clrdiag/gcdump"
	"github.com/clrdiag/clrdiag/gcdump/gcdumptest"
)

// A heap snapshot from the events of a heap session (Collect does the same
// with a live process), summarised per type, with what keeps a type alive.
func Example() {
	var trace bytes.Buffer
	if err := gcdumptest.Trace(&trace, gcdumptest.Leaky(3), gcdumptest.Options{}); err != nil {
		panic(err)
	}
	g, err := gcdump.FromTrace(&trace)
	if err != nil {
		panic(err)
	}
	r, err := gcdump.BuildReport(g, nil, gcdump.ReportConfig{Sort: gcdump.SortRetained})
	if err != nil {
		panic(err)
	}
	for _, t := range r.Types {
		fmt.Printf("%-42s %d objects %4d bytes, retaining %4d\n", t.Name, t.Count, t.Size, t.RetainedSize)
	}
	p, err := gcdump.FindPaths(context.Background(), g, "App.Item", 10)
	if err != nil {
		panic(err)
	}
	p.WriteText(os.Stdout)
	// Output:
	// System.Collections.Generic.List<App.Item>  1 objects   32 bytes, retaining  298
	// App.Item[]                                 1 objects   56 bytes, retaining  266
	// App.Item                                   4 objects  160 bytes, retaining  250
	// System.String                              4 objects  120 bytes, retaining  120
	// 4 objects of App.Item (160 bytes); shortest paths from the roots:
	//
	// 3 objects (120 bytes) held by static field s_items (holds System.Collections.Generic.List<App.Item>), 3 objects deep:
	//   [static vars]
	//   -> [static var System.Collections.Generic.List<App.Item>.s_items]
	//   -> System.Collections.Generic.List<App.Item> @0x1000
	//   -> App.Item[] @0x1100
	//   -> App.Item @0x100000
	//
	// 1 objects (40 bytes) held by a local variable or argument of a running method (stack root):
	//   [local vars]
	//   -> App.Item @0x2000
}

// Write a snapshot as a .gcdump file and read it back.
func ExampleWrite() {
	var trace, file bytes.Buffer
	if err := gcdumptest.Trace(&trace, gcdumptest.Leaky(2), gcdumptest.Options{}); err != nil {
		panic(err)
	}
	g, err := gcdump.FromTrace(&trace)
	if err != nil {
		panic(err)
	}
	if err := gcdump.Write(&file, g); err != nil {
		panic(err)
	}
	back, err := gcdump.Read(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		panic(err)
	}
	fmt.Println(back.NumNodes() == g.NumNodes(), back.TotalSize(), back.Info.CreationTool)
	// Output: true 290 clrdiag
}
