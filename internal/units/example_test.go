package units_test

import (
	"fmt"

	"github.com/clrdiag/clrdiag/internal/units"
)

func Example() {
	fmt.Println(units.FormatBytes(256_000_000), units.FormatBytes(1<<20), units.FormatRate(250e6))
	n, _ := units.ParseBytes("256MiB")
	m, _ := units.ParseBytes("256MB")
	fmt.Println(n, m)
	// Output:
	// 256 MB 1.05 MB 250 MB/s
	// 268435456 256000000
}
