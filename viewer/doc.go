// Package viewer serves an interactive profile viewer in a browser: the web
// UI of github.com/google/pprof/driver (flame graph, top, peek, graph), fed
// a profile held in memory.
//
//	v, err := viewer.New(pprofProfile, viewer.Config{})
//	if err != nil {
//		return err
//	}
//	http.Handle("/ui/", http.StripPrefix("/ui", v))
//	// http://HOST:PORT/ui/flamegraph opens the flame graph
//
// A Viewer is an http.Handler that answers at its own root: /flamegraph,
// /top, /peek, /graph, /download (the profile as .pb.gz) and / (a redirect
// to the flame graph). Links between the pages are relative,
// so it can be mounted under any prefix with http.StripPrefix; Serve
// mounts it under /ui/ for `clrdiag trace view`, and the monitor mounts one
// per collected profile under its dashboard.
//
// # Nothing on disk, nothing on the network
//
// pprof normally saves fetched profiles under $PPROF_TMPDIR or $HOME/pprof,
// keeps named view settings in the user's configuration directory, runs
// objdump/addr2line/nm on the binaries a profile names, looks for source
// files by the profile's file names, and may fetch symbols over HTTP. The
// Viewer turns all of that off: the profile is handed to the driver through
// its Fetch hook as a local, in-memory profile (so it is not saved), the
// settings routes (/saveconfig, /deleteconfig) are refused, the object tool,
// symbolizer and HTTP transport given to the driver refuse every request,
// and the profile's file names are dropped from the copy the driver sees
// (.NET frames name modules, not source files, and the source view would
// otherwise open files of this machine named after them; a module name
// comes from the traced process, which need not be trusted). A test checks
// that serving every page leaves $HOME, the configuration and temporary
// directories and the working directory empty.
//
// # Only the views that work for a .NET profile
//
// pprof's Source and Disassemble views read the profiled program's source
// files and binaries; a .NET profile has neither (methods compiled just in
// time in the traced process, no line numbers; a heap snapshot's types),
// so they could only show an error or an empty listing. Every page the
// Viewer serves hides their entries (the View menu, the flame graph's
// right-click menu), and the Config menu, whose saved settings this viewer
// refuses; /source and /disasm answer 404 with a page that says why and
// links to the peek, flame graph and top views of the same method. A test
// follows every link the pages offer and finds no error.
//
// # Graphviz
//
// The graph view needs Graphviz's dot. When dot is not on PATH the menus
// do not offer it, and the graph route answers with a page that says how
// to install it (the other views do not need it).
//
// # Concurrency
//
// A Viewer serves concurrent requests. pprof's driver keeps some state in
// package variables, so New calls are serialized inside this package; many
// Viewers may live side by side.
package viewer
