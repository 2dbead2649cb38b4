package eventpipe

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the plan's warnings ("warning: ..." lines) and the
// providers table dotnet-trace prints before a session (name, keywords,
// level and what enabled each provider), then a blank line.
func (p *Plan) WriteTable(w io.Writer) error {
	for _, warn := range p.Warnings {
		if _, err := fmt.Fprintf(w, "warning: %s\n", warn); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Provider Name\tKeywords\tLevel\tEnabled By")
	for _, c := range p.Providers {
		fmt.Fprintf(tw, "%s\t0x%016X\t%s(%d)\t%s\n", c.Name, c.Keywords, c.Level, c.Level, c.EnabledBy)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}
