package counters

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/internal/termsafe"
)

// View keeps the latest value of every counter and renders them as a table
// grouped by provider, the way dotnet-counters monitor shows them.
//
// In terminal mode Render redraws in place: it moves the cursor home and
// overwrites each line, clearing only what is left of the previous frame,
// so the screen does not flicker. In plain mode (output is not a terminal)
// Render prints one line per counter that changed since the last render.
type View struct {
	Terminal bool
	// Title is shown above the table in terminal mode (e.g. the process).
	Title string
	// Status is shown under the title (e.g. "Running", "Stopped").
	Status string
	// Width of the counter name column (default 64).
	NameWidth int
	// ShowDeltas adds a "Last Delta" column (plain mode: a "delta" field)
	// with the change of each value since the one before it, i.e. over one
	// refresh interval, as dotnet-counters monitor --showDeltas does.
	ShowDeltas bool
	// FullNumbers prints every value in full; by default values of 1e8 and
	// more are abbreviated in scientific notation (dotnet-counters'
	// --abbreviateLargeNumbers).
	FullNumbers bool

	providers []string
	rows      map[string]map[string]*viewRow // provider -> row key -> row
	changed   []*viewRow
	buf       bytes.Buffer
}

type viewRow struct {
	provider string
	label    string
	tags     string
	value    float64
	// prev is the value before value, when hasPrev.
	prev    float64
	hasPrev bool
	time    time.Time
	dirty   bool
}

// delta is the change since the previous value, "" before there is one.
func (r *viewRow) delta(v *View) string {
	if !r.hasPrev {
		return ""
	}
	return v.format(r.value - r.prev)
}

// Update records a sample.
func (v *View) Update(s *Sample) {
	if v.rows == nil {
		v.rows = map[string]map[string]*viewRow{}
	}
	// Names, units and tags come from the target: escaped for the terminal.
	provider := termsafe.String(s.Provider)
	p := v.rows[provider]
	if p == nil {
		p = map[string]*viewRow{}
		v.rows[provider] = p
		v.providers = append(v.providers, provider)
		sort.Strings(v.providers)
	}
	label := termsafe.String(s.Label())
	_ = rows(s, func(tags string, val float64) error {
		tags = termsafe.String(tags)
		key := label + "\x00" + tags
		r := p[key]
		if r == nil {
			r = &viewRow{provider: provider, label: label, tags: tags, value: val}
			p[key] = r
		} else {
			r.prev, r.hasPrev = r.value, true
		}
		r.value = val
		r.time = s.Time
		if !r.dirty {
			r.dirty = true
			v.changed = append(v.changed, r)
		}
		return nil
	})
}

func (v *View) format(x float64) string { return humanValue(x, !v.FullNumbers) }

// humanValue formats like dotnet-counters: up to three decimals, and
// scientific notation from 1e8 on when abbreviate is set.
func humanValue(x float64, abbreviate bool) string {
	if abbreviate && (x >= 1e8 || x <= -1e8) {
		return strconv.FormatFloat(x, 'e', 4, 64)
	}
	s := strconv.FormatFloat(x, 'f', 3, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// Render writes the current state to w.
func (v *View) Render(w io.Writer) error {
	v.buf.Reset()
	if v.Terminal {
		v.renderTable(&v.buf)
	} else {
		for _, r := range v.changed {
			name := r.label
			if r.tags != "" {
				name += "[" + r.tags + "]"
			}
			fmt.Fprintf(&v.buf, "%s  %s  %s  %s", r.time.Format("15:04:05"), r.provider, name, v.format(r.value))
			if d := r.delta(v); v.ShowDeltas && d != "" {
				v.buf.WriteString("  delta " + d)
			}
			v.buf.WriteByte('\n')
		}
	}
	for _, r := range v.changed {
		r.dirty = false
	}
	v.changed = v.changed[:0]
	_, err := w.Write(v.buf.Bytes())
	return err
}

const (
	escHome      = "\x1b[H"
	escClearEOL  = "\x1b[K"
	escClearDown = "\x1b[J"
)

func (v *View) renderTable(b *bytes.Buffer) {
	width := v.NameWidth
	if width <= 0 {
		width = 64
	}
	line := func(s string) {
		b.WriteString(s)
		b.WriteString(escClearEOL)
		b.WriteByte('\n')
	}
	b.WriteString(escHome)
	if v.Title != "" {
		line(v.Title)
	}
	if v.Status != "" {
		line("    Status: " + v.Status)
	}
	line("")
	values := func(r *viewRow) string {
		if !v.ShowDeltas {
			return fmt.Sprintf(" %16s", v.format(r.value))
		}
		return strings.TrimRight(fmt.Sprintf(" %16s %16s", v.format(r.value), r.delta(v)), " ")
	}
	if v.ShowDeltas {
		line(fmt.Sprintf("%-*s %16s %16s", width, "Name", "Current Value", "Last Delta"))
	} else {
		line(fmt.Sprintf("%-*s %16s", width, "Name", "Current Value"))
	}
	if len(v.providers) == 0 {
		line("    Waiting for the first values...")
	}
	for _, p := range v.providers {
		line("[" + p + "]")
		rs := make([]*viewRow, 0, len(v.rows[p]))
		for _, r := range v.rows[p] {
			rs = append(rs, r)
		}
		sort.Slice(rs, func(i, j int) bool {
			if rs[i].label != rs[j].label {
				return rs[i].label < rs[j].label
			}
			return rs[i].tags < rs[j].tags
		})
		prev := ""
		for _, r := range rs {
			if r.tags == "" {
				line(fmt.Sprintf("    %-*s", width-4, clip(r.label, width-4)) + values(r))
				prev = r.label
				continue
			}
			if r.label != prev {
				line("    " + r.label)
				prev = r.label
			}
			line(fmt.Sprintf("        %-*s", width-8, clip(r.tags, width-8)) + values(r))
		}
	}
	b.WriteString(escClearDown)
}

func clip(s string, n int) string {
	if len(s) <= n || n < 4 {
		return s
	}
	return s[:n-3] + "..."
}
