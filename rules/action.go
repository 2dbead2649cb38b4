package rules

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clrdiag/clrdiag/diag"
	"github.com/clrdiag/clrdiag/ipc"
)

// ProcessInfo describes a process for filters, logs and artifact names.
type ProcessInfo struct {
	PID         int    `json:"pid"`
	Name        string `json:"name,omitempty"`
	CommandLine string `json:"commandLine,omitempty"`
	// RuntimeVersion is the runtime's ClrProductVersion ("" when the
	// runtime does not report it: .NET Core 3.1).
	RuntimeVersion string `json:"runtimeVersion,omitempty"`
}

// Target is what actions need from a process's diagnostic server;
// *diag.Client implements it.
type Target interface {
	StartTracing(ctx context.Context, req *ipc.CollectTracingRequest) (uint64, net.Conn, error)
	StopTracing(ctx context.Context, sessionID uint64) error
	ProcessInfo(ctx context.Context) (*ipc.ProcessInfo, error)
	WriteDump(ctx context.Context, req diag.DumpRequest) error
	Environment(ctx context.Context) ([]string, error)
	SetEnvironmentVariable(ctx context.Context, name, value string) error
	AttachProfiler(ctx context.Context, req diag.AttachProfilerRequest) error
}

var _ Target = (*diag.Client)(nil)

// Artifact is a file an action made, handed to Egress.
type Artifact struct {
	// Path is the local file.
	Path string
	// Name is the file name it should have where it is stored.
	Name string
	// Kind says what it is: trace, dump, gcdump, stacks, logs, metrics, exceptions.
	Kind        string
	ContentType string
	PID         int
	Rule        string
	Action      string
	Time        time.Time
}

// Egress stores artifacts. The egress package's providers satisfy it; a
// nil Egress keeps every artifact where the action wrote it (the engine's
// artifact directory).
type Egress interface {
	// Egress stores the artifact with the named provider and returns
	// where it now is (a path or URL), the action's EgressPath output.
	// On failure the local file must be left in place.
	Egress(ctx context.Context, provider string, a Artifact) (string, error)
}

// Run is what an action gets when it runs: the process, where to put
// files, and the outputs of the actions before it.
type Run struct {
	Process ProcessInfo
	Target  Target
	Rule    string
	Action  *ActionSpec
	// Dir is the artifact directory: actions write their files there
	// (the runtime writes dumps there itself, so it must be a path the
	// target can write).
	Dir    string
	Logger *slog.Logger
	// Now is the time of the run (for file names).
	Now time.Time

	outputs  map[string]map[string]string // by lower-case action name, then output
	store    func(ctx context.Context, a Artifact) (string, error)
	artifact *Artifact
}

// Output returns an earlier action's output ("" when absent).
func (r *Run) Output(action, output string) string {
	return r.outputs[strings.ToLower(action)][strings.ToLower(output)]
}

// Expand fills the $(Actions.NAME.OUTPUT) references of t.
func (r *Run) Expand(t Template) string { return t.Expand(r.Output) }

// Store hands the finished file at path to the rule's egress (or keeps it
// in place) and returns the EgressPath output.
func (r *Run) Store(ctx context.Context, a Artifact) (string, error) {
	a.PID, a.Rule, a.Action, a.Time = r.Process.PID, r.Rule, r.Action.Label(), r.Now
	if a.Name == "" {
		a.Name = baseName(a.Path)
	}
	r.artifact = &a
	return r.store(ctx, a)
}

// Outputs are an action's results by name (EgressPath, ExitCode, Value).
type Outputs map[string]string

// Action is one configured, runnable action.
type Action interface {
	// Run does the action against r.Process and returns its outputs.
	// It must end soon after ctx ends (a cancelled operation).
	Run(ctx context.Context, r *Run) (Outputs, error)
}

// ActionType is a kind of action rules can name in Type.
type ActionType struct {
	Name string
	// Outputs are the names of its outputs, for $(Actions.X.OUTPUT)
	// references checked at load.
	Outputs []string
	// Artifact says that it makes an artifact: it takes an Egress
	// setting and runs as an operation.
	Artifact bool
	// New reads the action's settings (reporting each wrong setting on
	// s) and returns the action; an error is reported on the Settings
	// section as a whole.
	New func(s *Settings) (Action, error)
}

// Registry holds the action types by name (compared without regard to
// case). It is not safe to change while configurations are loaded from
// it.
type Registry struct {
	types map[string]*ActionType
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]*ActionType{}} }

// Register adds or replaces an action type.
func (r *Registry) Register(t ActionType) {
	t.Outputs = slices.Clone(t.Outputs)
	r.types[strings.ToLower(t.Name)] = &t
}

// Lookup returns the type called name, or nil.
func (r *Registry) Lookup(name string) *ActionType { return r.types[strings.ToLower(name)] }

// Names lists the registered types, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.types))
	for _, t := range r.types {
		out = append(out, t.Name)
	}
	sort.Strings(out)
	return out
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// discard is a logger that writes nothing.
func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
