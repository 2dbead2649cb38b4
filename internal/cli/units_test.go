package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/internal/testcapture"
	"github.com/clrdiag/clrdiag/internal/units"
)

// sizeToken matches a size with a unit prefix as a person reads it:
// "982 MB", "1.85 GB", "110 kB", and the forms the CLI must not print any
// more ("107.6KB", "936.1MB": 1024-based values under SI labels).
var sizeToken = regexp.MustCompile(`(\d+(?:\.\d+)?) ?([kKMGTP]i?B)\b`)

// checkSI fails for every size in text that is not in the one convention
// (issue 26): SI prefixes written as units.FormatBytes writes them. An IEC
// prefix (KiB, MiB) is allowed only in the phrases of allowIEC, the values
// the runtime counts in powers of 1024. It returns the SI sizes found.
func checkSI(t *testing.T, what, text string, allowIEC ...string) []string {
	t.Helper()
	for _, phrase := range allowIEC {
		text = strings.ReplaceAll(text, phrase, "")
	}
	var found []string
	for _, m := range sizeToken.FindAllStringSubmatch(text, -1) {
		tok := m[0]
		if strings.Contains(m[2], "i") || m[2][0] == 'K' {
			t.Errorf("%s: %q is not an SI size (1024-based label)", what, tok)
			continue
		}
		n, err := units.ParseBytes(tok)
		if err != nil {
			t.Errorf("%s: %q: %v", what, tok, err)
			continue
		}
		// "500MB" without a space is flag syntax (help text); a value the
		// CLI reports has the formatter's one spelling.
		if canon := units.FormatBytes(n); strings.Contains(tok, " ") && canon != tok {
			t.Errorf("%s: %q is not written as the shared formatter writes it (%q)", what, tok, canon)
		}
		found = append(found, tok)
	}
	return found
}

// near reports whether the size s a person reads stands for n bytes, within
// the rounding of three significant digits (0.5%). A 1024-based value under
// an SI label is 4.9% (MB) or 7.4% (GB) off.
func near(t *testing.T, s string, n int64) bool {
	t.Helper()
	v, err := units.ParseBytes(s)
	if err != nil {
		t.Errorf("%q: %v", s, err)
		return false
	}
	return math.Abs(float64(v-n)) <= 0.005*float64(n)+0.5
}

// TestSIUnitsTraceReport: trace report's allocated bytes on a real capture
// (.NET Core 3.0, 35,458 GCAllocationTick events) are SI, and each
// method's figure is its byte count from the JSON report (the second
// source) to three significant digits.
func TestSIUnitsTraceReport(t *testing.T) {
	in := filepath.Join(t.TempDir(), "objver4.nettrace")
	if err := os.WriteFile(in, testcapture.Load(t, "perfview/eventpipe-dotnetcore3.0-win-x64-objver4.nettrace.zip"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, text, stderr := run(t, "trace", "report", in, "--sample", "alloc", "--top", "15")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, js, stderr := run(t, "trace", "report", in, "--sample", "alloc", "--top", "15", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var rep struct {
		Methods []struct {
			Method    string `json:"method"`
			Exclusive int64  `json:"exclusive_value"`
			Inclusive int64  `json:"inclusive_value"`
		} `json:"methods"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Methods) < 10 {
		t.Fatalf("%d methods in the JSON report", len(rep.Methods))
	}
	found := checkSI(t, "trace report", text, "~100 KiB")
	if len(found) < 2*len(rep.Methods)-5 { // a method with 0 bytes prints "0 B"
		t.Errorf("only %d sizes in the report for %d methods:\n%s", len(found), len(rep.Methods), text)
	}
	row := regexp.MustCompile(`^\s+(\S+ [kMGT]?B)\s+[\d.]+\s+(\S+ [kMGT]?B)\s+[\d.]+\s+(\S.*)$`)
	rows := map[string][2]string{}
	for _, line := range strings.Split(text, "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			rows[m[3]] = [2]string{m[1], m[2]}
		}
	}
	for _, m := range rep.Methods {
		r, ok := rows[m.Method]
		if !ok {
			t.Errorf("method %s is not in the text report:\n%s", m.Method, text)
			continue
		}
		if !near(t, r[0], m.Exclusive) || !near(t, r[1], m.Inclusive) {
			t.Errorf("%s: the text says %s / %s, the JSON %d / %d bytes", m.Method, r[0], r[1], m.Exclusive, m.Inclusive)
		}
	}
}

// TestSIUnitsHelp: the size flags' help says which units they read, and
// --buffersize, which the runtime counts in 2^20 bytes, says MiB.
func TestSIUnitsHelp(t *testing.T) {
	_, help, _ := run(t, "trace", "collect", "--help")
	for _, want := range []string{"circular buffer in MiB", "1MB = 10^6 bytes", `(default "256MB")`} {
		if !strings.Contains(help, want) {
			t.Errorf("trace collect --help lacks %q", want)
		}
	}
	checkSI(t, "trace collect --help", help, "in MiB", "MiB, GiB", "256MiB", "100 KiB")
}
