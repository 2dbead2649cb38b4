package profile

import (
	"bytes"
	"io"
	"text/tabwriter"
	"unicode/utf8"
)

// writeAligned writes text as text/tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
// does: the tab-terminated cells of consecutive lines form columns, each as
// wide as its widest cell (in runes) plus 2, padded with spaces. It lays
// the text out itself (the tabwriter works byte by byte, most of a small
// report's cost), and leaves text with the tabwriter's other control
// characters ('\v', '\f', the escape 0xff) to the tabwriter.
func writeAligned(w io.Writer, text []byte) error {
	if bytes.IndexByte(text, '\v') >= 0 || bytes.IndexByte(text, '\f') >= 0 || bytes.IndexByte(text, tabwriter.Escape) >= 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if _, err := tw.Write(text); err != nil {
			return err
		}
		return tw.Flush()
	}
	tabs := bytes.Count(text, []byte{'\t'})
	if tabs == 0 {
		// One cell a line, no column: the tabwriter writes the text as is.
		_, err := w.Write(text)
		return err
	}
	lines := bytes.Count(text, []byte{'\n'}) + 1
	a := aligner{out: make([]byte, 0, len(text)+len(text)/2), cells: make([][]byte, 0, tabs+lines),
		lines: make([][2]int, 0, lines)}
	// The lines, each its cells: the tab-terminated ones, then the one the
	// newline ends; the text's last line (after its last newline) has its
	// tab-terminated cells and the rest if not empty, as in the tabwriter.
	for {
		end := bytes.IndexByte(text, '\n')
		line := text
		if end >= 0 {
			line, text = text[:end], text[end+1:]
		}
		lo := len(a.cells)
		for {
			tab := bytes.IndexByte(line, '\t')
			if tab < 0 {
				break
			}
			a.cells = append(a.cells, line[:tab])
			line = line[tab+1:]
		}
		if end >= 0 || len(line) > 0 {
			a.cells = append(a.cells, line)
		}
		a.lines = append(a.lines, [2]int{lo, len(a.cells)})
		if end < 0 {
			break
		}
	}
	a.format(0, len(a.lines))
	_, err := w.Write(a.out)
	return err
}

// aligner lays out cells as the tabwriter's format does.
type aligner struct {
	cells  [][]byte
	lines  [][2]int // cells[lo:hi] of each line
	widths []int    // of the columns of the block being laid out
	out    []byte
}

func (a *aligner) line(i int) [][]byte { return a.cells[a.lines[i][0]:a.lines[i][1]] }

// format lays out lines [line0, line1) whose first len(a.widths) columns
// have their widths: the lines with a cell in the next column form blocks,
// each laid out with that column's width.
func (a *aligner) format(line0, line1 int) {
	column := len(a.widths)
	for this := line0; this < line1; this++ {
		if column >= len(a.line(this))-1 {
			continue
		}
		a.writeLines(line0, this)
		line0 = this
		width := 0
		for ; this < line1; this++ {
			line := a.line(this)
			if column >= len(line)-1 {
				break
			}
			width = max(width, utf8.RuneCount(line[column])+2)
		}
		a.widths = append(a.widths, width)
		a.format(line0, this)
		a.widths = a.widths[:len(a.widths)-1]
		line0 = this
	}
	a.writeLines(line0, line1)
}

// writeLines writes lines [line0, line1), each cell in a column padded to
// its width, every line but the text's last ending in '\n'.
func (a *aligner) writeLines(line0, line1 int) {
	for i := line0; i < line1; i++ {
		for j, c := range a.line(i) {
			a.out = append(a.out, c...)
			if j < len(a.widths) {
				for n := a.widths[j] - utf8.RuneCount(c); n > 0; n-- {
					a.out = append(a.out, ' ')
				}
			}
		}
		if i+1 < len(a.lines) {
			a.out = append(a.out, '\n')
		}
	}
}
