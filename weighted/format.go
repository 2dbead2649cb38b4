package weighted

import (
	"fmt"
	"io"
	"strings"

	"github.com/clrdiag/clrdiag/internal/named"
)

// Format is an export format: everything `trace convert`, `trace collect
// --format` and the monitor need to offer it. Adding a format is adding an
// entry to Formats.
type Format struct {
	// Name is the --format value.
	Name string
	// Suffix is appended to the trace's name (without .nettrace) to name
	// the output file.
	Suffix string
	// Viewers says which tools open the output, for help texts.
	Viewers string
	// ContentType is the output's media type, for HTTP responses.
	ContentType string
	// Timeline is set when the format draws time and so needs Groups with
	// Runs (a profile built with profile.Config.Timeline).
	Timeline bool
	// TimeOnly is set when the format draws nothing but time (the Groups'
	// Runs): it has nothing to show for a measure without a time order
	// (profile.MeasureInfo.Timeline false).
	TimeOnly bool
	// Write writes a profile in the format.
	Write func(w io.Writer, wp *Profile) error
}

// Formats returns the export formats, the default (speedscope) first.
func Formats() []Format {
	return []Format{
		{Name: "speedscope", Suffix: ".speedscope.json", ContentType: "application/json", Timeline: true, Write: WriteSpeedscope,
			Viewers: "https://www.speedscope.app: all threads merged, then one profile per thread in time order"},
		{Name: "chromium", Suffix: ".chromium.json", ContentType: "application/json", Timeline: true, TimeOnly: true, Write: WriteChromium,
			Viewers: "Perfetto (https://ui.perfetto.dev) or Chrome DevTools' Performance panel: B/E events per thread"},
		{Name: "pprof", Suffix: ".pb.gz", ContentType: "application/octet-stream", Write: WritePprof,
			Viewers: "go tool pprof: gzipped protobuf, sample types samples, wall and cpu (alloc_space, delay... with --sample)"},
		{Name: "folded", Suffix: ".folded", ContentType: "text/plain; charset=utf-8", Write: WriteFolded,
			Viewers: "flamegraph.pl, inferno, speedscope: root;...;leaf value"},
	}
}

// FormatNames lists the formats' names, the default first.
func FormatNames() []string { return named.Names(Formats(), formatName) }

// LookupFormat returns the format named name (case-insensitive), or an
// error that lists the formats.
func LookupFormat(name string) (Format, error) {
	return named.Lookup(Formats(), formatName, name, "format")
}

func formatName(f Format) string { return f.Name }

// CheckMeasure returns an error when the format cannot show a measure: a
// format that draws only time and a measure without a time order (timed
// false). name and noun name the measure in the error (profile's
// MeasureInfo.Name and Noun).
func (f Format) CheckMeasure(name, noun string, timed bool) error {
	if f.TimeOnly && !timed {
		var can []string
		for _, o := range Formats() {
			if !o.TimeOnly {
				can = append(can, o.Name)
			}
		}
		return fmt.Errorf("the %s format draws time, and %s (%s) has no durations: use %s",
			f.Name, name, noun, strings.Join(can, ", "))
	}
	return nil
}
