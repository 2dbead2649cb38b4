package viewer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/google/pprof/profile"

	"github.com/clrdiag/clrdiag/viewer"
)

// A Viewer mounted under a prefix of another server, as the monitor mounts
// the profiles its dashboard collects.
func Example() {
	fn := &profile.Function{ID: 1, Name: "App.Program.Main"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "wall", Unit: "nanoseconds"}},
		Function:   []*profile.Function{fn},
		Location:   []*profile.Location{loc},
		Sample:     []*profile.Sample{{Location: []*profile.Location{loc}, Value: []int64{1e6}}},
	}
	v, err := viewer.New(p, viewer.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/profiles/1/", http.StripPrefix("/profiles/1", v))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/profiles/1/flamegraph", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output: 200 text/html
}
