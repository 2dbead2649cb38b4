package counters

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Exporter writes samples to a file format. Close must be called to finish
// the document (a JSON exporter closes its array there), also when
// collection is interrupted, so that the output stays valid. Rows is the
// number of rows (CSV lines, JSON events) written so far: a sample makes
// none (no value), one, or one per percentile (a histogram).
type Exporter interface {
	Write(s *Sample) error
	Close() error
	Rows() int
}

// rows turns a sample into the (tags, value) rows of the file formats:
// one row for plain counters (a rate per second for a rate, see
// Sample.Shown), one per quantile for histograms, as dotnet-counters does
// (tag Percentile=50 etc.). The tags are written "k=v,k=v".
func rows(s *Sample, emit func(tags string, value float64) error) error {
	return s.EachRow(func(tags []Tag, v float64) error { return emit(FormatTags(tags), v) })
}

// Time forms of the files, as dotnet-counters 10 writes them.
const (
	// localTimeLayout is .NET's DateTime.ToString() in the invariant
	// culture: dotnet-counters' CSV timestamps, in the local time zone.
	localTimeLayout = "01/02/2006 15:04:05"
	// jsonTimeLayout is the JSON file's StartTime and event timestamps:
	// ISO 8601 with seven fractional digits (.NET's "o" format) and the
	// zone offset. dotnet-counters writes the local time; clrdiag writes
	// the events in UTC ("Z"), the same instant on every machine.
	jsonTimeLayout = "2006-01-02T15:04:05.0000000Z07:00"
)

// CSVExporter writes dotnet-counters' CSV: a header
// "Timestamp,Provider,Counter Name,Counter Type,Mean/Increment" and a row
// per value; tags follow the counter name in [k=v;k=v]. Timestamps are in
// the local time zone, "MM/dd/yyyy HH:mm:ss", as dotnet-counters writes
// them (.NET's invariant culture).
type CSVExporter struct {
	// Location is the time zone of the timestamps; nil means time.Local.
	Location *time.Location

	w      *bufio.Writer
	header bool
	n      int
}

// NewCSVExporter returns a CSV exporter writing to w.
func NewCSVExporter(w io.Writer) *CSVExporter {
	return &CSVExporter{w: bufio.NewWriter(w)}
}

// Write adds the rows of s.
func (e *CSVExporter) Write(s *Sample) error {
	if !e.header {
		e.header = true
		if _, err := e.w.WriteString("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment\n"); err != nil {
			return err
		}
	}
	ts := s.Time.In(cmp.Or(e.Location, time.Local)).Format(localTimeLayout)
	err := rows(s, func(tags string, v float64) error {
		name := s.Label()
		if tags != "" {
			name += "[" + strings.ReplaceAll(tags, ",", ";") + "]"
		}
		e.w.WriteString(ts)
		e.w.WriteByte(',')
		e.w.WriteString(csvField(s.Provider))
		e.w.WriteByte(',')
		e.w.WriteString(csvField(name))
		e.w.WriteByte(',')
		e.w.WriteString(counterType(s.Kind))
		e.w.WriteByte(',')
		e.w.WriteString(formatValue(v))
		_, err := e.w.WriteString("\n")
		e.n++
		return err
	})
	if err != nil {
		return err
	}
	return e.w.Flush()
}

// Rows is the number of value rows written (the header not counted).
func (e *CSVExporter) Rows() int { return e.n }

// Close flushes the output; a file with no samples still gets its header.
func (e *CSVExporter) Close() error {
	if !e.header {
		e.header = true
		e.w.WriteString("Timestamp,Provider,Counter Name,Counter Type,Mean/Increment\n")
	}
	return e.w.Flush()
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

func counterType(k Kind) string {
	if k == KindRate {
		return "Rate"
	}
	return "Metric"
}

func formatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// JSONExporter writes dotnet-counters' JSON document:
//
//	{"TargetProcess": "dotnet", "StartTime": "2026-11-21T10:30:00.0000000+01:00", "Events": [
//	  {"timestamp": "2026-11-21T09:30:01.2345678Z", "provider": "...", "name": "...", "tags": "...",
//	   "counterType": "Metric", "meterTags": "...", "instrumentTags": "...", "value": 1.5}, ...]}
//
// TargetProcess is the process name (dotnet-counters writes .NET's
// Process.ProcessName: "dotnet" for an app run with "dotnet app.dll"), and
// StartTime the local time in ISO 8601 with its offset, as dotnet-counters
// 10 writes it. Event timestamps are ISO 8601 with seven fractional digits
// in UTC (dotnet-counters writes the local time with its offset: the same
// instant). meterTags and instrumentTags are the
// Sample's MeterTags and InstrumentTags as "k=v,k=v" (empty when the target
// did not announce any). Every event is flushed as it is written; Close
// writes the closing brackets.
type JSONExporter struct {
	// Location is the time zone of StartTime; nil means time.Local.
	Location *time.Location

	w      *bufio.Writer
	target string
	start  time.Time
	n      int
	opened bool
}

// NewJSONExporter returns a JSON exporter for the named target process.
func NewJSONExporter(w io.Writer, targetProcess string, start time.Time) *JSONExporter {
	return &JSONExporter{w: bufio.NewWriter(w), target: targetProcess, start: start}
}

func (e *JSONExporter) open() {
	if e.opened {
		return
	}
	e.opened = true
	tp, _ := json.Marshal(e.target)
	e.w.WriteString(`{"TargetProcess": `)
	e.w.Write(tp)
	e.w.WriteString(`, "StartTime": "`)
	e.w.WriteString(e.start.In(cmp.Or(e.Location, time.Local)).Format(jsonTimeLayout))
	e.w.WriteString(`", "Events": [`)
}

type jsonEvent struct {
	Timestamp   string  `json:"timestamp"`
	Provider    string  `json:"provider"`
	Name        string  `json:"name"`
	Tags        string  `json:"tags"`
	CounterType string  `json:"counterType"`
	MeterTags   string  `json:"meterTags"`
	InstTags    string  `json:"instrumentTags"`
	Value       float64 `json:"value"`
}

// Write adds the events of s.
func (e *JSONExporter) Write(s *Sample) error {
	e.open()
	err := rows(s, func(tags string, v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		b, err := json.Marshal(jsonEvent{
			Timestamp: s.Time.UTC().Format(jsonTimeLayout), Provider: s.Provider, Name: s.Label(),
			Tags: tags, CounterType: counterType(s.Kind),
			MeterTags: FormatTags(s.MeterTags), InstTags: FormatTags(s.InstrumentTags), Value: v,
		})
		if err != nil {
			return err
		}
		if e.n > 0 {
			e.w.WriteByte(',')
		}
		e.n++
		e.w.WriteString("\n  ")
		_, err = e.w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	return e.w.Flush()
}

// Rows is the number of events written.
func (e *JSONExporter) Rows() int { return e.n }

// Close ends the document so that it parses.
func (e *JSONExporter) Close() error {
	e.open()
	e.w.WriteString("\n]}\n")
	return e.w.Flush()
}
