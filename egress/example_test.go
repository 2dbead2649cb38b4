package egress_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/clrdiag/clrdiag/egress"
)

// A dump written by the runtime is shipped to a directory; with an S3
// provider (egress.NewS3) the same Put uploads it, in parts when it is
// large, and a failure says where the dump is still kept.
func Example() {
	work, _ := os.MkdirTemp("", "egress-example")
	defer os.RemoveAll(work)
	dump := filepath.Join(work, "dump_4242.dmp")
	_ = os.WriteFile(dump, []byte("MDMP..."), 0o600)

	var p egress.Provider
	p, err := egress.NewFileSystem(egress.FileSystemConfig{Name: "archive", Directory: filepath.Join(work, "archive")})
	if err != nil {
		log.Fatal(err)
	}
	a, f, err := egress.File(dump, "", "application/octet-stream")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	res, err := p.Put(context.Background(), a)
	if err != nil {
		log.Fatal(err) // an *egress.Error: "...; the artifact is kept at .../dump_4242.dmp"
	}
	rel, _ := filepath.Rel(work, res.Location)
	fmt.Println(res.Provider, rel, res.Size)
	// Output: archive archive/dump_4242.dmp 7
}
