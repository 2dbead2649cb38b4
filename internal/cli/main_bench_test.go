package cli

import (
	"io"
	"path/filepath"
	"testing"
)

// BenchmarkMain measures the fixed cost of one clrdiag invocation in
// process: building the command tree, parsing the command line and running
// a command whose own work is small. A whole process adds the runtime's
// start and the package inits (GODEBUG=inittrace=1).
func BenchmarkMain(b *testing.B) {
	hot := filepath.Join("..", "..", "testdata", "captures", "clrdiag", "hot-3.1.2-linux-x64.nettrace")
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"version", []string{"--version"}},
		{"events-limit-1", []string{"trace", "events", "--limit", "1", hot}},
		{"help", []string{"--help"}},
		{"stats", []string{"trace", "stats", hot}},
		{"report", []string{"trace", "report", hot}},
		{"convert-folded", []string{"trace", "convert", hot, "-f", "folded", "-o", "-"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if code := Main(bc.args, nil, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("clrdiag %v: exit %d", bc.args, code)
				}
			}
		})
	}
}
