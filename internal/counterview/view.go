package counterview

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/counters"
	"github.com/clrdiag/clrdiag/internal/termsafe"
)

// View keeps the latest value of every counter and renders them as a table
// grouped by provider, the way dotnet-counters monitor shows them. Rates are
// shown per second (counters.Sample.Shown); a counter with tags gets a row of its
// tag names and a row per tag combination with the tag values in columns,
// as dotnet-counters 8+ shows them (route, status code and percentile stay
// readable in a narrow terminal).
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
	// Width of the counter name column (default 64): names, and the tag
	// columns of a counter with tags, are cut to fit it.
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
	counters  map[string]map[string]*viewCounter // provider -> counter name -> counter
	changed   []*viewRow
	buf       bytes.Buffer
}

// viewCounter is one counter of a provider and its rows (one per tag
// combination; the untagged row has no tags).
type viewCounter struct {
	label string
	rows  map[string]*viewRow // by tags as "k=v,k=v"
}

type viewRow struct {
	provider string
	label    string
	tags     []counters.Tag
	tagText  string
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
func (v *View) Update(s *counters.Sample) {
	if v.counters == nil {
		v.counters = map[string]map[string]*viewCounter{}
	}
	// Names, units and tags come from the target: escaped for the terminal.
	provider := termsafe.String(s.Provider)
	p := v.counters[provider]
	if p == nil {
		p = map[string]*viewCounter{}
		v.counters[provider] = p
		v.providers = append(v.providers, provider)
		sort.Strings(v.providers)
	}
	label := termsafe.String(s.Label())
	c := p[s.Name]
	if c == nil {
		c = &viewCounter{rows: map[string]*viewRow{}}
		p[s.Name] = c
	}
	c.label = label
	_ = s.EachRow(func(tags []counters.Tag, val float64) error {
		safe := make([]counters.Tag, len(tags))
		for i, t := range tags {
			safe[i] = counters.Tag{Key: termsafe.String(t.Key), Value: termsafe.String(t.Value)}
		}
		key := counters.FormatTags(safe)
		r := c.rows[key]
		if r == nil {
			r = &viewRow{provider: provider, tags: safe, tagText: key, value: val}
			c.rows[key] = r
		} else {
			r.prev, r.hasPrev = r.value, true
		}
		r.label = label
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
			if r.tagText != "" {
				name += "[" + r.tagText + "]"
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
		cs := make([]*viewCounter, 0, len(v.counters[p]))
		for _, c := range v.counters[p] {
			cs = append(cs, c)
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].label < cs[j].label })
		for _, c := range cs {
			if r := c.rows[""]; r != nil && len(c.rows) == 1 {
				line(fmt.Sprintf("    %-*s", width-4, clip(c.label, width-4)) + values(r))
				continue
			}
			line("    " + clip(c.label, width-4))
			rs := make([]*viewRow, 0, len(c.rows))
			for _, r := range c.rows {
				rs = append(rs, r)
			}
			sort.Slice(rs, func(i, j int) bool { return rs[i].tagText < rs[j].tagText })
			header, cells := tagColumns(rs, width-8)
			line("        " + header)
			for i, r := range rs {
				line(fmt.Sprintf("        %-*s", width-8, cells[i]) + values(r))
			}
		}
	}
	b.WriteString(escClearDown)
}

// tagColumns lays the tags of a counter's rows out in columns, one per tag
// name (in the order they first appear), each as wide as its widest text.
// Columns that do not fit in width are narrowed: first the tag names wider
// than their values (cut from the left, keeping the informative end:
// "...status_code"), then the widest values, down to 5 characters. It
// returns the header (the tag names) and each row's cells; a row without a
// tag shows "<no tags>".
func tagColumns(rs []*viewRow, width int) (header string, cells []string) {
	var keys []string
	col := map[string]int{}
	for _, r := range rs {
		for _, t := range r.tags {
			if _, ok := col[t.Key]; !ok {
				col[t.Key] = len(keys)
				keys = append(keys, t.Key)
			}
		}
	}
	valw := make([]int, len(keys)) // widest value of each column
	vals := make([][]string, len(rs))
	for i, r := range rs {
		vals[i] = make([]string, len(keys))
		for _, t := range r.tags {
			j := col[t.Key]
			vals[i][j] = t.Value
			valw[j] = max(valw[j], len(t.Value))
		}
	}
	w := make([]int, len(keys))
	total := 0
	for i, k := range keys {
		w[i] = max(len(k), valw[i])
		total += w[i] + 1
	}
	const narrowest = 5
	for total > width {
		pick := -1
		for i := range w { // a name wider than its values, the most first
			if w[i] > max(valw[i], narrowest) && (pick < 0 || w[i]-valw[i] > w[pick]-valw[pick]) {
				pick = i
			}
		}
		if pick < 0 {
			for i := range w { // the widest
				if w[i] > narrowest && (pick < 0 || w[i] > w[pick]) {
					pick = i
				}
			}
		}
		if pick < 0 {
			break
		}
		w[pick]--
		total--
	}
	var b strings.Builder
	for i, k := range keys {
		fmt.Fprintf(&b, "%-*s ", w[i], clipLeft(k, w[i]))
	}
	header = strings.TrimRight(clip(b.String(), width), " ")
	cells = make([]string, len(rs))
	for i := range rs {
		if len(rs[i].tags) == 0 {
			cells[i] = "<no tags>"
			continue
		}
		b.Reset()
		for j, v := range vals[i] {
			fmt.Fprintf(&b, "%-*s ", w[j], clip(v, w[j]))
		}
		cells[i] = strings.TrimRight(clip(b.String(), width), " ")
	}
	return header, cells
}

// clipLeft cuts s to n characters keeping its end.
func clipLeft(s string, n int) string {
	if len(s) <= n || n < 4 {
		return s
	}
	return "..." + s[len(s)-(n-3):]
}

func clip(s string, n int) string {
	if len(s) <= n || n < 4 {
		return s
	}
	return s[:n-3] + "..."
}
