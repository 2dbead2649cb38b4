// Command clrdiag diagnoses running .NET processes over the runtime's
// Diagnostic IPC protocol, with no .NET installed on the diagnosing side.
package main

import (
	"os"

	"github.com/clrdiag/clrdiag/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
