package eventpipe

import (
	"bytes"
	"errors"
	"testing"
)

func TestPlanWriteTable(t *testing.T) {
	p := &Plan{
		Warnings: []string{"--clrevents ignored"},
		Providers: []Composed{
			{Provider: Provider{Name: "Microsoft-Windows-DotNETRuntime", Keywords: 0x1, Level: LevelVerbose}, EnabledBy: "--profile"},
			{Provider: Provider{Name: "My", Keywords: 0xF00000000000000F, Level: LevelInformational}, EnabledBy: "--providers"},
		},
	}
	var b bytes.Buffer
	if err := p.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "warning: --clrevents ignored\n" +
		"Provider Name                    Keywords            Level             Enabled By\n" +
		"Microsoft-Windows-DotNETRuntime  0x0000000000000001  Verbose(5)        --profile\n" +
		"My                               0xF00000000000000F  Informational(4)  --providers\n" +
		"\n"
	if b.String() != want {
		t.Errorf("WriteTable wrote\n%s\nwant\n%s", b.String(), want)
	}
	if err := p.WriteTable(failWriter{}); err == nil {
		t.Error("WriteTable to a failing writer: no error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }
