package rules

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// OperationStatus is where an operation stands.
type OperationStatus string

// The statuses of an operation, as dotnet-monitor's /operations names them.
const (
	OperationRunning   OperationStatus = "Running"
	OperationSucceeded OperationStatus = "Succeeded"
	OperationFailed    OperationStatus = "Failed"
	OperationCancelled OperationStatus = "Cancelled"
)

// Operation is one run of an artifact-producing action, as /operations
// serves it.
type Operation struct {
	ID     string          `json:"operationId"`
	PID    int             `json:"pid"`
	Rule   string          `json:"rule"`
	Action string          `json:"action"`
	Type   string          `json:"type"`
	Status OperationStatus `json:"status"`
	// Created and Ended are when the action started and ended.
	Created time.Time  `json:"createdDateTime"`
	Ended   *time.Time `json:"endedDateTime,omitempty"`
	// Artifact is the local file the action made; EgressProvider where
	// it was sent ("" kept it in place) and EgressPath where it now is.
	Artifact       string `json:"artifactPath,omitempty"`
	EgressProvider string `json:"egressProviderName,omitempty"`
	EgressPath     string `json:"egressPath,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
}

// The errors of Engine.Cancel.
var (
	ErrNoOperation   = errors.New("rules: no such operation")
	ErrOperationDone = errors.New("rules: the operation has already ended")
)

type opRecord struct {
	Operation
	mu     *sync.Mutex
	cancel func()
}

func (o *opRecord) setArtifact(path, provider string) {
	o.mu.Lock()
	o.Artifact, o.EgressProvider = path, provider
	o.mu.Unlock()
}

func (o *opRecord) finish(t time.Time, egressPath string, err error, cancelled bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.Ended = &t
	o.EgressPath = egressPath
	switch {
	case err == nil:
		o.Status = OperationSucceeded
	case cancelled:
		o.Status, o.Error = OperationCancelled, err.Error()
	default:
		o.Status, o.Error = OperationFailed, err.Error()
	}
	o.cancel = nil
}

// opTable keeps the operations, the finished ones up to max.
type opTable struct {
	mu   sync.Mutex
	list []*opRecord
	max  int
}

func newOpID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (t *opTable) start(pid int, rule string, spec *ActionSpec, now time.Time, cancel func()) *opRecord {
	o := &opRecord{Operation: Operation{ID: newOpID(), PID: pid, Rule: rule, Action: spec.Label(), Type: spec.Type,
		Status: OperationRunning, Created: now}, mu: &t.mu, cancel: cancel}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.list = append(t.list, o)
	// Drop the oldest finished operations beyond max.
	if over := len(t.list) - t.max; over > 0 {
		kept := t.list[:0]
		for _, x := range t.list {
			if over > 0 && x.Status != OperationRunning {
				over--
				continue
			}
			kept = append(kept, x)
		}
		clear(t.list[len(kept):])
		t.list = kept
	}
	return o
}

// Operations returns every operation kept, oldest first.
func (e *Engine) Operations() []Operation {
	e.ops.mu.Lock()
	defer e.ops.mu.Unlock()
	out := make([]Operation, len(e.ops.list))
	for i, o := range e.ops.list {
		out[i] = o.Operation
	}
	return out
}

// Operation returns the operation with the id.
func (e *Engine) Operation(id string) (Operation, bool) {
	e.ops.mu.Lock()
	defer e.ops.mu.Unlock()
	for _, o := range e.ops.list {
		if o.ID == id {
			return o.Operation, true
		}
	}
	return Operation{}, false
}

// Cancel cancels a running operation: its action's context ends, and the
// rest of its rule's actions are skipped.
func (e *Engine) Cancel(id string) error {
	e.ops.mu.Lock()
	var fn func()
	found := false
	for _, o := range e.ops.list {
		if o.ID == id {
			found, fn = true, o.cancel
		}
	}
	e.ops.mu.Unlock()
	switch {
	case !found:
		return ErrNoOperation
	case fn == nil:
		return ErrOperationDone
	}
	fn()
	return nil
}
