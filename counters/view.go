package counters

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
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

	providers []string
	rows      map[string]map[string]*viewRow // provider -> row key -> row
	changed   []*viewRow
	buf       bytes.Buffer
}

type viewRow struct {
	provider string
	label    string
	tags     string
	value    string
	time     time.Time
	dirty    bool
}

// Update records a sample.
func (v *View) Update(s *Sample) {
	if v.rows == nil {
		v.rows = map[string]map[string]*viewRow{}
	}
	p := v.rows[s.Provider]
	if p == nil {
		p = map[string]*viewRow{}
		v.rows[s.Provider] = p
		v.providers = append(v.providers, s.Provider)
		sort.Strings(v.providers)
	}
	label := s.Label()
	_ = rows(s, func(tags string, val float64) error {
		key := label + "\x00" + tags
		r := p[key]
		if r == nil {
			r = &viewRow{provider: s.Provider, label: label, tags: tags}
			p[key] = r
		}
		r.value = humanValue(val)
		r.time = s.Time
		if !r.dirty {
			r.dirty = true
			v.changed = append(v.changed, r)
		}
		return nil
	})
}

// humanValue formats like dotnet-counters: up to three decimals, and
// scientific notation from 1e8 on.
func humanValue(x float64) string {
	if x >= 1e8 || x <= -1e8 {
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
			fmt.Fprintf(&v.buf, "%s  %s  %s  %s\n", r.time.Format("15:04:05"), r.provider, name, r.value)
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
	line(fmt.Sprintf("%-*s %16s", width, "Name", "Current Value"))
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
				line(fmt.Sprintf("    %-*s %16s", width-4, clip(r.label, width-4), r.value))
				prev = r.label
				continue
			}
			if r.label != prev {
				line("    " + r.label)
				prev = r.label
			}
			line(fmt.Sprintf("        %-*s %16s", width-8, clip(r.tags, width-8), r.value))
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
